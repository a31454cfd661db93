"""--output_format: the same job in TFRecord, ArrayRecord and Parquet holds the same records in
the same shards and order, read back with the real libraries (array-record, Grain, pyarrow,
Hugging Face datasets); the readers without TensorFlow (`pipeline.tools.batches`) yield the
batches tf.data yields on the TFRecord output; switching formats needs --overwrite.
"""

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from datagen_helpers import assert_same_batches
from pipeline import datagen
from pipeline.tools import batches, inspect, reader
from repo_paths import REPO_ROOT as ROOT
from transforms.shards.record_formats import (FORMATS, PARQUET_ROW_GROUP_ROWS, TEXT_FORMATS,
                                             format_of)

pytestmark = pytest.mark.slow

CORPUS = os.path.join(ROOT, "tests", "data", "enzh-mlqe-pe")
FLAGS = ["--problem", "p", "--vocab_size", "2000", "--num_train_shards", "4",
         "--num_dev_shards", "2", "--runner", "FnApiRunner"]
SUFFIX = {name: fmt.suffix for name, fmt in FORMATS.items()}
# the formats of ids (the text formats hold the text: tests/end_to_end/test_text_output.py)
ID_FORMATS = [fmt for fmt in FORMATS if fmt not in TEXT_FORMATS]


def _run(out, fmt, *extra, source="train"):
    argv = ["--train_source", os.path.join(CORPUS, source + ".en"),
            "--train_target", os.path.join(CORPUS, source + ".zh"),
            "--dev_source", os.path.join(CORPUS, "dev.en"),
            "--dev_target", os.path.join(CORPUS, "dev.zh"),
            "--output_dir", str(out), "--output_format", fmt] + FLAGS + list(extra)
    return datagen.main(argv)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """{format: output directory} of one subword job per format."""
    root = tmp_path_factory.mktemp("formats")
    done = {}
    for fmt in ID_FORMATS:
        assert _run(root / fmt, fmt) == 0
        done[fmt] = str(root / fmt)
    return done


@pytest.fixture(scope="module")
def word_outputs(tmp_path_factory):
    """{format: output directory} of a word-vocabulary job (records for mode="nmt")."""
    root = tmp_path_factory.mktemp("word")
    done = {}
    for fmt in ID_FORMATS:
        assert _run(root / fmt, fmt, "--vocab_type", "word", source="dev") == 0
        done[fmt] = str(root / fmt)
    return done


def _shards(out):
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(out, "p-*-*-of-*")))


def _records(path):
    return list(format_of(path).read_shard(path))


def test_every_format_holds_the_tfrecord_records_shard_by_shard(outputs):
    names = _shards(outputs["tfrecord"])
    assert len(names) == 6
    for fmt, out in outputs.items():
        assert _shards(out) == [n + SUFFIX[fmt] for n in names]
        with open(os.path.join(out, "p.datagen_summary.json")) as f:
            summary = json.load(f)
        listed = sorted(s["name"] for split in summary["splits"].values()
                        for s in split["shards"])
        assert listed == _shards(out)
        for name in names:
            assert _records(os.path.join(out, name + SUFFIX[fmt])) == \
                _records(os.path.join(outputs["tfrecord"], name)), (fmt, name)


