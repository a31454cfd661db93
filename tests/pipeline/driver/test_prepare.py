"""pipeline/driver/prepare: what the prepare stage scans or converts, when it rides along the
first vocab pass, and how its facts are checked: bad input stops the job with one line
listing every problem, before anything is written (unless the flags say to reject)."""

import json
import logging

import pytest

from driver_fixtures import config, corpus, facts, layout, pass_runner, prepare_step, write
from pipeline.driver.datasets import plan_datasets
from pipeline.driver.prepare import rides_along
from pipeline.runtime.errors import DatagenError


def setup(tmp_path, *flags, dev=False):
    """(step, {split: [Dataset]}, layout) of a run over a 3-line corpus (and a dev pair)."""
    if dev:
        d = corpus(tmp_path, name="dev")
        flags = flags + ("--dev_source", d[0], "--dev_target", d[1])
    cfg = config(tmp_path, *flags, train=corpus(tmp_path))
    out = layout(cfg)
    planned = {"train": plan_datasets(cfg, "train")}
    if dev:
        planned["dev"] = plan_datasets(cfg, "dev")
    return prepare_step(cfg, out), planned, out


def result(out, files=(), materialized=()):
    """The prepare stage's result file, as its pass writes it."""
    write(out.work("prepare.json"), json.dumps({"files": [list(f) for f in files],
                                                 "materialized": list(materialized)}))


def test_it_rides_along_only_when_everything_is_read_in_place_and_something_is_learnt(
        tmp_path):
    _, planned, _ = setup(tmp_path)
    assert rides_along(planned, {"shared": planned["train"]})
    assert not rides_along(planned, {})
    tsv = write(tmp_path / "in" / "x.tsv", "a\tb\n")
    _, with_tsv, _ = setup(tmp_path, "--train_tsv", tsv)
    assert not rides_along(with_tsv, {"shared": with_tsv["train"]})


def test_the_label_says_how_many_files_are_scanned_and_datasets_converted(tmp_path):
    tsv = write(tmp_path / "in" / "x.tsv", "a\tb\n")
    step, planned, _ = setup(tmp_path, "--train_tsv", tsv, dev=True)
    assert step.transform(planned)[1] == "scan 4 files, convert 1 datasets"
    assert step.riding(planned).label == "scan 4 files, convert 1 datasets"
    step, planned, _ = setup(tmp_path)
    assert step.build(planned)[0] == "prepare: scan 2 files"


def test_a_file_named_by_two_datasets_is_scanned_once(tmp_path):
    source, target = corpus(tmp_path)
    step, planned, _ = setup(tmp_path, "--dev_source", source, "--dev_target", target)
    planned["dev"] = plan_datasets(config(tmp_path, "--dev_source", source, "--dev_target",
                                          target, train=(source, target)), "dev")
    assert step.transform(planned)[1] == "scan 2 files"


def test_aligned_files_become_prepared_datasets(tmp_path):
    step, planned, out = setup(tmp_path, dev=True)
    every = [ds for split in ("dev", "train") for ds in planned[split]]
    result(out, files=[(p, facts(3, 24)) for ds in every for p in (ds.source, ds.target)])
    run_pass = pass_runner()
    ready = step.run(run_pass, planned)  # the real prepare pass built, then read back
    assert run_pass.count == 1
    assert sorted(ready) == ["dev", "train"]
    train = ready["train"][0]
    assert (train.ds, train.source_lines, train.target_lines, train.units) == (
        planned["train"][0].spec(), planned["train"][0].source, planned["train"][0].target, 3)
    assert train.rejects_path is None and train.dropped is None


def test_misaligned_files_stop_the_job_unless_rejected(tmp_path):
    step, planned, out = setup(tmp_path)
    ds = planned["train"][0]
    result(out, files=[(ds.source, facts(3, 24)), (ds.target, facts(2, 16))])
    with pytest.raises(DatagenError) as raised:
        step.read_back(planned)
    assert str(raised.value) == (
        "bad input, nothing written: train: line counts differ: %s has 3 lines, %s has "
        "2 lines" % (ds.source, ds.target))
    step, planned, out = setup(tmp_path, "--on_misaligned", "reject")
    result(out, files=[(ds.source, facts(3, 24)), (ds.target, facts(2, 16))])
    assert step.read_back(planned)["train"][0].units == 3


