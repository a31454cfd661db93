"""pipeline/driver/reruns: a rerun over an output marked complete is a noop when it is this
run's with every file there, refused when made from other inputs or flags, and redone (with
the reason in the log) when files it lists are gone or its summary cannot be read."""

import json
import logging

import pytest

from driver_fixtures import config, layout, write
from pipeline.driver import fingerprint, reruns
from pipeline.runtime.errors import DatagenError


@pytest.fixture
def run(tmp_path):
    """(layout, the current output fingerprint) of a run into tmp_path/out."""
    cfg = config(tmp_path)
    return layout(cfg), fingerprint.output_fingerprint(cfg.flags())


def other_flags(current, **flags):
    """The fingerprint `current` would be with `flags` recorded instead."""
    return dict(current, flags=dict(current["flags"], **flags))


def complete(layout, summary):
    """A complete output: `summary` as its summary, then the marker (as commit writes them)."""
    write(layout.summary_path, json.dumps(summary))
    write(layout.complete_path)


def test_no_marker_or_overwrite_means_no_complete_output(run):
    layout, current = run
    assert reruns.marked_complete(layout, overwrite=False) is None
    complete(layout, {"status": "complete", "fingerprint": current})
    assert reruns.marked_complete(layout, overwrite=True) is None


def test_a_complete_output_with_every_file_there(run):
    layout, current = run
    vocab = write(layout.path("vocab.p.8192.subwords"), "'a_'\n")
    rejects = write(layout.rejects_path("train"), "")
    summary = {"status": "complete", "fingerprint": current,
               "vocab": {"shared": {"path": vocab, "size": 1}},
               "splits": {"train": {"rejects_file": rejects}}}
    complete(layout, summary)
    assert reruns.marked_complete(layout, overwrite=False) == (summary, [])


def test_files_the_summary_lists_that_are_gone_are_named(run):
    layout, current = run
    summary = {"status": "complete", "fingerprint": current,
               "vocab": {"shared": {"path": layout.path("vocab.p.8192.subwords"), "size": 1}},
               "splits": {"train": {"rejects_file": "rejects/p-train.jsonl",
                                    "shards": [{"name": "p-train-00000-of-00001",
                                                "records": 3}]}}}
    complete(layout, summary)
    found, missing = reruns.marked_complete(layout, overwrite=False)
    assert found == summary
    assert sorted(missing) == [
        ("p-train-00000-of-00001", "shard missing (the summary lists it)"),
        ("p-train.jsonl", "missing (the summary lists %s)" % layout.path("rejects",
                                                                        "p-train.jsonl")),
        ("vocab.p.8192.subwords", "missing (the summary lists %s)"
         % layout.path("vocab.p.8192.subwords"))]


def test_an_output_moved_as_a_whole_is_complete_where_it_lands(run, tmp_path, caplog):
    """The summary keeps the paths of the run that wrote it: its files are looked for under
    the output directory where it is now, and the noop says where it was written."""
    layout, current = run
    old = str(tmp_path / "written-here")
    write(layout.path("vocab.p.8192.subwords"), "'a_'\n")
    write(layout.rejects_path("train"), "")
    write(layout.path("p-train-00000-of-00001"), "abc")
    summary = {"status": "complete", "fingerprint": current, "output_dir": old,
               "vocab": {"shared": {"path": old + "/vocab.p.8192.subwords", "size": 1}},
               "splits": {"train": {
                   "rejects_file": old + layout.rejects_path("train")[len(layout.output_dir):],
                   "shards": [{"name": "p-train-00000-of-00001", "records": 1,
                               "bytes": 3}]}}}
    complete(layout, summary)
    found, missing = reruns.marked_complete(layout, overwrite=False)
    assert (found, missing) == (summary, [])
    with caplog.at_level(logging.INFO, logger="datagen"):
        noop = reruns.nothing_to_do(layout, found, "")
    assert caplog.messages == ["%s is complete (%s exists): nothing to do (written in %s: "
                               "moved or copied here as a whole)" % (
                                   layout.output_dir, layout.complete_path, old)]
    assert (noop["output_dir"], noop["moved_from"]) == (layout.output_dir, old)
    assert noop["vocab"]["shared"]["path"] == layout.path("vocab.p.8192.subwords")
    assert noop["splits"]["train"]["rejects_file"] == layout.rejects_path("train")
    import os
    os.remove(layout.path("vocab.p.8192.subwords"))
    assert reruns.marked_complete(layout, overwrite=False)[1] == [
        ("vocab.p.8192.subwords", "missing (the summary lists %s)"
         % layout.path("vocab.p.8192.subwords"))]


@pytest.mark.parametrize("text", ["{not json", "[1, 2]"])
def test_an_unreadable_summary_under_a_marker(run, text):
    layout, _ = run
    write(layout.summary_path, text)
    write(layout.complete_path)
    assert reruns.marked_complete(layout, overwrite=False) == (None, None)
    assert reruns.describe_missing(layout, None, None) == (
        "its summary %s cannot be read" % layout.summary_path)


def test_the_same_fingerprint_is_accepted_and_noted_as_a_noop(run, caplog):
    layout, current = run
    summary = {"status": "complete", "fingerprint": json.loads(json.dumps(current))}
    reruns.check_same_fingerprint(layout, summary, current)
    with caplog.at_level(logging.INFO, logger="datagen"):
        assert reruns.nothing_to_do(layout, summary, "; pass --overwrite to redo it") is summary
    assert summary["noop"] is True
    assert caplog.messages == ["%s is complete (%s exists): nothing to do; pass --overwrite "
                               "to redo it" % (layout.output_dir, layout.complete_path)]


def test_another_runs_output_is_refused_naming_every_change(run):
    layout, current = run
    other = other_flags(current, seed=4, vocab_size=300)
    with pytest.raises(DatagenError) as raised:
        reruns.check_same_fingerprint(layout, {"fingerprint": other}, current)
    assert str(raised.value) == (
        "%s holds a complete output of other inputs/flags: --seed 4 -> 0; --vocab_size "
        "300 -> 8192; pass --overwrite to replace it" % layout.output_dir)


def test_an_older_output_without_a_fingerprint_is_a_warning(run, caplog):
    layout, current = run
    with caplog.at_level(logging.WARNING, logger="datagen"):
        reruns.check_same_fingerprint(layout, {"status": "complete"}, current)
    assert caplog.messages == [
        "%s records no fingerprint (written by an older version): cannot tell whether its "
        "inputs or flags changed" % layout.summary_path]


@pytest.mark.parametrize("missing, expected", [
    ([("a", "missing")], "a missing"),
    ([("a", "missing"), ("b", "3 bytes, the summary records 4")],
     "a missing; b 3 bytes, the summary records 4"),
    ([(n, "missing") for n in "abcde"], "a missing; b missing; c missing; and 2 more"),
])
def test_describe_missing(run, missing, expected):
    assert reruns.describe_missing(run[0], {}, missing) == expected
