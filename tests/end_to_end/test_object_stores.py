"""The job, its lock and commit, `inspect` and the reader on object stores: s3:// against a
real S3 server (`moto_server`) and gs:// against a real GCS emulator (fake-gcs-server), both
started on 127.0.0.1 by the `s3`, `slow_s3` and `gcs` fixtures (tests/conftest.py,
tests/object_store_servers.py). The kill -9 and lost-lease tests go through a proxy that
delays every request, as a remote store does. The lock's own tests on the stores:
tests/pipeline/output/test_lock.py.

Every output, in each record format (TFRecord; ArrayRecord and Parquet, read back without
TensorFlow), is compared byte for byte with the same job's output on local disk.
"""

import json
import os
import re
import subprocess
import sys
import time

import pytest

from datagen_helpers import (MLQE as CORPUS, end_group, output_files, pass_started, start_job,
                             wait_for, wait_for_line)
from object_store_servers import BUCKET
from pipeline import datagen
from pipeline.tools import batches, inspect, reader
from repo_paths import REPO_ROOT as ROOT

pytestmark = pytest.mark.slow

FLAGS = ["--problem", "p", "--vocab_size", "2000", "--num_train_shards", "4",
         "--num_dev_shards", "2", "--max_line_chars", "150", "--runner", "FnApiRunner"]
# Hidden per-run or per-place files: the summary and marker hold times, the vocab
# fingerprints the input paths; every other object must be byte-identical.
NOT_COMPARED = re.compile(r"(\.datagen_summary\.json|\.DATAGEN_COMPLETE|\.fingerprint\.json)$")


def _inputs(prefix):
    return ["--train_source", prefix + "train.en", "--train_target", prefix + "train.zh",
            "--dev_source", prefix + "dev.en", "--dev_target", prefix + "dev.zh"]


def _local_files(out, *extra):
    """{relative path: bytes} of the job's output on local disk, run into `out`."""
    assert datagen.main(_inputs(CORPUS + "/") + ["--output_dir", str(out)] + FLAGS
                        + list(extra)) == 0
    return output_files(out)


@pytest.fixture(scope="module")
def local_output(tmp_path_factory):
    """{relative path: bytes} of the job's output (TFRecord) on local disk."""
    return _local_files(tmp_path_factory.mktemp("local") / "out")


def _objects(client, prefix):
    """{key relative to prefix: (bytes, ETag)} of every object under `prefix`."""
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {o["Key"][len(prefix):]: (client.get_object(Bucket=BUCKET, Key=o["Key"])["Body"]
                                     .read(), o["ETag"]) for o in listed}


def _keys(client, prefix):
    return {o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get(
        "Contents", [])}


def _assert_same_output(objects, local):
    """Same names (no stray object) and bytes; a rejects file names its input files, so
    there the store's input prefix stands for the local corpus directory."""
    assert sorted(objects) == sorted(local)
    for name, data in local.items():
        if NOT_COMPARED.search(name):
            continue
        got = objects[name]
        if name.startswith("rejects/"):
            got = re.sub(rb"(s3|gs)://%s/in/" % BUCKET.encode(), CORPUS.encode() + b"/", got)
        assert got == data, name


