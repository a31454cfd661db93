"""Network faults on a Dask cluster of separate hosts (the `hosts` fixture:
tests/multihost_cluster.py), each injected once the encode pass runs and worker w2 has
started one of its tasks. The job encodes the sample with T2T's own subword vocabularies,
found in the output directory and reused (no vocab pass), and every output is compared with
DirectRunner's (tests/multihost_jobs.py).

- w2's link down for CUT_SECONDS, then up: the job completes, identical. Dask keeps w2
  through the cut (its connections outlive a silence shorter than
  `distributed.comm.timeouts.tcp`, 30 s, and `worker-ttl` is 5 minutes), so nothing is
  rescheduled and w2's tasks go on once the link is back; w2's store requests during the
  cut are retried by the job's S3 client (12 attempts, backing off up to 20 s each), where
  botocore's default 5 attempts gave up within the cut and failed the pass.
- the store host's link down for CUT_SECONDS: every store request of the workers and the
  driver (the lock's heartbeat too) waits and is retried; the job completes, identical.
- the scheduler host lost: the job fails with one ERROR line and exit 2, no marker, no
  shard, its lock released (a worker still in its task may write a fragment under the run's
  work after the driver removed it: the rerun sweeps it); a rerun against a new scheduler
  (same address, workers started again: a Dask worker stops when its scheduler goes)
  completes identical.
"""

import contextlib
import time

import pytest

from multihost_jobs import (COMMON, assert_same_as_direct, at_work_in_pass, start_job, store_keys,
                            store_summary, t2t_vocab_files)

pytestmark = pytest.mark.slow

FLAGS = ["--problem", "p"] + COMMON
GIVEN = t2t_vocab_files("p")
ENCODE = "pass 2 of 2: encode"
CUT_SECONDS = 12  # how long a link stays down: the fault itself, not a wait for an event


@pytest.fixture
def cluster(hosts):
    hosts.ensure_up()
    return hosts


@contextlib.contextmanager
def _cut(host):
    host.link_down()
    try:
        yield
    finally:
        host.link_up()


def _ride_out_a_cut(cluster, host, prefix, tmp_path_factory):
    """A job whose `host`'s link goes down for CUT_SECONDS once w2 works in the encode pass:
    it completes as DirectRunner's does. Returns how many tasks had started by the cut."""
    job = start_job(cluster, FLAGS, prefix, tmp_path_factory, GIVEN)
    before, running = at_work_in_pass(cluster, "w2", job, ENCODE)
    with _cut(cluster.hosts[host]):
        time.sleep(CUT_SECONDS)
    assert_same_as_direct(cluster, job, FLAGS, prefix, tmp_path_factory)
    assert running, "the encode pass ended before the cut: nothing was tested"
    return before


def test_a_worker_link_cut_in_the_encode_pass_is_ridden_out(cluster, tmp_path_factory):
    before = _ride_out_a_cut(cluster, "w2", "link-cut", tmp_path_factory)
    _, removed = cluster.task_log()
    assert [r for r in removed if r["after_starts"] >= before] == []  # w2 was kept


def test_the_store_unreachable_in_the_encode_pass_is_ridden_out(cluster, tmp_path_factory):
    _ride_out_a_cut(cluster, "store", "store-cut", tmp_path_factory)


@pytest.fixture(scope="module")
def lost_scheduler(hosts, tmp_path_factory):
    """(exit status, log lines, keys left under the output) of a run whose scheduler host
    was lost once its encode pass ran on w2."""
    hosts.ensure_up()
    job = start_job(hosts, FLAGS, "sched-lost", tmp_path_factory, GIVEN)
    _, running = at_work_in_pass(hosts, "w2", job, ENCODE)
    assert running, "the encode pass ended before the scheduler was lost"
    hosts.kill_host("sched")
    code = job.finish()
    return code, list(job.lines), store_keys(hosts, "sched-lost")


def test_the_scheduler_lost_mid_run_fails_cleanly_and_a_rerun_completes(
        cluster, lost_scheduler, tmp_path_factory):
    code, lines, keys = lost_scheduler
    assert code != 0, lines[-20:]
    assert "p.DATAGEN_COMPLETE" not in keys and "p.datagen.lock" not in keys, keys
    # no final shard: a worker still running its task when the scheduler went may write its
    # fragment after the driver removed the run's work, but only there (the rerun sweeps it)
    assert not [k for k in keys if k.startswith("p-")], keys
    assert store_summary(cluster, "sched-lost", "p")["status"] == "failed"
    cluster.ensure_up()  # a new scheduler at the same address, and new workers
    rerun = start_job(cluster, FLAGS, "sched-lost", tmp_path_factory, GIVEN)
    assert_same_as_direct(cluster, rerun, FLAGS, "sched-lost", tmp_path_factory)  # no work left


def test_a_lost_scheduler_is_one_error_line(lost_scheduler):
    code, lines, _ = lost_scheduler
    errors = [line for line in lines if " ERROR " in line]
    assert len(errors) == 1 and "Traceback" not in "\n".join(lines), "\n".join(lines[-30:])
    assert "lost the Dask scheduler" in errors[0], errors
    assert code == 2, lines[-20:]
