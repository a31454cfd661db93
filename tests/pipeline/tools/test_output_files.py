"""pipeline/tools/output_files.py and the readers that take an output directory: a directory
shared by two problems (README, "Outputs") is read one problem at a time, named by the
readers' `problem=` argument, and the error for a directory of several says so (issue 42,
item 10: it said "pass --problem", a flag no reader has). Local outputs are found without
Beam (tests/end_to_end/test_console_noise.py checks that in a fresh interpreter).

The directory here is written as the job leaves it: per problem the shards (through the
record formats' own writers), a summary listing each shard's size, then the marker.
"""

import json
import os

import numpy as np
import pytest

from pipeline.tools import batches, output_files, reader
from transforms.formats.example_proto import Int64FeaturesWriter
from transforms.shards.record_formats import ArrayRecordFormat, ParquetFormat

PAIRS = {"a": [([5, 6, 1], [7, 1])] * 3, "b": [([9, 1], [8, 8, 8, 1])] * 4}


def _output(directory, problem, fmt, pairs, shards=2):
    """One complete output of `problem` in `fmt` into `directory`."""
    examples = Int64FeaturesWriter()
    records = [examples.serialize({"inputs": i, "targets": t}) for i, t in pairs]
    listed = []
    for shard in range(shards):
        name = "%s-train-%05d-of-%05d%s" % (problem, shard, shards, fmt.suffix)
        count, size = fmt.write_shard(os.path.join(directory, name), records[shard::shards])
        listed.append({"name": name, "records": count, "bytes": size})
    summary = {"problem": problem, "status": "complete", "output_dir": str(directory),
               "flags": {"vocab_type": "subword"},
               "splits": {"train": {"shards": listed}}}
    with open(os.path.join(directory, "%s.datagen_summary.json" % problem), "w") as f:
        json.dump(summary, f)
    with open(os.path.join(directory, "%s.DATAGEN_COMPLETE" % problem), "w") as f:
        f.write("2026-11-28T00:00:00+00:00\n")


@pytest.fixture(params=[ArrayRecordFormat(), ParquetFormat()], ids=lambda f: f.name)
def shared(request, tmp_path):
    """(directory holding problems a and b in one format, the format)."""
    for problem, pairs in PAIRS.items():
        _output(tmp_path, problem, request.param, pairs)
    return str(tmp_path), request.param


def _pairs(batch_iter):
    return sorted((tuple(int(x) for x in row[row > 0]), tuple(int(x) for x in t[t > 0]))
                  for b in batch_iter for row, t in zip(b["inputs"], b["targets"]))


def test_a_shared_directory_asks_for_the_readers_problem_argument(shared):
    directory, fmt = shared
    asked = "%s holds 2 problems (a, b): pass problem=<name>" % directory
    read = batches.grain_batches if fmt.name == "array_record" else batches.parquet_batches
    for call in (lambda: batches.shard_files(directory),
                 lambda: next(read(directory, 16, mode="t2t", shuffle=False)),
                 lambda: reader.complete_output_files(directory)):
        with pytest.raises(reader.IncompleteOutputError) as raised:
            call()
        assert str(raised.value) == asked


def test_each_problem_of_a_shared_directory_is_read_by_name(shared):
    directory, fmt = shared
    read = batches.grain_batches if fmt.name == "array_record" else batches.parquet_batches
    for problem, pairs in PAIRS.items():
        files = batches.shard_files(directory, problem=problem)
        assert [os.path.basename(f) for f in files] == [
            "%s-train-%05d-of-00002%s" % (problem, i, fmt.suffix) for i in range(2)]
        assert reader.complete_output_files(directory, problem=problem) == files
        expected = sorted((tuple(i), tuple(t)) for i, t in pairs)
        assert _pairs(read(directory, 64, mode="t2t", shuffle=False, problem=problem)) \
            == expected
        # a pattern over both problems' shards: only the named problem's
        pattern = os.path.join(directory, "*-train-*")
        assert batches.shard_files(pattern, problem=problem) == files
    with pytest.raises(reader.IncompleteOutputError, match="no complete output of problem c"):
        batches.shard_files(directory, problem="c")