def test_job_inspect_and_reader_on_s3_match_local_disk_and_a_rerun_rewrites_nothing(
        s3, local_output, capsys):
    out = "s3://%s/run1/out" % BUCKET
    argv = _inputs("s3://%s/in/" % BUCKET) + ["--output_dir", out] + FLAGS + s3.beam_flags()
    assert datagen.main(argv) == 0
    client = s3.client()
    first = _objects(client, "run1/out/")
    _assert_same_output({k: v[0] for k, v in first.items()}, local_output)
    assert "rejects/p-train.jsonl" in first  # --max_line_chars 150 rejected some pairs
    summary = json.loads(first["p.datagen_summary.json"][0])
    assert summary["status"] == "complete" and summary["output_dir"] == out
    metrics = summary["metrics"]  # the job's Beam counters, as the runner reported them
    for split, books in summary["splits"].items():
        assert metrics["%s.pairs_read" % split] == books["pairs_read"]
        assert metrics["%s.records_written" % split] == books["pairs_written"]
        assert metrics["%s.bytes_written" % split] == sum(
            len(first[s["name"]][0]) for s in books["shards"])
        for reason, n in books["rejected_by_reason"].items():
            assert metrics["%s.rejected.%s" % (split, reason)] == n
    assert metrics["vocab.source.sampled_lines"] == 3000

    capsys.readouterr()
    assert datagen.main(argv) == 0  # a rerun: nothing to do, nothing rewritten
    assert "nothing to do" in capsys.readouterr().err
    assert {k: v[1] for k, v in _objects(client, "run1/out/").items()} == \
        {k: v[1] for k, v in first.items()}

    assert inspect.main([out, "--num_records", "2", "--json"] + s3.beam_flags()) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["records_in_split"] == summary["splits"]["train"]["pairs_written"]
    assert len(report["records"]) == 2 and report["records"][0]["source"]

    reader.file_system_options(s3.beam_flags())
    files = reader.complete_output_files(out, "dev")
    assert [f.rsplit("/", 1)[1] for f in files] == ["p-dev-00000-of-00002",
                                                    "p-dev-00001-of-00002"]
    batches = reader.make_dataset(out + "/p-dev-*", batch_size=10000, mode="t2t",
                                  shuffle=False, drop_long_sequences=False)
    rows = sum(len(b["inputs"]) for b in batches.as_numpy_iterator())
    assert rows == summary["splits"]["dev"]["pairs_written"]


def test_inspect_and_reader_refuse_an_output_without_its_marker(s3, capsys):
    out = "s3://%s/unmarked/out" % BUCKET
    client = s3.client()
    client.put_object(Bucket=BUCKET, Key="unmarked/out/p-train-00000-of-00001", Body=b"")
    assert inspect.main([out] + s3.beam_flags()) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "no complete datagen output" in err
    reader.file_system_options(s3.beam_flags())
    with pytest.raises(reader.IncompleteOutputError, match="not complete"):
        reader.make_dataset(out + "/p-train-*", batch_size=10, mode="t2t")


def test_empty_shards_are_0_byte_objects_on_s3(s3, tmp_path):
    """Beam's S3 writer cannot make a 0-byte object (MalformedXML): empty shards, and the
    write probe, go through the store's own client."""
    client = s3.client()
    for lang in ("en", "zh"):
        with open(os.path.join(CORPUS, "dev." + lang), "rb") as f:
            two = b"".join(f.readline() for _ in range(2))
        (tmp_path / ("two." + lang)).write_bytes(two)
        client.put_object(Bucket=BUCKET, Key="two/two." + lang, Body=two)
    flags = ["--problem", "p", "--vocab_size", "300", "--num_train_shards", "4",
             "--runner", "FnApiRunner"]
    local = tmp_path / "out"
    assert datagen.main(["--train_source", str(tmp_path / "two.en"), "--train_target",
                         str(tmp_path / "two.zh"), "--output_dir", str(local)] + flags) == 0
    out = "s3://%s/two/out" % BUCKET
    assert datagen.main(["--train_source", "s3://%s/two/two.en" % BUCKET, "--train_target",
                         "s3://%s/two/two.zh" % BUCKET, "--output_dir", out] + flags
                        + s3.beam_flags()) == 0
    objects = _objects(client, "two/out/")
    sizes = [len(objects["p-train-%05d-of-00004" % i][0]) for i in range(4)]
    assert sizes.count(0) == 2
    for i in range(4):
        name = "p-train-%05d-of-00004" % i
        assert objects[name][0] == (local / name).read_bytes()