def test_array_record_is_what_grain_reads_and_each_record_a_tf_example(outputs):
    import grain
    import tensorflow as tf
    files = sorted(glob.glob(os.path.join(outputs["array_record"], "p-train-*")))
    source = grain.sources.ArrayRecordDataSource(files)
    expected = [r for p in sorted(glob.glob(os.path.join(outputs["tfrecord"], "p-train-*")))
                for r in tf.data.TFRecordDataset(p).as_numpy_iterator()]
    assert len(source) == len(expected)
    assert [source[i] for i in range(len(source))] == expected
    example = tf.train.Example.FromString(source[len(source) // 2])
    assert set(example.features.feature) == {"inputs", "targets"}


def test_parquet_columns_compression_row_groups_and_datasets_row_count(outputs):
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq
    files = sorted(glob.glob(os.path.join(outputs["parquet"], "p-train-*")))
    with open(os.path.join(outputs["parquet"], "p.datagen_summary.json")) as f:
        written = json.load(f)["splits"]["train"]["pairs_written"]
    for path in files:
        meta = pq.ParquetFile(path)
        assert meta.schema_arrow == pa.schema([("inputs", pa.list_(pa.int32())),
                                               ("targets", pa.list_(pa.int32()))])
        for i in range(meta.metadata.num_row_groups):
            group = meta.metadata.row_group(i)
            assert group.num_rows <= PARQUET_ROW_GROUP_ROWS
            assert group.column(0).compression == "ZSTD"
    loaded = datasets.load_dataset("parquet", data_files=files, split="train",
                                   cache_dir=os.path.join(outputs["parquet"], "..", "hf"))
    assert loaded.num_rows == written
    first = reader.make_dataset(os.path.join(outputs["tfrecord"], "p-train-*"), batch_size=1,
                                mode="t2t", shuffle=False, drop_long_sequences=False)
    batch = next(iter(first.as_numpy_iterator()))
    assert loaded[0]["inputs"] == list(batch["inputs"][0])


def test_inspect_shows_the_same_records_in_every_format(outputs, capsys):
    shown = {}
    for fmt, out in outputs.items():
        assert inspect.main([out, "--num_records", "5", "--seed", "3", "--json"]) == 0
        shown[fmt] = json.loads(capsys.readouterr().out)["records"]
    assert shown["array_record"] == [dict(r, shard=r["shard"] + ".array_record")
                                     for r in shown["tfrecord"]]
    assert shown["parquet"] == [dict(r, shard=r["shard"] + ".parquet")
                                for r in shown["tfrecord"]]


def test_switching_formats_needs_overwrite_and_leaves_no_shard_of_the_old_one(
        outputs, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    shutil.copytree(outputs["tfrecord"], out)
    capsys.readouterr()
    assert _run(out, "parquet") == 2
    err = capsys.readouterr().err
    assert "--output_format tfrecord -> parquet" in err, err  # the real old value
    assert _shards(str(out)) == _shards(outputs["tfrecord"])  # nothing replaced
    # what a worker killed while it wrote a Parquet shard for an object store left (issue
    # 42, item 11): the run removes it
    import tempfile
    from transforms.shards.format_base import SCRATCH_PREFIX
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    orphan = tmp_path / "tmp" / ("%s%s-x" % (SCRATCH_PREFIX, gone.stdout.strip()))
    orphan.mkdir(parents=True)
    (orphan / "shard.parquet").write_bytes(b"PAR1")
    assert _run(out, "parquet", "--overwrite") == 0
    assert os.listdir(tmp_path / "tmp") == []
    assert _shards(str(out)) == _shards(outputs["parquet"])
    for name in _shards(str(out)):
        with open(os.path.join(out, name), "rb") as a, \
                open(os.path.join(outputs["parquet"], name), "rb") as b:
            assert a.read() == b.read(), name
    capsys.readouterr()
    assert _run(out, "parquet") == 0  # a rerun in the same format: nothing to do
    assert "nothing to do" in capsys.readouterr().err


T2T_CASES = [dict(batch_size=256), dict(batch_size=64, max_length=40, min_length=3),
             dict(batch_size=128, drop_long_sequences=False, min_length_bucket=4,
                  length_bucket_step=1.5)]
NMT_CASES = [dict(batch_size=16), dict(batch_size=8, src_max_len=10, tgt_max_len=7,
                                       num_buckets=3), dict(batch_size=32, num_buckets=4)]


@pytest.mark.parametrize("mode,fixture,options",
                         [("t2t", "outputs", o) for o in T2T_CASES]
                         + [("nmt", "word_outputs", o) for o in NMT_CASES])
def test_batches_of_grain_and_pyarrow_equal_tf_data(request, mode, fixture, options):
    """T2T's batching (subword outputs) and tensorflow/nmt's (word outputs)."""
    written = request.getfixturevalue(fixture)
    expected = list(reader.make_dataset(os.path.join(written["tfrecord"], "p-train-*"),
                                        mode=mode, shuffle=False, **options)
                    .as_numpy_iterator())
    for read, fmt in ((batches.grain_batches, "array_record"),
                      (batches.parquet_batches, "parquet")):
        assert_same_batches(expected, read(written[fmt], mode=mode, shuffle=False, **options))


def test_datasets_batches_equal_pyarrow_and_shuffled_epochs_hold_every_pair(
        word_outputs, tmp_path):
    import datasets
    files = batches.shard_files(word_outputs["parquet"])
    loaded = datasets.load_dataset("parquet", data_files=files, split="train",
                                   cache_dir=str(tmp_path / "hf"))
    assert_same_batches(list(batches.parquet_batches(files, 16, shuffle=False)),
                         batches.dataset_batches(loaded, 16))

    def pairs(batch_iter):
        return sorted(tuple(row[:n]) for b in batch_iter
                      for row, n in zip(b["source"], b["source_sequence_length"]))
    in_order = pairs(batches.parquet_batches(files, 16, shuffle=False))
    grain_epochs = list(batches.grain_batches(word_outputs["array_record"], 16, seed=5,
                                              num_epochs=2))
    half = len(grain_epochs) // 2
    assert pairs(grain_epochs[:half]) == pairs(grain_epochs[half:]) == in_order
    assert pairs(batches.parquet_batches(files, 16, seed=5, shuffle_buffer_size=50)) \
        == in_order


def test_readers_refuse_another_format_and_an_incomplete_output(outputs, tmp_path):
    with pytest.raises(ValueError, match="parquet, not array_record"):
        list(batches.grain_batches(outputs["parquet"], 64, mode="t2t"))
    with pytest.raises(ValueError, match="make_dataset reads TFRecord"):
        reader.make_dataset(os.path.join(outputs["parquet"], "p-train-*"), 64, mode="t2t")
    out = tmp_path / "out"
    shutil.copytree(outputs["parquet"], out)
    os.remove(out / "p.DATAGEN_COMPLETE")
    with pytest.raises(reader.IncompleteOutputError):
        list(batches.parquet_batches(str(out / "p-train-*"), 64, mode="t2t"))


def test_the_readers_import_no_tensorflow():
    code = ("import sys; import pipeline.tools.batches, grain, pyarrow.parquet, datasets; "
            "print('tensorflow' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("example, fmt", [("read_array_record_grain.py", "array_record"),
                                          ("read_parquet_torch.py", "parquet")])
def test_the_examples_iterate_every_pair(outputs, example, fmt, tmp_path):
    with open(os.path.join(outputs[fmt], "p.datagen_summary.json")) as f:
        written = json.load(f)["splits"]["train"]["pairs_written"]
    env = dict(os.environ, PYTHONPATH=ROOT, HF_DATASETS_CACHE=str(tmp_path / "hf"))
    done = subprocess.run([sys.executable, os.path.join(ROOT, "examples", example),
                           outputs[fmt]], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert ("%d records" % written if fmt == "array_record" else "%d rows" % written) \
        in done.stdout
