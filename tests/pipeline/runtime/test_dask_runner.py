"""The job's patch of Beam's DaskRunner (pipeline/runtime/dask_runner.py), defect by defect,
on a real dask.distributed cluster (a scheduler and 2 worker processes started here).

For each of the five defects, for the DoFns set up for every bundle (fix 8) and for the
options missing from the workers' FileSystems (fix 11): a pipeline of a few lines that is
right on the patched runner, and the same pipeline on Beam's stock DaskRunner, asserted still
wrong. When a Beam upgrade fixes a defect, its `test_stock_...` fails: that fix's part of the
patch can go. (Fixes 6, 7 and 9 show in the graph alone: test_dask_runner_stages.py.) And the
patch's own behaviour: a failed pass stops its other tasks before it raises.
"""

import os

import apache_beam as beam
import pytest
from apache_beam.runners.dask.dask_runner import DaskRunner

from dask_cluster import (EmitInFinishBundle, FailFirst, MarkRun, MarkSetup, ReadFirstLine,
                          SplitEvenOdd, WriteEach, close_clients, idle_stages, runner_options,
                          running_cluster, runs, written)
from datagen_helpers import wait_for
from pipeline.runtime.dask_runner import DatagenDaskRunner

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("dask")) as cluster:
        yield cluster


def _run(runner, cluster, build, *extra):
    pipeline = beam.Pipeline(runner=runner, options=runner_options(cluster, *extra))
    build(pipeline)
    try:
        pipeline.run().wait_until_finish()
    finally:
        close_clients()  # the stock runner never closes its client


# -- 1. Impulse -------------------------------------------------------------------------


def _impulse(out):
    return lambda p: (p | beam.Impulse() | beam.Map(lambda _: "x")
                      | beam.ParDo(WriteEach(str(out))))


def test_impulse_runs(cluster, tmp_path):
    _run(DatagenDaskRunner(), cluster, _impulse(tmp_path / "out"))
    assert written(tmp_path / "out") == ["x"]


def test_stock_runner_has_no_impulse_translation(cluster, tmp_path):
    with pytest.raises(Exception):
        _run(DaskRunner(), cluster, _impulse(tmp_path / "out"))


# -- 2. Tagged outputs ------------------------------------------------------------------


def _tagged(out):
    def build(p):
        parts = (p | beam.Create([1, 2, 3, 4, 5])
                 | beam.ParDo(SplitEvenOdd()).with_outputs("odd", main="even"))
        _ = parts.even | "even" >> beam.ParDo(WriteEach(str(out / "even")))
        _ = parts.odd | "odd" >> beam.ParDo(WriteEach(str(out / "odd")))
    return build


def test_tagged_outputs_reach_only_their_consumers(cluster, tmp_path):
    _run(DatagenDaskRunner(), cluster, _tagged(tmp_path))
    assert written(tmp_path / "even") == [2, 4]
    assert written(tmp_path / "odd") == [1, 3, 5]


def test_stock_runner_does_not_split_tagged_outputs(cluster, tmp_path):
    try:
        _run(DaskRunner(), cluster, _tagged(tmp_path))
    except Exception:
        return  # wrong by failing
    assert (written(tmp_path / "even"), written(tmp_path / "odd")) != ([2, 4], [1, 3, 5])


# -- 3. Every leaf computed -------------------------------------------------------------


def _two_branches(out):
    def build(p):
        numbers = p | beam.Create([1, 2, 3])
        _ = numbers | "a" >> beam.ParDo(WriteEach(str(out / "a")))
        _ = numbers | "b" >> beam.ParDo(WriteEach(str(out / "b")))
    return build


def test_every_branch_runs(cluster, tmp_path):
    _run(DatagenDaskRunner(), cluster, _two_branches(tmp_path))
    assert written(tmp_path / "a") == written(tmp_path / "b") == [1, 2, 3]


def test_stock_runner_computes_only_the_last_leaf(cluster, tmp_path):
    _run(DaskRunner(), cluster, _two_branches(tmp_path))
    assert written(tmp_path / "a") == [] and written(tmp_path / "b") == [1, 2, 3]


# -- 4. finish_bundle output ------------------------------------------------------------


def _finish_bundle(out):
    return lambda p: (p | beam.Create([1, 2, 3]) | beam.ParDo(EmitInFinishBundle())
                      | beam.ParDo(WriteEach(str(out))))


def test_finish_bundle_output_is_kept(cluster, tmp_path):
    _run(DatagenDaskRunner(), cluster, _finish_bundle(tmp_path / "out"))
    assert written(tmp_path / "out") == [1, 2, 3]


def test_stock_runner_drops_finish_bundle_output(cluster, tmp_path):
    _run(DaskRunner(), cluster, _finish_bundle(tmp_path / "out"))
    assert written(tmp_path / "out") == []


# -- 5. Side inputs computed once -------------------------------------------------------


def _side_input(out):
    def build(p):
        side = (p | "side" >> beam.Create([10]) | "mark" >> beam.ParDo(MarkRun(str(out / "runs"))))
        _ = (p | "main" >> beam.Create(list(range(8)))
             | beam.Map(lambda x, s: x + s, beam.pvalue.AsSingleton(side))
             | beam.ParDo(WriteEach(str(out / "out"))))
    return build


def test_a_side_input_is_computed_once_for_all_its_readers(cluster, tmp_path):
    _run(DatagenDaskRunner(), cluster, _side_input(tmp_path), "--dask_npartitions", "4")
    assert written(tmp_path / "out") == list(range(10, 18))
    assert runs(tmp_path / "runs") == 1


