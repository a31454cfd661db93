"""The job on a real dask.distributed cluster through `--runner DaskRunner` (Beam's runner,
patched: pipeline/runtime/dask_runner.py): a scheduler and 2 worker processes of 2 threads
each (as dask-jobqueue's SLURMCluster starts them), each under its nanny, started here on
127.0.0.1 and stopped by process group. The workers preload tests/dask_kill_points.py, which
kills a worker process at an exact point when a test arms it.

- every pass runs on the cluster, both workers execute tasks, the output is byte-identical to
  DirectRunner's, the summary's counters equal DirectRunner's, and no worker prints Beam's
  "apitools not found" line;
- a worker process killed inside a shard fragment's write (half its bytes written): its nanny
  restarts it, Dask runs the task again, and the output is still byte-identical; the job says
  so in one line (which worker, what of the pass runs again), and with the workers stopped
  (SIGSTOP) during the vocab pass it says where that pass stands, as on DirectRunner
  (tests/end_to_end/test_progress.py);
- worker processes killed during the job's check of the workers' project, and as the job's
  plugin reaches them, are survived;
- a worker that stops answering (SIGSTOP) is named in a progress line with the scheduler's
  view of it, and the job completes once it answers again (SIGCONT);
- Ctrl-C of the driver cancels the pass on the cluster: exit 130, no task of the job runs on
  a worker afterwards, nothing more is written, and no "could not cancel" warning.
"""

import json
import os
import re
import signal
import time

import psutil
import pytest

from cluster_jobs import (COMMON, INPUTS, KINDS, VOCAB_LINE, Job, baseline, books,
                          stopped_until_said_twice, work_leftovers)
from dask_cluster import DaskCluster, close_clients
from dask_kill_points import KILL_DIR, fragment_writes, taken
from datagen_helpers import output_bytes

pytestmark = pytest.mark.slow

# 140 encode chunks of 50 lines: the encode pass is many tasks, still running when a test
# kills a worker or the driver. The word kind: its vocab pass is quick.
MANY_CHUNKS = ["--encode_chunk_lines", "50"]
WORD = KINDS["word"]


@pytest.fixture(scope="module")
def kill_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("kill-points")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, kill_dir):
    cluster = DaskCluster(tmp_path_factory.mktemp("dask"), workers=2, threads=2,
                          worker_args=["--preload", "dask_kill_points"],
                          worker_env={KILL_DIR: str(kill_dir)})
    try:
        yield cluster.start()
    finally:
        close_clients()
        cluster.stop()


def _flags(cluster):
    return ["--runner", "DaskRunner", "--dask_client_address", cluster.address]


def _summary(out):
    return json.loads((out / "p.datagen_summary.json").read_text())


def _arm(kill_dir, point):
    (kill_dir / point).write_text("")


def _wait(condition, what, seconds=180):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise TimeoutError(what)


def test_the_job_runs_on_both_workers_byte_identical_to_direct_runner(cluster, tmp_path,
                                                                      tmp_path_factory):
    expected, direct = baseline("subword", tmp_path_factory)
    before = cluster.executed()
    out = tmp_path / "out"
    job = Job(INPUTS + COMMON + _flags(cluster) + ["--output_dir", str(out)])
    assert job.finish() == 0, "\n".join(job.lines[-20:])
    after = cluster.executed()
    assert all(after[name] > before.get(name, 0) for name in after), (before, after)
    assert len(after) == 2
    assert output_bytes(out) == expected
    assert work_leftovers(out) == []
    summary = _summary(out)
    assert summary["runner"] == "DaskRunner"
    assert books(summary) == books(direct)
    assert summary["metrics"] == direct["metrics"]  # the job's counters, from the cluster
    for name in ("worker-0", "worker-1"):  # workers import Beam quietly, as the driver does
        assert "apitools not found" not in cluster.procs.log(name, lines=100000)


