"""--output_format fairseq and text.gz on an object store (issue 52): s3:// against a real S3
server (`moto_server`, the `s3` fixture of tests/conftest.py). The commit assembles the
fairseq data-bin from the shards on the store, and a text shard is two objects named with
the languages (`.en.gz`, `.zh.gz`); every object is the same job's file on local disk, byte
for byte; `inspect --verify_checksums` reads them on the store; a rerun in another format
removes them (the data-bin, both text objects), as on local disk.
"""

import json
import re

import pytest

from datagen_helpers import MLQE as CORPUS, output_files
from object_store_servers import BUCKET
from pipeline import datagen
from pipeline.tools import inspect

pytestmark = pytest.mark.slow

FLAGS = ["--problem", "p", "--vocab_size", "1000", "--num_train_shards", "2",
         "--max_line_chars", "150", "--runner", "FnApiRunner"]
# the summary and marker hold times and paths, the vocab fingerprints the input paths
NOT_COMPARED = re.compile(r"(\.datagen_summary\.json|\.DATAGEN_COMPLETE|\.fingerprint\.json)$")


def _argv(prefix, out, *extra):
    return ["--train_source", prefix + "train.en", "--train_target", prefix + "train.zh",
            "--dev_source", prefix + "dev.en", "--dev_target", prefix + "dev.zh",
            "--output_dir", out] + FLAGS + list(extra)


def _objects(client, prefix):
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {o["Key"][len(prefix):]: client.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()
            for o in listed}


@pytest.mark.parametrize("fmt,made", [
    ("fairseq", ["p.data-bin/train.en-zh.en.bin", "p.data-bin/valid.en-zh.zh.idx",
                 "p.data-bin/dict.zh.txt", "p-train-00001-of-00002.fairseq"]),
    ("text.gz", ["p-train-00000-of-00002.en.gz", "p-train-00001-of-00002.zh.gz",
                 "p-dev-00000-of-00001.en.gz", "p-dev-00000-of-00001.zh.gz"])])
def test_fairseq_and_text_on_s3_are_the_local_bytes_and_another_format_replaces_them(
        s3, tmp_path, capsys, fmt, made):
    assert datagen.main(_argv(CORPUS + "/", str(tmp_path / "local"), "--output_format",
                              fmt)) == 0
    local = output_files(tmp_path / "local")
    assert all(name in local for name in made)
    out = "s3://%s/%s/out" % (BUCKET, fmt)
    argv = _argv("s3://%s/in/" % BUCKET, out, *s3.beam_flags())
    assert datagen.main(argv + ["--output_format", fmt]) == 0
    client = s3.client()
    objects = _objects(client, "%s/out/" % fmt)
    assert sorted(objects) == sorted(local)
    for name, data in local.items():
        got = objects[name]
        if name.startswith("rejects/"):  # a reject names its input file
            got = got.replace(b"s3://%s/in/" % BUCKET.encode(), CORPUS.encode() + b"/")
        assert NOT_COMPARED.search(name) or got == data, name

    capsys.readouterr()
    assert inspect.main([out, "--num_records", "2", "--json", "--verify_checksums"]
                        + s3.beam_flags()) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["shard"] for r in report["records"]] == [
        "p-train-00000-of-00002" + (".fairseq" if fmt == "fairseq" else ".en.gz")] * 2

    assert datagen.main(argv + ["--overwrite"]) == 0  # tfrecord: the old files go
    left = sorted(_objects(client, "%s/out/" % fmt))
    assert not [name for name in left if name in made or name.startswith("p.data-bin/")]
    assert [n for n in left if n.startswith("p-")] == [
        "p-dev-00000-of-00001", "p-train-00000-of-00002", "p-train-00001-of-00002"]