def test_stock_runner_computes_a_side_input_in_every_reading_task(cluster, tmp_path):
    try:
        _run(DaskRunner(), cluster, _side_input(tmp_path), "--dask_npartitions", "4")
    except Exception:
        return  # wrong by failing (the set-up DoFn does not serialize)
    assert runs(tmp_path / "runs") > 1


# -- 8. DoFns set up once a worker thread ----------------------------------------------


def _set_up(out):
    return lambda p: p | beam.Create(list(range(8))) | beam.ParDo(MarkSetup(str(out)))


def test_a_dofn_is_set_up_once_a_worker_thread(cluster, tmp_path):
    _run(DatagenDaskRunner(), cluster, _set_up(tmp_path / "setups"), "--dask_npartitions", "8")
    assert 1 <= runs(tmp_path / "setups") <= 2  # 8 bundles on 2 workers of 1 thread


def test_stock_runner_sets_a_dofn_up_for_every_bundle(cluster, tmp_path):
    _run(DaskRunner(), cluster, _set_up(tmp_path / "setups"), "--dask_npartitions", "8")
    assert runs(tmp_path / "setups") == 8


def test_a_finished_pass_leaves_no_set_up_dofns_on_the_workers(cluster, tmp_path):
    runner = DatagenDaskRunner()
    try:
        pipeline = beam.Pipeline(runner=runner, options=runner_options(cluster))
        _set_up(tmp_path / "setups")(pipeline)
        pipeline.run().wait_until_finish()
        client = runner.session.client
        # the workers are told, not waited for: until they have dropped them
        wait_for(lambda: sum(client.run(idle_stages).values()) == 0,
                 "the workers dropping the pass's set-up DoFns", seconds=300)
    finally:
        runner.close()
    assert runs(tmp_path / "setups") >= 1


# -- 11. The pipeline's options on the workers' FileSystems --------------------------------


def _read_s3(out):
    from object_store_servers import BUCKET
    return lambda p: (p | beam.Create(["s3://%s/in/dev.en" % BUCKET])
                      | beam.ParDo(ReadFirstLine(str(out))))


def _forget_file_system_options(cluster):
    """What a worker process knows before any pass (a run of the patched runner sets the
    options on the workers it ran on)."""
    from apache_beam.io.filesystems import FileSystems
    with cluster.client() as client:
        client.run(FileSystems.set_options, None)


def test_a_worker_reads_s3_with_the_pipelines_options(cluster, s3, tmp_path, data_dir):
    _forget_file_system_options(cluster)
    _run(DatagenDaskRunner(), cluster, _read_s3(tmp_path / "out"), *s3.beam_flags())
    with open(os.path.join(data_dir, "enzh-mlqe-pe", "dev.en"), encoding="utf-8") as f:
        assert written(tmp_path / "out") == [f.readline().strip()]


def test_stock_runner_gives_the_workers_file_systems_no_options(cluster, s3, tmp_path):
    _forget_file_system_options(cluster)
    with pytest.raises(Exception, match="Must provide one of client or options"):
        _run(DaskRunner(), cluster, _read_s3(tmp_path / "out"), *s3.beam_flags())


# -- the patch's own: a failed pass stops its other tasks ------------------------------------


def test_a_failed_pass_has_no_task_running_when_it_raises(cluster, tmp_path):
    """Element 0 fails while the other elements' tasks run or wait: once the pass has
    raised, none of them runs any more and nothing more is written (the driver removes the
    work directory next)."""
    out = tmp_path / "out"
    seconds = 2  # each task's run: tasks are running and waiting when element 0 fails
    with pytest.raises(Exception, match="element 0 fails"):
        _run(DatagenDaskRunner(), cluster, lambda p: (
            p | beam.Create(list(range(12))) | beam.ParDo(FailFirst(str(out), seconds))))
    listing = written(out)
    assert cluster.processing() == {}  # the scheduler's view
    assert cluster.running_tasks() == {}  # the workers': no thread still in a task, so
    assert written(out) == listing        # nothing can be written after the raise


def test_both_workers_ran_tasks(cluster):
    """The cluster is real: by now each worker process has executed tasks of these tests."""
    executed = cluster.executed()
    assert len(executed) == 2 and all(n > 0 for n in executed.values()), executed
    assert len(set(cluster.worker_pids().values())) == 2
    assert all(pid != os.getpid() for pid in cluster.worker_pids().values())


# -- a lost worker, as the job's log says it ------------------------------------------------


def test_a_lost_workers_line_counts_only_the_passs_tasks():
    """The scheduler's remove-worker event (what `LostWorkers` keeps of its "all" topic) as
    the one line the job logs: which worker, and how many of the pass's tasks run again."""
    from pipeline.runtime.dask_session import LostWorkers, lost_worker_line
    keys = {"('run_bundle-1', 0)", "('run_bundle-1', 1)", "('run_bundle-1', 2)"}
    event = {"action": "remove-worker", "worker": "tcp://127.0.0.1:4001", "expected": False,
             "processing-tasks": {("run_bundle-1", 0), ("other-job", 0)},
             "lost-computed-tasks": {("run_bundle-1", 1), ("run_bundle-1", 2)}}
    assert lost_worker_line(event, keys) == (
        "Dask worker tcp://127.0.0.1:4001 lost: 1 running and 2 finished tasks of the pass are "
        "computed again")
    idle = dict(event, **{"processing-tasks": set(), "lost-computed-tasks": set()})
    assert lost_worker_line(idle, keys) == (
        "Dask worker tcp://127.0.0.1:4001 lost; none of the pass's tasks were on it")
    events = LostWorkers()
    events((1.0, {"action": "add-worker", "worker": "tcp://127.0.0.1:4002"}))
    events((2.0, event))
    # with the event's time, the scheduler's clock (a dropped worker's line: how long silent)
    assert events.take() == [dict(event, at=2.0)] and events.take() == []
