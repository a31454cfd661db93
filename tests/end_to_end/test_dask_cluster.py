"""The job on a real dask.distributed cluster through `--runner DaskRunner` (Beam's runner,
patched: pipeline/runtime/dask_runner.py): a scheduler and 2 worker processes, each under
its nanny, started here on 127.0.0.1 and stopped by process group.

- every pass runs on the cluster, both workers execute tasks, the output is byte-identical to
  DirectRunner's and the summary's counters equal DirectRunner's;
- a worker process killed with -9 while the encode pass runs: its nanny restarts it, Dask
  reruns its tasks, and the output is still byte-identical (no record lost or written twice);
  the job says so in one line (which worker, what of the pass runs again), and with the
  workers stopped (SIGSTOP) during the vocab pass it says where that pass stands, as on
  DirectRunner (tests/end_to_end/test_progress.py);
- Ctrl-C of the driver cancels the pass on the cluster: exit 130, and no task of the job
  runs on a worker afterwards, nothing more is written.
"""

import json
import os
import re
import signal
import time

import psutil
import pytest

from cluster_jobs import (COMMON, INPUTS, VOCAB_LINE, Job, baseline, books,
                          stopped_until_said_twice, work_leftovers)
from dask_cluster import running_cluster
from datagen_helpers import output_bytes

pytestmark = pytest.mark.slow

# 160 encode chunks of 50 lines: the encode pass is many tasks, still running when a test
# kills a worker or the driver.
MANY_CHUNKS = ["--encode_chunk_lines", "50"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("dask")) as cluster:
        yield cluster


def _flags(cluster):
    return ["--runner", "DaskRunner", "--dask_client_address", cluster.address]


def _summary(out):
    return json.loads((out / "p.datagen_summary.json").read_text())


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


def test_a_worker_killed_during_the_encode_pass_is_survived(cluster, tmp_path,
                                                            tmp_path_factory):
    expected, direct = baseline("subword", tmp_path_factory)  # chunking changes no byte
    out = tmp_path / "out"
    pids = cluster.worker_pids()
    job = Job(INPUTS + COMMON + MANY_CHUNKS + _flags(cluster) + [
        "--output_dir", str(out), "--progress_seconds", "0.5"])
    job.wait_for_line("pass 1 of ")
    # the vocab pass slowed: its progress lines, from the marks its tasks left on the cluster
    stopped_until_said_twice(job, [psutil.Process(pid) for pid in pids.values()], "pass 1: ")
    job.wait_for_line("pass 2 of 2: encode")
    # kill the worker process as soon as it runs a task of the encode pass
    victim = "worker-0"
    deadline = time.time() + 120
    while time.time() < deadline and victim not in cluster.processing():
        time.sleep(0.01)
    killed_while_running = not any("pass 2 done" in line for line in job.lines)
    os.kill(pids[victim], signal.SIGKILL)
    assert job.finish() == 0, "\n".join(job.lines[-20:])
    assert killed_while_running, "the encode pass ended before the kill; nothing was tested"
    deadline = time.time() + 120
    while time.time() < deadline and len(cluster.worker_pids()) < 2:
        time.sleep(0.5)
    restarted = cluster.worker_pids()
    assert restarted[victim] != pids[victim]  # the nanny started a new worker process
    assert output_bytes(out) == expected
    assert books(_summary(out)) == books(direct)
    assert _summary(out)["metrics"] == direct["metrics"]  # a rerun task counted once
    assert work_leftovers(out) == []
    lines = job.lines
    vocab = [line for line in lines if line[9:].startswith("pass 1: ")]
    assert len(vocab) >= 2 and all(VOCAB_LINE.match(line) for line in vocab), vocab
    lost = [i for i, line in enumerate(lines) if "WARNING pass 2: Dask worker tcp://" in line]
    assert len(lost) == 1 and " lost" in lines[lost[0]], lines
    assert re.search(r"lost(: \d+ running and \d+ finished tasks of the pass are computed "
                     r"again|; none of the pass's tasks were on it)$", lines[lost[0]]), \
        lines[lost[0]]
    start = next(i for i, line in enumerate(lines) if "pass 2 of 2: encode" in line)
    done = next(i for i, line in enumerate(lines) if "pass 2 done" in line)
    assert start < lost[0] < done


def test_ctrl_c_cancels_the_pass_on_the_cluster(cluster, tmp_path):
    out = tmp_path / "out"
    job = Job(INPUTS + COMMON + MANY_CHUNKS + _flags(cluster) + ["--output_dir", str(out)])
    job.wait_for_line("pass 2 of 2: encode")
    deadline = time.time() + 120
    while time.time() < deadline and not cluster.processing():
        time.sleep(0.01)
    job.proc.send_signal(signal.SIGINT)
    assert job.finish() == 130, "\n".join(job.lines[-20:])
    assert job.lines[-1].endswith("ERROR interrupted (SIGINT)"), job.lines[-5:]
    assert cluster.processing() == {}  # nothing of the job runs on on the cluster
    listing = sorted(os.listdir(out))
    time.sleep(2)
    assert sorted(os.listdir(out)) == listing  # and nothing more is written
    assert work_leftovers(out) == []
    assert not (out / "p.DATAGEN_COMPLETE").exists()
