"""The job on a real Flink 1.20 session cluster (a JobManager and 2 TaskManagers of 2 slots,
a fixed-delay restart strategy of 3 attempts), through Beam's Flink job server jar (one per
job) and Beam's stock worker pool (EXTERNAL environment): byte-identical to DirectRunner for
every vocabulary kind, every pass a Flink job; an SDK worker killed during the encode pass and
a TaskManager killed during it are survived; without retries the job fails with one line and
a rerun completes; a job server of another Flink version than the cluster's is refused before
anything runs (this one needs no jar). Installs and downloads are cached
(`tests/clusters.py`); where they are not possible the tests skip with the reason (fail under
CI=true).
"""

import os
import signal

import pytest

import clusters
from cluster_jobs import (COMMON, INPUTS, KINDS, Job, baseline, run_like_direct_runner,
                          work_leftovers)
from datagen_helpers import output_bytes, wait_for
from pipeline import datagen

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster_and_pool(tmp_path_factory):
    """(cluster, worker pool), started once for the module and stopped with it."""
    try:
        cluster = clusters.FlinkCluster(str(tmp_path_factory.mktemp("flink")))
    except clusters.Unavailable as e:
        clusters.unavailable(str(e))
    with clusters.running_with_pool(cluster) as pool:
        yield cluster, pool


@pytest.fixture(scope="module")
def flink(cluster_and_pool):
    """(cluster, worker pool, runner flags) with Beam's Flink job server jar."""
    try:
        jar = clusters.job_server_jar(clusters.FLINK_JOB_SERVER)
    except clusters.Unavailable as e:
        clusters.unavailable(str(e))
    cluster, pool = cluster_and_pool
    return cluster, pool, clusters.runner_flags(cluster, jar, pool, parallelism=2)


def test_a_job_server_of_another_flink_version_is_refused_before_anything_runs(
        cluster_and_pool, tmp_path, capsys):
    """Beam's default --flink_version is 2.2; against this 1.20 cluster its job server
    would fail only at submission. The job asks the cluster first: exit 2, one line."""
    cluster, pool = cluster_and_pool
    base = INPUTS + COMMON + ["--runner", "FlinkRunner", "--flink_master", cluster.master,
                              "--environment_type", "EXTERNAL", "--environment_config",
                              pool.address, "--output_dir", str(tmp_path / "out")]
    for extra, named in (([], "--flink_version 2.2"),
                         (["--flink_job_server_jar", "/jars/beam-runners-flink-1.19-job-"
                           "server-2.77.0.jar"], "beam-runners-flink-1.19-job-server")):
        assert datagen.main(base + extra) == 2
        errors = [line for line in capsys.readouterr().err.splitlines() if " ERROR " in line]
        assert len(errors) == 1, errors
        assert "runs Flink %s" % clusters.FLINK_VERSION in errors[0] and named in errors[0]
        assert "pass --flink_version %s" % clusters.FLINK_MINOR in errors[0]
    assert cluster.jobs() == []  # nothing was submitted


def _finished_jobs(cluster):
    return sorted((j for j in cluster.jobs() if j["state"] == "FINISHED"),
                  key=lambda j: j["start-time"])


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_pass_runs_on_flink_byte_identical_to_direct_runner(flink, kind, tmp_path,
                                                                   tmp_path_factory):
    cluster, _, runner = flink
    before = len(_finished_jobs(cluster))
    summary = run_like_direct_runner(kind, runner, tmp_path / "out", tmp_path_factory)
    assert len(_finished_jobs(cluster)) - before == summary["passes"]  # each pass a job


def _run_killing(runner, out, kill, extra=()):
    """Runs the subword sample job as a command and calls `kill()` once its encode pass
    has started; returns the finished Job."""
    job = Job(INPUTS + COMMON + runner + list(extra) + ["--output_dir", str(out)])
    try:
        job.wait_for_line(": encode ")
        kill()
        job.finish()
    finally:
        if job.proc.poll() is None:
            job.proc.kill()
    return job


def _kill_an_sdk_worker(cluster, pool):
    """Kills (SIGKILL) an SDK worker of the encode pass once its Flink job runs tasks."""
    _wait_for_running_tasks(cluster)
    workers = wait_for(pool.sdk_workers, "an SDK worker started")
    os.kill(workers[-1], signal.SIGKILL)
    return workers[-1]


def _wait_for_running_tasks(cluster):
    """Waits until a job of the cluster is RUNNING with tasks deployed and running (its
    vertices' task counts, from Flink's REST API)."""
    def running_tasks():
        for job in cluster.jobs():
            if job["state"] == "RUNNING" and any(
                    v["tasks"].get("RUNNING", 0) for v in
                    cluster.get("/jobs/%s" % job["jid"])["vertices"]):
                return True
        return False
    wait_for(running_tasks, "a Flink job running its tasks")


def _restarts(cluster, job):
    return cluster.get("/jobs/%s/exceptions" % job["jid"])["exceptionHistory"]["entries"]


def test_an_sdk_worker_killed_during_encoding_is_retried(flink, tmp_path, tmp_path_factory):
    cluster, pool, runner = flink
    expected, _ = baseline("subword", tmp_path_factory)
    killed = []
    job = _run_killing(runner, tmp_path / "out",
                       lambda: killed.append(_kill_an_sdk_worker(cluster, pool)))
    assert job.proc.returncode == 0, "\n".join(job.lines[-20:])
    assert killed
    assert output_bytes(tmp_path / "out") == expected
    encode = _finished_jobs(cluster)[-1]
    assert _restarts(cluster, encode)  # the kill failed a task, and Flink restarted it
    assert work_leftovers(tmp_path / "out") == []


def test_without_retries_a_killed_worker_fails_the_pass_in_one_line_then_a_rerun_completes(
        flink, tmp_path, tmp_path_factory):
    cluster, pool, runner = flink
    expected, _ = baseline("subword", tmp_path_factory)
    out = tmp_path / "out"
    job = _run_killing(runner, out, lambda: _kill_an_sdk_worker(cluster, pool),
                       ["--number_of_execution_retries", "0"])
    assert job.proc.returncode == 1
    (error,) = job.errors()
    assert ": encode " in error and "failed on FlinkRunner" in error
    assert not [n for n in os.listdir(out) if "-train-" in n or n.endswith("COMPLETE")]
    rerun = Job(INPUTS + COMMON + runner + ["--output_dir", str(out)])
    assert rerun.finish() == 0, "\n".join(rerun.lines[-20:])
    assert output_bytes(out) == expected
    assert work_leftovers(out) == []


def test_a_task_manager_killed_during_encoding_is_survived(flink, tmp_path, tmp_path_factory):
    """Last in the module: it leaves the cluster with a new TaskManager in place of the
    killed one."""
    cluster, _, runner = flink
    expected, _ = baseline("subword", tmp_path_factory)
    victim = cluster.task_manager_procs[0]

    def kill():
        _wait_for_running_tasks(cluster)  # the encode pass's job, its tasks deployed
        os.killpg(victim.pid, signal.SIGKILL)
    job = _run_killing(runner, tmp_path / "out", kill)
    victim.wait()
    try:
        assert job.proc.returncode == 0, "\n".join(job.lines[-20:])
        assert output_bytes(tmp_path / "out") == expected
        assert work_leftovers(tmp_path / "out") == []
        assert _restarts(cluster, _finished_jobs(cluster)[-1])  # it failed and restarted
    finally:
        cluster.task_manager_procs.remove(victim)
        cluster.start_task_manager(len(cluster.procs.procs))
