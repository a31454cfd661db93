"""How the job's Dask runner (pipeline/runtime/dask_runner.py) cuts a pass into stages and
tasks, read from the graph it builds (nothing runs: no cluster), and the behaviours of Beam's
stock DaskRunner that this works around, asserted still there (fixes 6, 7 and 9 of the
module's docstring; the ones that need a cluster are in test_dask_runner.py):

- a chain of ParDos, tagged outputs and a Flatten are one task per partition;
- a `Create` is one partition a work item (its element), a `GroupByKey` hashes into as
  many partitions as threads, a `Reshuffle` deals into two a thread, or more when more
  tasks produce its input;
- a ParDo whose side input depends on its own main input starts a stage of its own;
- a pass's task count grows with its partitions, not with a shuffle's fan-out (the
  exchange itself: test_dask_exchange.py).
"""

import apache_beam as beam
import dask
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.dask.dask_runner import DaskRunner
from apache_beam.runners.dask.overrides import dask_overrides

from pipeline.runtime.dask_runner import DatagenDaskRunner, _Translator

PASS_ID = "0123456789abcdef" * 2


def _translate(build, threads=2, **bag_kwargs):
    pipeline = beam.Pipeline(options=PipelineOptions())
    build(pipeline)
    pipeline.replace_all(dask_overrides())
    translator = _Translator(threads, PASS_ID, bag_kwargs)
    pipeline.visit(translator)
    dsk, leaves = translator.graph()
    return translator.stages, dsk, leaves


def _stage_tasks(dsk):
    """{stage name: tasks} of the graph's stage tasks (not its spec, export or side keys)."""
    counts = {}
    for key in dsk:
        name = key[0].split("-", 2)[2]
        if name[:1].isdigit():
            counts[name.split("-", 1)[1]] = counts.get(name.split("-", 1)[1], 0) + 1
    return counts


def _split(x):
    if x % 2:
        yield beam.pvalue.TaggedOutput("odd", x)
    else:
        yield x


def _chain(p):
    parts = (p | beam.Create(list(range(6))) | "Double" >> beam.Map(lambda x: 2 * x + 1)
             | "Split" >> beam.FlatMap(_split).with_outputs("odd", main="even"))
    both = (parts.even | "Even" >> beam.Map(str), parts.odd | "Odd" >> beam.Map(str))
    _ = both | beam.Flatten() | "Last" >> beam.Map(len)


def test_a_chain_with_tagged_outputs_and_a_flatten_is_one_task_a_partition():
    stages, dsk, leaves = _translate(_chain)
    assert len(stages) == 1
    assert [s.partitions for s in stages] == [6]  # one a work item
    assert _stage_tasks(dsk) == {"Create": 6}
    assert len(leaves) == 6


def _grouped(p):
    _ = (p | beam.Create(list(range(12))) | beam.FlatMap(lambda x: range(100 * x, 100 * x + 100))
         | beam.Map(lambda x: (x % 7, x))
         | beam.GroupByKey() | beam.MapTuple(lambda k, v: (k, sum(v))))


@pytest.mark.parametrize("threads", [1, 2, 8])
def test_a_group_by_key_has_as_many_partitions_as_the_cluster_has_threads(threads):
    stages, dsk, leaves = _translate(_grouped, threads)
    assert [s.partitions for s in stages] == [12, threads]
    # each producing task returns its buckets as one result; a consumer reads at most FAN
    # results of the exchange's tree (dask_exchange), which adds no more than its producers
    routes = [key for key in dsk if "-route-" in key[0]]
    assert len(dsk) == 2 + 12 + len(routes) + threads
    assert len(routes) <= 12 + threads
    assert len(leaves) == threads


def test_a_reshuffle_deals_into_two_partitions_a_thread():
    stages, _, _ = _translate(lambda p: p | beam.Create(list(range(3))) | beam.Reshuffle()
                              | beam.Map(str), threads=3)
    assert [s.partitions for s in stages] == [3, 6]  # a Create of 3 elements: 3 partitions


def test_dask_npartitions_sets_the_partitions_of_a_create():
    stages, _, _ = _translate(_grouped, 2, npartitions=3)
    assert [s.partitions for s in stages] == [3, 2]