def test_a_problem_whose_shard_is_not_as_recorded_is_refused_the_other_read(shared):
    directory, fmt = shared
    victim = os.path.join(directory, "a-train-00001-of-00002%s" % fmt.suffix)
    with open(victim, "ab") as f:
        f.write(b"x")
    with pytest.raises(reader.IncompleteOutputError, match="a-train-00001-of-00002.* bytes, "
                       "the summary records"):
        batches.shard_files(directory, problem="a")
    assert len(batches.shard_files(directory, problem="b")) == 2
    os.remove(os.path.join(directory, "b.DATAGEN_COMPLETE"))
    with pytest.raises(reader.IncompleteOutputError, match="not complete"):
        output_files.check_complete(batches.shard_files(
            os.path.join(directory, "b-train-*"), require_complete=False))


def test_output_files_finds_nothing_with_one_line_each(tmp_path):
    with pytest.raises(reader.IncompleteOutputError, match="no such directory"):
        output_files.find_problem(str(tmp_path / "nope"), None)
    (tmp_path / "p.datagen_summary.json").write_text(json.dumps({"problem": "p",
                                                                 "status": "failed"}))
    with pytest.raises(reader.IncompleteOutputError) as raised:
        output_files.find_problem(str(tmp_path), None)
    assert str(raised.value) == ("%s: no complete datagen output (no *.DATAGEN_COMPLETE "
                                 "file); summary says p: failed" % tmp_path)


def test_a_directory_with_glob_characters_is_taken_literally(tmp_path):
    literal = tmp_path / "out[1]"
    literal.mkdir()
    (tmp_path / "out1").mkdir()
    _output(tmp_path / "out1", "x", ParquetFormat(), PAIRS["a"])
    _output(literal, "a", ParquetFormat(), PAIRS["a"])
    assert output_files.find_problem(str(literal), None) == "a"
    assert np.concatenate([b["inputs"] for b in batches.parquet_batches(
        str(literal), 64, mode="t2t", shuffle=False)]).shape[0] == 3


@pytest.mark.parametrize("summary", ["missing", "cut short", "not a summary"])
def test_a_marker_without_a_readable_summary_is_an_incomplete_output(tmp_path, summary):
    """A copy cut short leaves the marker without its summary (`p.DATAGEN_COMPLETE` sorts
    before `p.datagen_summary.json`): every reader that takes the directory says the output
    is incomplete, in one line naming the summary, not FileNotFoundError or
    JSONDecodeError (issue 50, item 13)."""
    from pipeline.tools import mixture
    from reader_outputs import numbered_pairs, write_output
    write_output(tmp_path, "p", ParquetFormat(), {"en-de": numbered_pairs(10, 4),
                                                  "en-fr": numbered_pairs(50, 4)})
    path = tmp_path / "p.datagen_summary.json"
    if summary == "missing":
        path.unlink()
    else:
        path.write_bytes(path.read_bytes()[:40] if summary == "cut short" else b"[1, 2]")
    for call in (lambda: reader.complete_output_files(str(tmp_path)),
                 lambda: reader.complete_output_files(str(tmp_path), problem="p"),
                 lambda: batches.shard_files(str(tmp_path)),
                 lambda: next(batches.parquet_batches(str(tmp_path), 16, mode="t2t")),
                 lambda: mixture.Mixture(str(tmp_path)),
                 lambda: mixture.Mixture(str(tmp_path), require_complete=False)):
        with pytest.raises(reader.IncompleteOutputError) as raised:
            call()
        message = str(raised.value)
        assert "\n" not in message and str(path) in message, message
        assert "summary" in message and "incomplete" in message, message
