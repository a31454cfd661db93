"""--packed_length and --max_length through the whole job, on the bundled en-zh sample with
T2T's own vocab files:

- packing: every shard equals what Tensor2Tensor 1.15.7 itself writes for it
  (`Text2TextProblem._pack_fn` through `generator_utils.shuffle_dataset`, on the same
  records in the same order: the unpacked run's shard); every output format holds the same
  packed records; `inspect` and the readers read them;
- --max_length: the pairs dropped are exactly those the length report of the run without it
  predicted, listed as rejects, and the rest is the same records in the same order; dev stays
  whole.
"""

import glob
import json
import os
import shutil

import numpy as np
import pytest

from datagen_helpers import DATA_DIR, assert_same_batches, run_datagen, with_t2t_vocab
from pipeline.output.summary import format_summary
from pipeline.tools import batches, inspect, reader
from transforms.formats.example_proto import Int64FeaturesWriter
from transforms.formats.packed_examples import PACKED_FEATURES, unpack
from transforms.shards.record_formats import format_of

pytestmark = pytest.mark.slow

CORPUS = os.path.join(DATA_DIR, "enzh-mlqe-pe")
PACKED = 128
MAX_LENGTH = 64
FLAGS = ["--problem", "p", "--num_train_shards", 3, "--seed", 5,
         "--dev_source", os.path.join(CORPUS, "dev.en"),
         "--dev_target", os.path.join(CORPUS, "dev.zh")]
RUNS = {"plain": [], "packed": ["--packed_length", PACKED],
        "packed_parquet": ["--packed_length", PACKED, "--output_format", "parquet"],
        "packed_array_record": ["--packed_length", PACKED, "--output_format", "array_record"],
        "max_length": ["--max_length", MAX_LENGTH]}
EXAMPLES = Int64FeaturesWriter()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{name: (output dir, summary)}: one job per RUNS entry, T2T's vocab files given."""
    root = tmp_path_factory.mktemp("packing")
    done = {}
    for name, extra in RUNS.items():
        out = with_t2t_vocab(root / name, "p")
        summary = run_datagen(out, os.path.join(CORPUS, "train.en"),
                              os.path.join(CORPUS, "train.zh"), *(FLAGS + extra))
        done[name] = (str(out), summary)
    return done


def _shards(out):
    return sorted(glob.glob(os.path.join(out, "p-*-*-of-*")))


def _features(path):
    return [EXAMPLES.parse(r) for r in format_of(path).read_shard(path)]


def test_packed_shards_are_t2ts_pack_fn_on_the_same_shards(runs, tmp_path, monkeypatch):
    import t2t_reference as t2t
    plain, packed = runs["plain"][0], runs["packed"][0]
    unshuffled = []
    for path in _shards(plain):
        copy = str(tmp_path / (os.path.basename(path) + t2t.generator_utils.UNSHUFFLED_SUFFIX))
        shutil.copy(path, copy)
        unshuffled.append(copy)
    theirs = t2t.t2t_shuffle_and_pack(unshuffled, PACKED, monkeypatch)
    ours = _shards(packed)
    assert [os.path.basename(p) for p in theirs] == [os.path.basename(p) for p in ours]
    summary = runs["packed"][1]
    listed = {s["name"]: s for split in summary["splits"].values() for s in split["shards"]}
    for t2t_path, path in zip(theirs, ours):
        want = [EXAMPLES.parse(r) for r in t2t.generator_utils.read_records(t2t_path)]
        got = list(format_of(path).read_shard(path))
        assert [EXAMPLES.parse(r) for r in got] == want, path
        assert got == [EXAMPLES.serialize(f) for f in want]  # deterministic serialization
        entry = listed[os.path.basename(path)]
        assert entry["records"] == len(want)
        assert entry["pairs"] == sum(len(unpack(f)) for f in want)
    # a real packing: several pairs in most records, some alone because they are too long
    train = summary["splits"]["train"]
    assert train["pairs_written"] == train["packing"]["pairs"] == train["pairs_read"] == 3000
    assert train["packing"]["records"] < 1500 and train["packing"]["over_length"] > 0
    assert sum(s["records"] for s in train["shards"]) == train["packing"]["records"]
    table = format_summary(summary)
    assert "packed: 3000 pairs in %d records of %d ids" % (
        train["packing"]["records"], PACKED) in table


def test_every_format_holds_the_packed_records(runs):
    import pyarrow.parquet as pq
    names = [os.path.basename(p) for p in _shards(runs["packed"][0])]
    for fmt in ("packed_parquet", "packed_array_record"):
        paths = _shards(runs[fmt][0])
        assert [os.path.basename(p).split(".")[0] for p in paths] == names
        for path, name in zip(paths, names):
            assert list(format_of(path).read_shard(path)) == list(
                format_of(name).read_shard(os.path.join(runs["packed"][0], name))), path
    parquet = _shards(runs["packed_parquet"][0])[0]
    assert pq.ParquetFile(parquet).schema_arrow.names == list(PACKED_FEATURES)


