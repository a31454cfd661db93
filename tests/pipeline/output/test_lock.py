"""The output lock (`pipeline.output.lock.OutputLock`): on a local disk a free lease is an
exclusive create; a lease of this host whose holder process is alive is never stale, on a
local disk, S3 and GCS. On object stores: s3:// against a real S3
server (`moto_server`) and gs:// against a real GCS emulator (fake-gcs-server), started on
127.0.0.1 by the `s3`, `slow_s3` and `gcs` fixtures (tests/conftest.py). The S3 tests go
through a proxy that delays every request, as a remote store does: the lease is never missing
and never another run's across many heartbeats, exactly one of many runs takes it, a stale one
is taken over and its old holder stops deleting nothing. GCS generation preconditions; the
settled lease of other file systems. A job that loses its lease:
tests/end_to_end/test_object_stores.py.
"""

import json
import os
import socket
import subprocess
import threading
import time

import pytest

from object_store_servers import BUCKET
from pipeline.output.lock import OutputLock, lease_for
from pipeline.runtime.errors import DatagenError

pytestmark = pytest.mark.slow


# -- the lock on an object store --------------------------------------------------------------
def _lease_watcher(client, key, stop):
    """Reads the lease every ~10 ms until `stop` is set; returns the run ids seen (None:
    missing)."""
    seen = []
    while not stop.is_set():
        try:
            seen.append(json.loads(client.get_object(Bucket=BUCKET, Key=key)["Body"].read())
                        ["run_id"])
        except client.exceptions.NoSuchKey:
            seen.append(None)
        time.sleep(0.01)
    return seen


def _wait_for_renewals(lock, renewals, bound=600.0):
    """Returns once `lock`'s heartbeat has renewed the lease `renewals` times (its version
    changed), however long a busy machine makes that take; `bound` turns a hang into a
    failure."""
    seen = {lock.version}
    deadline = time.monotonic() + bound
    while len(seen) <= renewals:
        assert time.monotonic() < deadline, "renewed %d times" % (len(seen) - 1)
        time.sleep(0.01)
        seen.add(lock.version)


def _stores(endpoint, server):
    from apache_beam.options.pipeline_options import PipelineOptions
    from transforms.storage.object_stores import ObjectStores, StoreSettings
    return ObjectStores(StoreSettings.from_options(PipelineOptions(server.beam_flags(endpoint))))


def test_s3_lease_is_exclusive_across_many_heartbeats_and_never_missing(s3, slow_s3):
    """Through a 30 ms delay per request: the holder renews every 2 s (--lock_stale_seconds
    8, room for a heartbeat late by seconds on a busy machine); until it has renewed 5 times
    and 10 other runs have tried, the lease is there at every read and always the holder's,
    and every other run is refused. The test waits for these events, however long they take
    (a 10-minute bound only turns a hang into a failure)."""
    out = "s3://%s/locked/out" % BUCKET
    holder = OutputLock(out, "p", 8.0, _stores(slow_s3.endpoint, s3))
    holder.acquire()
    versions = {holder.version}
    try:
        seen = []
        stop = threading.Event()
        watcher = threading.Thread(target=lambda: seen.extend(
            _lease_watcher(s3.client(), "locked/out/p.datagen.lock", stop)))
        watcher.start()
        refused = 0
        deadline = time.monotonic() + 600
        try:
            while refused < 10 or len(versions) < 6:
                assert time.monotonic() < deadline, (refused, len(versions))
                other = OutputLock(out, "p", 8.0, _stores(slow_s3.endpoint, s3))
                with pytest.raises(DatagenError, match="is in use by run %s" % holder.run_id):
                    other.acquire()
                refused += 1
                versions.add(holder.version)
                time.sleep(0.2)
        finally:
            stop.set()
            watcher.join()
    finally:
        holder.release()
    assert seen and set(seen) == {holder.run_id}
    assert "Contents" not in s3.client().list_objects_v2(Bucket=BUCKET, Prefix="locked/")