def test_a_worker_killed_inside_a_fragment_write_is_survived_and_its_task_runs_again(
        cluster, kill_dir, tmp_path, tmp_path_factory):
    expected, direct = baseline("subword", tmp_path_factory)  # chunking changes no byte
    pids = cluster.worker_pids()
    _arm(kill_dir, "in-fragment-write")
    out = tmp_path / "out"
    job = Job(INPUTS + COMMON + MANY_CHUNKS + _flags(cluster)
              + ["--output_dir", str(out), "--progress_seconds", "0.5"])
    job.wait_for_line("pass 1 of ")
    _wait(cluster.processing, "a task of the vocab pass on a worker")  # past the start-up check
    # the vocab pass slowed: its progress lines, from the marks its tasks left on the cluster
    stopped_until_said_twice(job, [psutil.Process(pid) for pid in pids.values()], "pass 1: ")
    assert job.finish() == 0, "\n".join(job.lines[-20:])
    [victim] = taken(kill_dir, "in-fragment-write")
    assert victim in pids.values()
    writes = fragment_writes(kill_dir)
    cut = [w[2:] for w in writes if w[:2] == ("start", str(victim))
           and ("done", str(victim)) + w[2:] not in writes]  # the writes it died in
    assert cut, writes
    for task, path in cut:  # each ran again, the same task, in another worker process
        again = [w[0] for w in writes if w[2:] == (task, path) and w[1] != str(victim)]
        assert "start" in again and "done" in again, (task, path, writes)
    assert output_bytes(out) == expected
    assert books(_summary(out)) == books(direct)
    assert _summary(out)["metrics"] == direct["metrics"]  # the rerun task counted once
    assert work_leftovers(out) == []
    cluster.wait_for_workers(2)  # the nanny started a new worker process
    assert victim not in cluster.worker_pids().values()
    lines = job.lines
    vocab = [line for line in lines if line[9:].startswith("pass 1: ")
             and "Dask worker" not in line]
    assert len(vocab) >= 2 and all(VOCAB_LINE.match(line) for line in vocab), vocab
    lost = [i for i, line in enumerate(lines) if "WARNING pass 2: Dask worker tcp://" in line]
    assert len(lost) == 1 and " lost" in lines[lost[0]], lines
    assert re.search(r"lost(: \d+ running and \d+ finished tasks of the pass are computed "
                     r"again|; none of the pass's tasks were on it)$", lines[lost[0]]), \
        lines[lost[0]]
    start = next(i for i, line in enumerate(lines) if "pass 2 of 2: encode" in line)
    done = next(i for i, line in enumerate(lines) if "pass 2 done" in line)
    assert start < lost[0] < done


def test_workers_killed_in_the_check_of_their_project_and_as_the_plugin_arrives_are_survived(
        cluster, kill_dir, tmp_path, tmp_path_factory):
    expected, _ = baseline("word", tmp_path_factory)
    cluster.wait_for_workers(2)
    _arm(kill_dir, "in-check")
    _arm(kill_dir, "in-plugin")
    out = tmp_path / "out"
    job = Job(INPUTS + COMMON + WORD + _flags(cluster) + ["--output_dir", str(out)])
    assert job.finish() == 0, "\n".join(job.lines[-20:])
    assert len(taken(kill_dir, "in-check")) == 1  # a worker did die in the check
    assert len(taken(kill_dir, "in-plugin")) == 1  # and one as the job's plugin reached it
    assert job.errors() == []
    assert output_bytes(out) == expected


def test_a_stopped_worker_is_named_with_the_schedulers_view_of_it(cluster, tmp_path,
                                                                   tmp_path_factory):
    expected, _ = baseline("word", tmp_path_factory)
    cluster.wait_for_workers(2)
    out = tmp_path / "out"
    job = Job(INPUTS + COMMON + WORD + MANY_CHUNKS + _flags(cluster)
              + ["--output_dir", str(out)])
    job.wait_for_line("pass 2 of 2: encode")
    victim = "worker-1"
    _wait(lambda: victim in cluster.processing(), "a task of the encode pass on " + victim)
    pid = cluster.worker_pids()[victim]
    os.kill(pid, signal.SIGSTOP)
    try:
        job.wait_for_line("Dask worker %s (" % victim)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert job.finish() == 0, "\n".join(job.lines[-20:])
    [line] = [line for line in job.lines if "Dask worker %s (" % victim in line]
    assert re.search(r" WARNING pass 2: Dask worker worker-1 \(tcp://127\.0\.0\.1:\d+\): "
                     r"silent \d+ s, holds \d+ tasks?; the scheduler drops it after 300-600 s "
                     r"silent \(distributed\.scheduler\.worker-ttl 300 s\)$", line), line
    assert output_bytes(out) == expected


def test_ctrl_c_cancels_the_pass_on_the_cluster(cluster, tmp_path):
    cluster.wait_for_workers(2)
    out = tmp_path / "out"
    job = Job(INPUTS + COMMON + WORD + MANY_CHUNKS + _flags(cluster)
              + ["--output_dir", str(out)])
    job.wait_for_line("pass 2 of 2: encode")
    _wait(lambda: cluster.processing(), "a task of the encode pass")
    job.proc.send_signal(signal.SIGINT)
    assert job.finish() == 130, "\n".join(job.lines[-20:])
    assert job.lines[-1].endswith("ERROR interrupted (SIGINT)"), job.lines[-5:]
    assert not [line for line in job.lines if "could not cancel" in line], job.lines[-5:]
    assert cluster.processing() == {}  # nothing of the job runs on on the cluster
    # nor in a worker's thread (a task the scheduler forgot may still run there): nothing
    # more can be written, no wait needed to see it
    assert cluster.running_tasks() == {}
    assert work_leftovers(out, interrupted=True) == []  # chunks done may be kept (Resume)
    assert not (out / "p.DATAGEN_COMPLETE").exists()