def test_invalid_utf8_stops_the_job_naming_file_and_line_unless_replaced(tmp_path):
    step, planned, out = setup(tmp_path)
    ds = planned["train"][0]
    bad = dict(facts(3, 24), first_invalid_utf8_line=2)
    result(out, files=[(ds.source, facts(3, 24)), (ds.target, bad)])
    with pytest.raises(DatagenError) as raised:
        step.read_back(planned)
    assert str(raised.value) == ("bad input, nothing written: %s:2: invalid UTF-8 "
                                 "(--on_invalid_utf8 reject|replace to go on)" % ds.target)
    step, planned, out = setup(tmp_path, "--on_invalid_utf8", "replace")
    result(out, files=[(ds.source, facts(3, 24)), (ds.target, bad)])
    assert len(step.read_back(planned)["train"]) == 1


def test_every_problem_is_listed_in_the_one_line(tmp_path):
    tsv = write(tmp_path / "in" / "x.tsv", "a\tb\n")
    step, planned, out = setup(tmp_path, "--train_tsv", tsv)
    ds = planned["train"][0]
    result(out, files=[(ds.source, {"error": "%s: cannot be read (gone)" % ds.source}),
                       (ds.target, facts(3, 24))],
           materialized=[{"split": "train", "index": 1, "error": "x.tsv:1: 1 column"}])
    with pytest.raises(DatagenError) as raised:
        step.read_back(planned)
    assert str(raised.value) == ("bad input, nothing written: %s: cannot be read (gone); "
                                 "x.tsv:1: 1 column" % ds.source)


def test_a_converted_dataset_is_read_from_its_line_files(tmp_path, caplog):
    tsv = write(tmp_path / "in" / "x.tsv", "a\tb\n")
    step, planned, out = setup(tmp_path, "--train_tsv", tsv)
    ds = planned["train"][0]
    source_facts = dict(facts(4, 30), warnings=["x.tsv: a warning"])
    result(out, files=[(ds.source, facts(3, 24)), (ds.target, facts(3, 24))],
           materialized=[{"split": "train", "index": 1, "units": 5, "source_path": "m.src",
                          "target_path": "m.tgt", "rejects_path": "m.rejects.jsonl",
                          "facts": {"source": source_facts, "target": facts(4, 30)}}])
    with caplog.at_level(logging.WARNING, logger="datagen"):
        ready = step.read_back(planned)["train"]
    converted = ready[1]
    assert (converted.source_lines, converted.target_lines, converted.units,
            converted.rejects_path) == ("m.src", "m.tgt", 5, "m.rejects.jsonl")
    assert caplog.messages == ["x.tsv: a warning"]


def test_a_files_warnings_are_logged_once(tmp_path, caplog):
    source, target = corpus(tmp_path)
    step, planned, out = setup(tmp_path, "--dev_source", source, "--dev_target", target)
    planned["dev"] = plan_datasets(config(tmp_path, "--dev_source", source, "--dev_target",
                                          target, train=(source, target)), "dev")
    result(out, files=[(source, dict(facts(3, 24), warnings=["a BOM"])),
                       (target, facts(3, 24))])
    with caplog.at_level(logging.WARNING, logger="datagen"):
        step.read_back(planned)
    assert caplog.messages == ["a BOM"]


def test_the_scan_has_range_stages_only_when_a_file_may_be_over_a_range(tmp_path):
    """Small local files: the pass has no stages of ranges (their fixed cost is a small
    job's time); a local file over `RANGE_BYTES` (sparse here), or a store's file, whose
    size the driver does not ask: it has."""
    import apache_beam as beam
    from driver_fixtures import applied
    from transforms.prepare.file_scan import RANGE_BYTES

    def labels(step, planned):
        p = beam.Pipeline()
        step.build(planned)[1](p)
        return {label.rsplit("/", 1)[-1] for label in applied(p)}

    step, planned, _ = setup(tmp_path)
    assert "Scan" in labels(step, planned) and "Ranges" not in labels(step, planned)
    step, planned, _ = setup(tmp_path / "big")
    with open(planned["train"][0].source, "r+b") as f:
        f.truncate(RANGE_BYTES + 1)
    assert "Ranges" in labels(step, planned)
    from pipeline.driver.prepare import _maybe_over
    assert _maybe_over("gs://b/x.en", RANGE_BYTES)  # not asked (offline here)