def test_s3_lease_taken_by_exactly_one_of_many_runs_at_once(s3, slow_s3):
    out = "s3://%s/race/out" % BUCKET
    locks = [OutputLock(out, "p", 30.0, _stores(slow_s3.endpoint, s3)) for _ in range(6)]
    barrier = threading.Barrier(len(locks))
    outcomes = [None] * len(locks)

    def take(i):
        barrier.wait()
        try:
            locks[i].acquire()
            outcomes[i] = "held"
        except DatagenError as e:
            outcomes[i] = str(e)

    threads = [threading.Thread(target=take, args=(i,)) for i in range(len(locks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    held = [i for i, o in enumerate(outcomes) if o == "held"]
    try:
        assert len(held) == 1, outcomes
        assert all("in use by run %s" % locks[held[0]].run_id in o
                   for i, o in enumerate(outcomes) if i not in held)
    finally:
        for i in held:
            locks[i].release()


def test_a_stale_s3_lease_is_taken_over_and_its_old_holder_stops_deleting_nothing(s3, slow_s3):
    """A holder of another host (its lease says so) whose heartbeat stops for longer than
    its own terms (stale after 0.6 s) loses the lease to a run with a longer
    --lock_stale_seconds (the holder's terms decide); its next heartbeat finds that out, and
    it deletes nothing."""
    out = "s3://%s/stale/out" % BUCKET
    old = OutputLock(out, "p", 0.6, _stores(slow_s3.endpoint, s3))
    old.lease["host"] = "elsewhere"
    old.acquire()
    client = s3.client()
    lease = json.loads(client.get_object(Bucket=BUCKET, Key="stale/out/p.datagen.lock")
                       ["Body"].read())
    assert lease["run_id"] == old.run_id and lease["stale_seconds"] == 0.6
    old._stop.set()  # a hung holder: no heartbeat from now on
    old._thread.join()
    time.sleep(1.0)
    new = OutputLock(out, "p", 600.0, _stores(slow_s3.endpoint, s3))
    new.acquire()
    try:
        assert not old.renew() and old.lost_to["run_id"] == new.run_id
        with pytest.raises(DatagenError, match="taken over by run %s" % new.run_id):
            old.check()
        old.release()  # deletes nothing: the lease is the new holder's
        lease = json.loads(client.get_object(Bucket=BUCKET, Key="stale/out/p.datagen.lock")
                           ["Body"].read())
        assert lease["run_id"] == new.run_id
    finally:
        new.release()


def test_gcs_lease_is_exclusive_with_generation_preconditions(gcs, monkeypatch):
    for name, value in gcs.env.items():
        monkeypatch.setenv(name, value)
    from transforms.storage.object_stores import ObjectStores, StoreSettings
    out = "gs://%s/locked/out" % BUCKET
    holder = OutputLock(out, "p", 8.0, ObjectStores(StoreSettings()))  # heartbeat 2 s
    holder.acquire()
    try:
        _wait_for_renewals(holder, 2)
        assert not holder.lost
        other = OutputLock(out, "p", 8.0, ObjectStores(StoreSettings()))
        with pytest.raises(DatagenError, match="is in use by run %s" % holder.run_id):
            other.acquire()
    finally:
        holder.release()
    assert not list(gcs.client().list_blobs(BUCKET, prefix="locked/"))


def test_settled_lease_of_other_file_systems_takes_renews_and_releases(tmp_path, monkeypatch):
    """The lease where a file system has neither exclusive create nor conditional writes
    (hdfs://, ...): written, read back after the settle time; run here on a local path."""
    from pipeline.output import lock as lock_module
    monkeypatch.setattr(lock_module, "SETTLE_SECONDS", 0.05)
    monkeypatch.setattr(lock_module, "lease_for",
                        lambda path, stores=None: lock_module.SettledLease(path))
    out = str(tmp_path / "out")
    os.makedirs(out)
    holder = OutputLock(out, "p", 4.0, None)  # heartbeat every 1 s
    holder.acquire()
    try:
        _wait_for_renewals(holder, 2)
        assert not holder.lost  # renewed
        other = OutputLock(out, "p", 4.0, None)
        with pytest.raises(DatagenError, match="is in use by run %s" % holder.run_id):
            other.acquire()
    finally:
        holder.release()
    assert not os.path.exists(os.path.join(out, "p.datagen.lock"))


def test_local_lock_is_taken_at_once_by_exactly_one_of_many_runs(tmp_path):
    """On a local disk a free lease is an exclusive create: no settle wait, and of runs that
    try at the same moment exactly one gets it; its heartbeat keeps the file there."""
    out = str(tmp_path / "new" / "out")  # the lock makes the directory
    locks = [OutputLock(out, "p", stale_seconds=0.8) for _ in range(8)]  # heartbeat 0.2 s
    outcomes = [None] * len(locks)
    start = threading.Barrier(len(locks))

    def take(i):
        start.wait()
        began = time.time()
        try:
            locks[i].acquire()
            outcomes[i] = ("held", time.time() - began)
        except DatagenError as e:
            outcomes[i] = ("refused", str(e))

    threads = [threading.Thread(target=take, args=(i,)) for i in range(len(locks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    held = [i for i, o in enumerate(outcomes) if o[0] == "held"]
    assert len(held) == 1, outcomes
    from pipeline.output.lock import SettledLease
    assert not isinstance(lease_for(out), SettledLease)  # no settle wait on a local disk
    assert all("is in use by run %s" % locks[held[0]].lease["run_id"] in o[1]
               for o in outcomes if o[0] == "refused")
    path = os.path.join(out, "p.datagen.lock")
    versions = {locks[held[0]].version}  # five heartbeats: the lease file is never missing
    deadline = time.monotonic() + 600  # a bound on a hang only: the heartbeats are the events
    while len(versions) <= 5:
        assert os.path.exists(path) and time.monotonic() < deadline
        versions.add(locks[held[0]].version)
    assert json.loads(open(path).read())["run_id"] == locks[held[0]].lease["run_id"]
    locks[held[0]].release()
    assert not os.path.exists(path) and os.listdir(out) == []


def _stores_of(server):
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
        out, stores = "s3://%s/live/out" % BUCKET, _stores_of(server)
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