def test_inspect_shows_each_packed_record_as_its_pairs(runs, capsys):
    out, summary = runs["packed"]
    assert inspect.main([out, "--num_records", "4", "--seed", "1", "--json",
                         "--verify_checksums"]) == 0
    report = json.loads(capsys.readouterr().out)
    lines = {}
    for lang in ("en", "zh"):
        with open(os.path.join(CORPUS, "train." + lang), encoding="utf-8") as f:
            lines[lang] = [line.strip() for line in f]
    corpus = set(zip(lines["en"], lines["zh"]))
    assert report["records_in_split"] == summary["splits"]["train"]["packing"]["records"]
    assert report["summary"]["splits"]["train"]["packing"]["pairs"] == 3000
    for record in report["records"]:
        assert record["pairs"] and all((p["source"], p["target"]) in corpus
                                       for p in record["pairs"])
        assert [p["inputs"] + p["targets"] for p in record["pairs"]] == [
            a + b for a, b in unpack(record)]
    assert inspect.main([out, "--num_records", "2"]) == 0
    text = capsys.readouterr().out
    assert "pairs packed" in text and "[2] source: " in text


def test_readers_batch_packed_records_with_their_features_and_t2ts_max_length(runs):
    out = runs["packed"][0]
    packing = runs["packed"][1]["splits"]["train"]["packing"]
    expected = list(reader.make_dataset(reader.complete_output_files(out), batch_size=512,
                                        mode="t2t", shuffle=False).as_numpy_iterator())
    assert all(sorted(b) == sorted(PACKED_FEATURES) for b in expected)
    for batch in expected:
        for side in ("inputs", "targets"):
            nonzero = batch[side] != 0
            assert np.array_equal(batch[side + "_segmentation"] != 0, nonzero)
    # T2T's max_length of a packed problem is its packed_length: the records over it go
    assert sum(len(b["inputs"]) for b in expected) == \
        packing["records"] - packing["over_length"]
    assert_same_batches(expected, batches.grain_batches(
        runs["packed_array_record"][0], 512, mode="t2t", shuffle=False))
    assert_same_batches(expected, batches.parquet_batches(
        runs["packed_parquet"][0], 512, mode="t2t", shuffle=False))
    with pytest.raises(ValueError, match="packed"):
        reader.make_dataset(reader.complete_output_files(out), 16, mode="nmt")
    for read, fmt in ((batches.grain_batches, "packed_array_record"),
                      (batches.parquet_batches, "packed_parquet")):
        with pytest.raises(ValueError, match="packed"):
            next(read(runs[fmt][0], 16, mode="nmt"))


def _pair_length(features):
    return max(len(features["inputs"]), len(features["targets"]))


def test_max_length_drops_the_pairs_the_length_report_predicted(runs):
    plain_out, plain = runs["plain"]
    out, summary = runs["max_length"]
    predicted = next(d["dropped"] for d in plain["lengths"]["splits"]["train"]["drops"]
                     if d["max_length"] == MAX_LENGTH)
    train = summary["splits"]["train"]
    assert predicted > 0
    assert train["rejected_by_reason"] == {"over_max_length": predicted}
    assert "over_max_length: %d" % predicted in format_summary(summary)
    assert train["pairs_written"] == 3000 - predicted
    before = summary["lengths"]["splits"]["train before max_length"]
    assert before == plain["lengths"]["splits"]["train"]  # the same figures, the same drops
    assert all(d["dropped"] == 0 for d in summary["lengths"]["splits"]["train"]["drops"]
               if d["max_length"] == MAX_LENGTH)
    with open(os.path.join(out, "rejects", "p-train.jsonl"), encoding="utf-8") as f:
        rejects = [json.loads(line) for line in f]
    assert len(rejects) == predicted
    assert {r["reason"] for r in rejects} == {"over_max_length"}
    # the rest: the same records, in the same order, shard by shard; dev whole
    for path in _shards(plain_out):
        name = os.path.basename(path)
        kept = [r for r in format_of(path).read_shard(path)
                if "-dev-" in name or _pair_length(EXAMPLES.parse(r)) <= MAX_LENGTH]
        assert list(format_of(path).read_shard(os.path.join(out, name))) == kept, name
    assert summary["splits"]["dev"]["pairs_rejected"] == 0
    with open(os.path.join(out, "p.lengths.html"), encoding="utf-8") as f:
        page = f.read()
    assert "--max_length %d dropped %d train pairs" % (MAX_LENGTH, predicted) in page
