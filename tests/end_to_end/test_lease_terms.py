"""The lease records its holder's terms (`pipeline.output.lock`): a taker judges staleness by
the holder's recorded --lock_stale_seconds, never by its own shorter one, and on this host a
holder whose process is alive is never stale, on a local disk and on S3 (moto_server) alike.
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from datagen_helpers import FNAPI
from object_store_servers import BUCKET
from pipeline import datagen
from pipeline.output.lock import OutputLock, lease_for
from pipeline.runtime.errors import DatagenError
from repo_paths import REPO_ROOT as ROOT

pytestmark = pytest.mark.slow

SAMPLE = os.path.join(ROOT, "sample_data", "enzh-mlqe-pe")


@pytest.fixture
def corpus(tmp_path):
    paths = []
    for lang in ("en", "zh"):
        with open(os.path.join(SAMPLE, "train." + lang), "rb") as f:
            data = b"".join(f.readline() for _ in range(300))
        path = tmp_path / ("train." + lang)
        path.write_bytes(data)
        paths.append(str(path))
    return paths


def _argv(out, corpus, *extra):
    return (["--train_source", corpus[0], "--train_target", corpus[1], "--output_dir",
             str(out), "--problem", "p", "--num_train_shards", "2"] + FNAPI
            + [str(e) for e in extra])


def test_a_shorter_lock_stale_seconds_does_not_take_a_live_runs_lease(tmp_path, corpus,
                                                                       capsys):
    """A real job holds the lease (default terms: 120 s); it is stopped (SIGSTOP: alive, no
    heartbeat) for longer than a second run's --lock_stale_seconds 0.5. The second run is
    refused with one line and exit 2; the first goes on (SIGCONT) and ends complete."""
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.datagen"] + _argv(out, corpus),
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if re.search(r" pass 1( of ~?\d+)?: ", line):
                break
        os.killpg(proc.pid, signal.SIGSTOP)
        try:
            time.sleep(1.5)
            assert datagen.main(_argv(out, corpus, "--lock_stale_seconds", 0.5)) == 2
        finally:
            os.killpg(proc.pid, signal.SIGCONT)
        err = "".join(lines) + proc.stderr.read()
        assert proc.wait(timeout=600) == 0, err
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    refusal = capsys.readouterr().err.strip().splitlines()
    assert len(refusal) == 1, refusal
    assert "is in use by run" in refusal[0] and "pid %d" % proc.pid in refusal[0]
    assert "stale after 120 s without a heartbeat" in refusal[0]
    with open(out / "p.datagen_summary.json") as f:
        assert json.load(f)["status"] == "complete"
    assert not os.path.exists(out / "p.datagen.lock")


def _write_lease(out, **fields):
    os.makedirs(str(out), exist_ok=True)
    lease = {"run_id": "other", "host": "elsewhere", "pid": 4242, "pid_start": None,
             "started_at": "2026-01-01T00:00:00+00:00", "heartbeat_iso": "then",
             "heartbeat_seconds": 0.5, "stale_seconds": 2.0, "heartbeat_at": time.time()}
    lease.update(fields)
    with open(os.path.join(str(out), "p.datagen.lock"), "w") as f:
        json.dump(lease, f)


def test_a_dead_holders_lease_is_taken_after_the_holders_staleness(tmp_path, corpus, capsys):
    """Another host's lease with terms (stale after 2 s): a heartbeat 1 s old is not stale
    even to a run with --lock_stale_seconds 0.5; one 5 s old is, even to a run with 600."""
    out = tmp_path / "out"
    _write_lease(out, heartbeat_at=time.time() - 1)
    assert datagen.main(_argv(out, corpus, "--lock_stale_seconds", 0.5)) == 2
    err = capsys.readouterr().err
    assert "is in use by run other (host elsewhere" in err and "stale after 2 s" in err
    _write_lease(out, heartbeat_at=time.time() - 5)
    assert datagen.main(_argv(out, corpus, "--lock_stale_seconds", 600)) == 0
    err = capsys.readouterr().err
    assert "taking over the lock" in err and "its holder's --lock_stale_seconds 2)" in err
    assert not os.path.exists(out / "p.datagen.lock")


def _stores(server):
    from apache_beam.options.pipeline_options import PipelineOptions
    from transforms.storage.object_stores import ObjectStores, StoreSettings
    return ObjectStores(StoreSettings.from_options(PipelineOptions(
        server.beam_flags(server.endpoint))))


@pytest.mark.parametrize("where", ["local", "s3", "gcs"])
def test_a_live_process_on_this_host_is_never_stale(tmp_path, request, monkeypatch, where):
    """A lease of this host whose holder process is alive (here a `sleep`), with a heartbeat
    far older than its terms, is refused, on a local disk, S3 and GCS; once that process is
    gone it is taken at once."""
    if where == "s3":
        server = request.getfixturevalue("s3")
        out, stores = "s3://%s/live/out" % BUCKET, _stores(server)
    elif where == "gcs":
        for name, value in request.getfixturevalue("gcs").env.items():
            monkeypatch.setenv(name, value)
        from transforms.storage.object_stores import ObjectStores, StoreSettings
        out, stores = "gs://%s/live/out" % BUCKET, ObjectStores(StoreSettings())
    else:
        out, stores = str(tmp_path / "out"), None
        os.makedirs(out)
    holder = subprocess.Popen(["sleep", "600"])
    try:
        lease = {"run_id": "sleeper", "host": socket.gethostname(), "pid": holder.pid,
                 "pid_start": None, "started_at": "then",
                 "heartbeat_iso": "then", "heartbeat_seconds": 0.1, "stale_seconds": 0.4,
                 "heartbeat_at": time.time() - 3600}
        lease_for(out + "/p.datagen.lock", stores).create(json.dumps(lease).encode())
        with pytest.raises(DatagenError, match="is in use by run sleeper"):
            OutputLock(out, "p", 0.4, stores).acquire()
    finally:
        holder.kill()
        holder.wait()
    taker = OutputLock(out, "p", 0.4, stores)
    taker.acquire()
    taker.release()
