"""ArrayRecord and Parquet outputs on S3 (a real `moto_server`, tests/conftest.py): a job
killed with SIGKILL while its commit moves the shards, then rerun, leaves the bytes the same
job leaves on local disk; a rerun after that rewrites nothing; `inspect` and the readers
without TensorFlow read the output from the store.
"""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from object_store_servers import BUCKET
from pipeline import datagen
from pipeline.tools import batches, inspect, reader
from repo_paths import REPO_ROOT as ROOT

pytestmark = pytest.mark.slow

CORPUS = os.path.join(ROOT, "tests", "data", "enzh-mlqe-pe")
FLAGS = ["--problem", "p", "--vocab_size", "2000", "--num_train_shards", "4",
         "--num_dev_shards", "2", "--max_line_chars", "150", "--runner", "FnApiRunner"]
NOT_COMPARED = re.compile(r"(\.datagen_summary\.json|\.DATAGEN_COMPLETE|\.fingerprint\.json)$")


def _inputs(prefix):
    return ["--train_source", prefix + "train.en", "--train_target", prefix + "train.zh",
            "--dev_source", prefix + "dev.en", "--dev_target", prefix + "dev.zh"]


def _local_output(out, fmt):
    assert datagen.main(_inputs(CORPUS + "/") + ["--output_dir", str(out), "--output_format",
                                                 fmt] + FLAGS) == 0
    files = {}
    for base, _, names in os.walk(out):
        for name in names:
            with open(os.path.join(base, name), "rb") as f:
                files[os.path.relpath(os.path.join(base, name), out)] = f.read()
    return files


def _objects(client, prefix):
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {o["Key"][len(prefix):]: (client.get_object(Bucket=BUCKET, Key=o["Key"])["Body"]
                                     .read(), o["ETag"]) for o in listed}


def _start_job(out, server, endpoint, fmt):
    cmd = [sys.executable, "-m", "pipeline.datagen"] + _inputs("s3://%s/in/" % BUCKET) + [
        "--output_dir", out, "--output_format", fmt] + FLAGS + server.beam_flags(endpoint)
    return subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            text=True, start_new_session=True)


@pytest.mark.parametrize("fmt", ["array_record", "parquet"])
def test_kill_9_during_the_commit_then_a_rerun_gives_the_local_bytes_on_s3(
        s3, slow_s3, tmp_path, capsys, fmt):
    local = _local_output(tmp_path / "local", fmt)
    assert any(name.endswith("." + fmt) for name in local)
    out = "s3://%s/%s/out" % (BUCKET, fmt)
    prefix = fmt + "/out/"
    client = s3.client()
    proc = _start_job(out, s3, slow_s3.endpoint, fmt)  # each request delayed: the kill lands
    try:                                               # inside the commit's moves
        deadline = time.time() + 300
        while not client.list_objects_v2(Bucket=BUCKET, Prefix=prefix + "p-").get("Contents"):
            assert proc.poll() is None and time.time() < deadline
            time.sleep(0.005)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
    left = {o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix=prefix)["Contents"]}
    assert prefix + "p.DATAGEN_COMPLETE" not in left
    rerun = _start_job(out, s3, s3.endpoint, fmt)
    err = rerun.communicate(timeout=300)[1]
    assert rerun.returncode == 0, err[-2000:]
    assert "process %d on this host is gone" % proc.pid in err
    objects = _objects(client, prefix)
    assert sorted(objects) == sorted(local)
    for name, data in local.items():
        if NOT_COMPARED.search(name):
            continue
        got = objects[name][0]
        if name.startswith("rejects/"):
            got = re.sub(rb"s3://%s/in/" % BUCKET.encode(), CORPUS.encode() + b"/", got)
        assert got == data, name

    argv = _inputs("s3://%s/in/" % BUCKET) + ["--output_dir", out, "--output_format", fmt] \
        + FLAGS + s3.beam_flags()
    capsys.readouterr()
    assert datagen.main(argv) == 0  # a rerun: nothing to do, nothing rewritten
    assert "nothing to do" in capsys.readouterr().err
    assert {k: v[1] for k, v in _objects(client, prefix).items()} == \
        {k: v[1] for k, v in objects.items()}

    assert inspect.main([out, "--num_records", "2"] + s3.beam_flags()) == 0
    assert "p train: 2 of" in capsys.readouterr().out
    reader.file_system_options(s3.beam_flags())
    read = batches.grain_batches if fmt == "array_record" else batches.parquet_batches
    got = list(read(out, 10000, mode="t2t", split="dev", shuffle=False,
                    drop_long_sequences=False))
    expected = list(read(str(tmp_path / "local"), 10000, mode="t2t", split="dev",
                         shuffle=False, drop_long_sequences=False))
    assert len(got) == len(expected) > 0
    assert all((a["inputs"] == b["inputs"]).all() for a, b in zip(got, expected))