def _start_job(out, server, endpoint, *extra):
    return start_job(_inputs("s3://%s/in/" % BUCKET) + ["--output_dir", out] + FLAGS
                     + server.beam_flags(endpoint) + list(extra))


def test_a_job_that_loses_its_s3_lease_stops_with_one_line_and_deletes_nothing(s3, slow_s3):
    out = "s3://%s/lost/out" % BUCKET
    proc = _start_job(out, s3, slow_s3.endpoint, "--lock_stale_seconds", "2")
    try:
        wait_for_line(proc, pass_started(1))
        client = s3.client()
        key = "lost/out/p.datagen.lock"
        intruder = {"run_id": "intruder", "host": "elsewhere", "pid": 1,
                    "heartbeat_at": time.time(), "heartbeat_iso": "now"}
        for _ in range(50):  # what a run taking over does: replace the version it read
            head = client.head_object(Bucket=BUCKET, Key=key)
            try:
                client.put_object(Bucket=BUCKET, Key=key, Body=json.dumps(intruder).encode(),
                                  IfMatch=head["ETag"])
                break
            except client.exceptions.ClientError as e:  # the job renewed it in between
                assert "PreconditionFailed" in str(e)
        else:
            raise AssertionError("could not take the lease over in 50 tries")
        before = set(o["Key"] for o in client.list_objects_v2(
            Bucket=BUCKET, Prefix="lost/out/")["Contents"])
        err = proc.communicate(timeout=600)[1]
    finally:
        end_group(proc)
    assert proc.returncode == 2, err[-2000:]
    assert "taken over by run intruder" in err and "nothing deleted" in err
    after = set(o["Key"] for o in client.list_objects_v2(
        Bucket=BUCKET, Prefix="lost/out/")["Contents"])
    assert before <= after  # nothing of what was there was deleted
    lease = json.loads(client.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    assert lease["run_id"] == "intruder"
    assert "lost/out/p.DATAGEN_COMPLETE" not in after
    assert "lost/out/p.datagen_summary.json" not in after  # no failure summary either


def test_a_store_that_stops_answering_mid_run_is_one_line_and_no_marker(s3, monkeypatch):
    """The store gone for good once the encode pass starts (every connection closed, none
    taken): when the S3 client's retries run out (AWS_MAX_ATTEMPTS=2 here, so the test is
    quick; the job's own default rides out a minute or two), the job stops with one ERROR
    line naming the store, exit 1, and no marker."""
    from object_store_servers import DelayProxy
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")
    proxy = DelayProxy(s3.port, 0.03)  # each request late: the cut lands inside the pass
    out = "s3://%s/gone/out" % BUCKET
    proc = _start_job(out, s3, proxy.endpoint)
    try:
        wait_for_line(proc, pass_started(2))
        proxy.cut()
        err = proc.communicate(timeout=600)[1]
    finally:
        end_group(proc)
    errors = [line for line in err.splitlines() if " ERROR " in line]
    assert proc.returncode == 1 and len(errors) == 1 and "Traceback" not in err, err[-3000:]
    assert "the object store stopped answering" in errors[0], errors
    assert proxy.endpoint in errors[0] and "marked nothing complete" in errors[0], errors
    assert "gone/out/p.DATAGEN_COMPLETE" not in {o["Key"] for o in s3.client().list_objects_v2(
        Bucket=BUCKET, Prefix="gone/out/").get("Contents", [])}


@pytest.fixture
def slow_requests_s3(s3):
    """The S3 server behind a proxy that delays each request by 30 ms from the first copy
    on (a commit's first move), but not an upload's body again per chunk: the commit's copies
    and deletes are as late as through `slow_s3`, the job's passes before it are not slowed
    by the requests they make. One a test: the first copy of each starts its delays."""
    from object_store_servers import DelayProxy
    proxy = DelayProxy(s3.port, 0.03, bodies=False, after="x-amz-copy-source")
    yield proxy
    proxy.stop()


def _killed_in_the_commit(client, out, server, endpoint, *extra):
    """Starts the job through `endpoint` (a delaying proxy: the commit's moves are quick,
    each request is delayed there, so the kill lands inside them) and kill -9s it once the
    first final shard is there; the pid of the killed run."""
    prefix = out.split("/", 3)[3] + "/"
    proc = _start_job(out, server, endpoint, *extra)
    try:
        wait_for(lambda: _keys(client, prefix + "p-"), "the commit's first final shard", proc)
    finally:
        end_group(proc)
        proc.stderr.close()
    return proc.pid


def _rerun_takes_over(out, server, killed, *extra):
    rerun = _start_job(out, server, server.endpoint, *extra)
    err = rerun.communicate(timeout=600)[1]
    assert rerun.returncode == 0, err[-2000:]
    assert "process %d on this host is gone" % killed in err  # the dead run's lock


@pytest.mark.parametrize("moment", ["vocab pass", "encode pass", "commit"])
def test_kill_9_at_any_moment_then_a_rerun_gives_the_same_bytes_and_no_stray_object(
        s3, slow_requests_s3, local_output, moment):
    out = "s3://%s/kill-%s/out" % (BUCKET, moment.replace(" ", "-"))
    prefix = out.split("/", 3)[3] + "/"
    client = s3.client()
    if moment == "commit":
        killed = _killed_in_the_commit(client, out, s3, slow_requests_s3.endpoint)
    else:
        proc = _start_job(out, s3, s3.endpoint)
        try:
            if moment == "vocab pass":
                wait_for_line(proc, pass_started(1))
            else:  # the encode pass has written its first fragment
                wait_for_line(proc, pass_started(2))
                wait_for(lambda: [k for k in _keys(client, prefix) if "/fragments/" in k],
                         "the encode pass's first fragment", proc)
        finally:
            end_group(proc)
            proc.stderr.close()
        killed = proc.pid
    assert prefix + "p.DATAGEN_COMPLETE" not in _keys(client, prefix)  # killed before it
    _rerun_takes_over(out, s3, killed)
    objects = _objects(client, prefix)
    _assert_same_output({k: v[0] for k, v in objects.items()}, local_output)


@pytest.mark.parametrize("fmt", ["array_record", "parquet"])
def test_other_formats_killed_in_the_commit_then_rerun_give_the_local_bytes_on_s3(
        s3, slow_requests_s3, tmp_path, capsys, fmt):
    """ArrayRecord and Parquet: a job killed with SIGKILL while its commit moves the shards,
    then rerun, leaves the bytes the same job leaves on local disk; a rerun after that
    rewrites nothing; `inspect` and the readers without TensorFlow read it from the store."""
    local = _local_files(tmp_path / "local", "--output_format", fmt)
    assert any(name.endswith("." + fmt) for name in local)
    out = "s3://%s/%s/out" % (BUCKET, fmt)
    prefix = fmt + "/out/"
    client = s3.client()
    killed = _killed_in_the_commit(client, out, s3, slow_requests_s3.endpoint,
                                   "--output_format", fmt)
    assert prefix + "p.DATAGEN_COMPLETE" not in _keys(client, prefix)
    _rerun_takes_over(out, s3, killed, "--output_format", fmt)
    objects = _objects(client, prefix)
    _assert_same_output({k: v[0] for k, v in objects.items()}, local)

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


# -- gs:// against the GCS emulator ------------------------------------------------------------
def test_job_and_inspect_on_gcs_match_local_disk(gcs, local_output):
    out = "gs://%s/run/out" % BUCKET
    env = dict(os.environ, **gcs.env)
    cmd = [sys.executable, "-m", "pipeline.datagen"] + _inputs("gs://%s/in/" % BUCKET) + [
        "--output_dir", out] + FLAGS
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    bucket = gcs.client().bucket(BUCKET)
    objects = {b.name[len("run/out/"):]: b.download_as_bytes()
               for b in bucket.client.list_blobs(BUCKET, prefix="run/out/")}
    _assert_same_output(objects, local_output)
    shown = subprocess.run([sys.executable, "-m", "pipeline.tools.inspect", out, "--num_records", "1"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "p train: 1 of" in shown.stdout


def test_no_apitools_warning_without_the_gcp_extra(tmp_path):
    """Importing Beam logs "apitools not found ..." where apache-beam[gcp] is missing; the
    job drops that line. `apitools` is made unimportable here as it is without the extra."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.modules['apitools'] = None\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), ROOT]))
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.datagen", "--train_source",
         os.path.join(CORPUS, "dev.en"), "--train_target", os.path.join(CORPUS, "dev.zh"),
         "--output_dir", str(tmp_path / "out"), "--vocab_size", "300"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "apitools" not in done.stderr
    check = subprocess.run([sys.executable, "-c", "import apitools"], env=env,
                           capture_output=True, text=True)
    assert check.returncode != 0  # the stand-in works: apitools cannot be imported


def test_temporary_names_match_no_output_glob_and_a_rerun_removes_them(tmp_path):
    """A local write goes through a temporary name beside its file; a run killed in between
    leaves it, and an older version named it `vocab.X.tmp-<hex>`, which a trainer's `vocab.*`
    glob took for a vocabulary."""
    import fnmatch
    from transforms.storage import file_io
    name = os.path.basename(file_io.temporary_name(str(tmp_path / "vocab.p.300.subwords.en")))
    assert file_io.is_temporary_name(name)
    assert not any(fnmatch.fnmatch(name, glob) for glob in ("vocab.*", "p-*", "p-train-*"))
    out = tmp_path / "out"
    out.mkdir()
    stray = [out / name, out / ("vocab.p.300.subwords.zh.tmp-" + "0" * 32)]
    for path in stray:
        path.write_bytes(b"half a vocabulary")
    (out / "vocab.notes.tmp-mine").write_bytes(b"a user's file")  # not one of ours
    assert datagen.main(["--train_source", os.path.join(CORPUS, "dev.en"), "--train_target",
                         os.path.join(CORPUS, "dev.zh"), "--output_dir", str(out),
                         "--problem", "p", "--vocab_size", "300", "--runner",
                         "FnApiRunner"]) == 0
    assert not any(path.exists() for path in stray)
    assert (out / "vocab.notes.tmp-mine").exists()
    assert not [n for n in os.listdir(out) if ".tmp-" in n and n != "vocab.notes.tmp-mine"]


def test_a_converted_dataset_on_s3_matches_local_disk(s3, tmp_path):
    """TSV (and TMX, SGM, archive members) are converted into line files under the work
    directory first; its rejects file, empty when nothing was rejected, is a 0-byte object."""
    tsv = os.path.join(ROOT, "tests", "data", "formats", "cmn.head3000.txt")
    client = s3.client()
    with open(tsv, "rb") as f:
        client.put_object(Bucket=BUCKET, Key="tsv/cmn.txt", Body=f.read())
    flags = ["--problem", "p", "--vocab_size", "1000", "--num_train_shards", "2",
             "--source_lang", "en", "--target_lang", "zh", "--runner", "FnApiRunner"]
    local = tmp_path / "out"
    assert datagen.main(["--train_tsv", tsv, "--output_dir", str(local)] + flags) == 0
    out = "s3://%s/tsv/out" % BUCKET
    assert datagen.main(["--train_tsv", "s3://%s/tsv/cmn.txt" % BUCKET, "--output_dir", out]
                        + flags + s3.beam_flags()) == 0
    objects = _objects(client, "tsv/out/")
    for name in ("p-train-00000-of-00002", "p-train-00001-of-00002",
                 "vocab.p.1000.subwords.en", "vocab.p.1000.subwords.zh"):
        assert objects[name][0] == (local / name).read_bytes(), name