def test_a_side_input_of_its_own_stage_starts_a_stage():
    def build(p):
        numbers = p | beam.Create(list(range(10))) | "Square" >> beam.Map(lambda x: x * x)
        total = numbers | beam.CombineGlobally(sum)
        _ = numbers | "Share" >> beam.Map(lambda x, t: x / t, beam.pvalue.AsSingleton(total))
    stages, dsk, _ = _translate(build)
    share = [s for s in stages if any(step.label == "Share" for step in s.steps)]
    assert share[0].kind == "part" and share[0].partitions == stages[0].partitions
    assert len(share[0].sides) == 1
    # each side input gathered once for all its readers (CombineGlobally reads one itself)
    sides = {id(side) for stage in stages for side in stage.sides}
    assert sum(1 for key in dsk if "-side" in key[0]) == len(sides)


def test_a_side_input_of_another_stage_is_fused():
    def build(p):
        offset = p | "Offset" >> beam.Create([10])
        _ = (p | "Numbers" >> beam.Create(list(range(10)))
             | "Add" >> beam.Map(lambda x, o: x + o, beam.pvalue.AsSingleton(offset)))
    stages, _, _ = _translate(build)
    assert len(stages) == 2
    assert [step.label for step in stages[1].steps] == ["Add"]
    assert stages[1].deps == {0}


# -- Beam's stock runner, for comparison -------------------------------------------------


def _stock_graph(build):
    pipeline = beam.Pipeline(options=PipelineOptions())
    build(pipeline)
    pipeline.replace_all(dask_overrides())
    visitor = DaskRunner.to_dask_bag_visitor()
    # the shuffle the stock runner's GroupByKey gets with a distributed client (p2p, its
    # default there, is not implemented for bags: dask falls back to the task shuffle)
    with dask.config.set({"dataframe.shuffle.method": "tasks"}):
        pipeline.visit(visitor)
    return list(visitor.bags.values())


def test_stock_group_by_key_is_a_task_shuffle_of_hundreds_of_tasks():
    """Fix 6: the stock translation's graph of the same pipeline is a task shuffle."""
    def grouped(p):  # 8 partitions of Beam's stock Create (128 elements each)
        _ = (p | beam.Create(list(range(1000))) | beam.Map(lambda x: (x % 7, x))
             | beam.GroupByKey() | beam.MapTuple(lambda k, v: (k, sum(v))))
    stock = dict(_stock_graph(grouped)[-1].__dask_graph__())
    ours = _translate(grouped, 2, npartitions=8)[1]
    assert any("shuffle" in str(key) for key in stock)
    assert len(stock) > 10 * len(ours), (len(stock), len(ours))


def test_stock_create_puts_up_to_128_elements_in_a_partition():
    """Fix 7: a Create of a pass's 8 work items is one partition, one task, one worker."""
    bags = _stock_graph(lambda p: p | beam.Create(list(range(8))))
    assert bags[0].npartitions == 1
    assert _translate(lambda p: p | beam.Create(list(range(8))))[0][0].partitions == 8


class _Stop(Exception):
    pass


@pytest.mark.parametrize("runner", [DaskRunner, DatagenDaskRunner])
def test_stock_pipeline_run_round_trips_through_the_runner_api(runner, monkeypatch):
    """Fix 9: Pipeline.run pickles and unpickles every pass on the driver before the stock
    runner sees it (it is no Fn API runner); the job's runner skips that."""
    calls = []
    original = beam.Pipeline.to_runner_api
    monkeypatch.setattr(beam.Pipeline, "to_runner_api",
                        lambda self, *a, **k: calls.append(1) or original(self, *a, **k))

    class Probe(runner):
        def run_pipeline(self, pipeline, options):
            raise _Stop()

    pipeline = beam.Pipeline(runner=Probe(), options=PipelineOptions())
    _ = pipeline | beam.Create([1]) | beam.Map(str)
    with pytest.raises(_Stop):
        pipeline.run()
    assert len(calls) == (1 if runner is DaskRunner else 0)
