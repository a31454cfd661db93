"""The job's task graph on Dask against the cluster's size (issue 49, items 1 and 4).

Its size:
the sample job (the word kind: its vocab pass is quick; 40 encode chunks) on a real cluster
of one worker process of 2, 16 and 64 threads, the tasks of each pass counted by the
scheduler itself (its preload tests/dask_task_log.py), the output compared with
DirectRunner's each time.

Before, a GroupByKey's producers exported a task per (partition, bucket), both about the
cluster's threads: 292 + 96 tasks at 2 threads, 9,014 + 3,463 at 16. Now the tasks of each
pass grow at most linearly with the threads: tasks(64) / tasks(2) stays within 64 / 2 times
a small constant, and the growth from 16 to 64 threads is no steeper per thread than the
growth from 2 to 16 by more than twice (a term in threads x threads would make it 4.4
times steeper; the tree of a GroupByKey adds a level at 5, 17 and 65 threads).

A worker that joins mid-pass gets work: partitions are sized by the work (a `Create` is one
partition a work item), not by the threads present when the pass starts. A cluster of one
worker of one thread runs the encode pass (140 chunks); the worker's first chunk task is
held at the encode DoFn's set-up, before it encodes a line (tests/dask_hold_point.py), until
a worker that joined after the pass started has finished tasks of the pass's chunk stage, by
the scheduler's account; then the job ends byte-identical to DirectRunner's.
"""

import pytest

from cluster_jobs import COMMON, INPUTS, KINDS, Job, baseline, run_like_direct_runner
from clusters import wait_for
from dask_cluster import DaskCluster, close_clients
from dask_hold_point import HOLD_DIR, arm, release, taken
from dask_task_log import TASK_LOG, read_task_log
from datagen_helpers import output_bytes

pytestmark = pytest.mark.slow

THREADS = (2, 16, 64)


def _pass_tasks(threads, tmp_path, tmp_path_factory):
    log = tmp_path / ("tasks-%d.log" % threads)
    cluster = DaskCluster(tmp_path / ("dask-%d" % threads), workers=1, threads=threads,
                          scheduler_args=["--preload", "dask_task_log"],
                          env={TASK_LOG: str(log)})
    try:
        cluster.start()
        run_like_direct_runner("word", ["--runner", "DaskRunner", "--dask_client_address",
                                        cluster.address], tmp_path / ("out-%d" % threads),
                               tmp_path_factory)
    finally:
        close_clients()
        cluster.stop()
    graphs, done = read_task_log(str(log))
    tasks: dict = {}
    for name, count in graphs:
        tasks[name] = tasks.get(name, 0) + count
    assert len(tasks) == 2, graphs  # the vocab pass (the scan riding along), then encode
    assert len(done) >= sum(tasks.values()) - 2 * 20  # (a spec key is data, not run)
    return list(tasks.values())


def test_tasks_per_pass_grow_linearly_with_the_threads_and_outputs_stay_the_same(
        tmp_path, tmp_path_factory):
    assert KINDS["word"]
    counts = {threads: _pass_tasks(threads, tmp_path, tmp_path_factory) for threads in THREADS}
    print("tasks per pass (vocab, encode) by threads:", counts)
    for index in (0, 1):
        two, sixteen, many = (counts[threads][index] for threads in THREADS)
        assert many / two <= 64 / 2 * 2, counts
        assert (many - sixteen) / (64 - 16) <= 2 * max(1, (sixteen - two) / (16 - 2)), counts


def test_a_worker_that_joins_mid_pass_runs_tasks_of_that_pass(tmp_path, tmp_path_factory):
    expected, _ = baseline("word", tmp_path_factory)  # chunking changes no byte
    log, hold = tmp_path / "tasks.log", tmp_path / "hold"
    hold.mkdir()
    cluster = DaskCluster(tmp_path / "dask", workers=1, threads=1,
                          worker_args=["--preload", "dask_hold_point"],
                          worker_env={HOLD_DIR: str(hold)},
                          scheduler_args=["--preload", "dask_task_log"],
                          env={TASK_LOG: str(log)})
    job = None
    try:
        cluster.start()
        arm(hold)
        out = tmp_path / "out"
        job = Job(INPUTS + COMMON + KINDS["word"] + [
            "--encode_chunk_lines", "50", "--runner", "DaskRunner",
            "--dask_client_address", cluster.address, "--output_dir", str(out)])
        job.proc.name = "the job"
        wait_for(lambda: taken(hold), "worker-0 in its first chunk task of the encode pass",
                 [job.proc], 600)
        cluster.add_worker("late", env={HOLD_DIR: ""})

        def chunk_tasks(worker):
            graphs, done = read_task_log(str(log))
            encode = graphs[-1][0]
            return [key for key, name in done
                    if name == worker and encode in key and "Chunks" in key]
        wait_for(lambda: len(chunk_tasks("late")) >= 10, "10 chunk tasks on the late worker",
                 [job.proc], 600)
    finally:
        release(hold)
        if job is not None:
            assert job.finish() == 0, "\n".join(job.lines[-20:])
        close_clients()
        cluster.stop()
    assert chunk_tasks("worker-0"), "the held task finished where it started"
    assert output_bytes(out) == expected
