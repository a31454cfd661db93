"""Beam's DaskRunner, patched for what this job's pipelines use: `--runner DaskRunner`.

Beam's runner (`apache_beam.runners.dask.dask_runner.DaskRunner`, Beam 2.77) translates a
pipeline into dask bags and computes them on a dask.distributed cluster. Five of its
translations go wrong on this job's passes, each shown against Beam alone by
tests/pipeline/runtime/test_dask_runner.py (which also asserts that the stock runner still
has the defect, so that a Beam upgrade fixing one says its patch can go):

1. `Impulse` has no translation: its consumers get no bag, and the pass crashes.
2. Tagged outputs are not split: every consumer of a multi-output ParDo gets every output.
3. Only the last leaf bag is computed: the other branches (other writes) never run.
4. Output from `finish_bundle` is dropped (collected before `finish_bundle` runs).
5. A side input is computed inside each task that reads it: the whole upstream is rerun for
   every consuming partition (or the set-up DoFn fails to serialize).
6. The pipeline's options never reach the workers' `FileSystems` (Beam's SDK harness sets
   them in every worker process): on a worker, Beam's S3 file system has no endpoint or
   credentials, and a DoFn that opens an `s3://` path through `FileSystems` fails.

`DatagenDaskRunner` keeps Beam's runner (its options, overrides, GroupByKey and Flatten
translations, its result) and replaces exactly these: Impulse becomes a one-element bag;
a ParDo's bundle function keeps each output's tag, collects after `finish_bundle`, and
builds its side inputs from values computed once, as graph dependencies, and sets the
pass's options on `FileSystems` before it runs (each bundle, as workers may serve several
jobs); a consumer takes its own tag's outputs; every leaf is computed. Beam's `Create` gives one partition per
element (its default of 128 elements a partition ran a pass's work items on one worker),
and `Reshuffle` spreads its input over as many partitions as the cluster has threads.

DoFns run in Dask's worker processes through Beam's in-process invoker, not the Fn API:
only the global window, no state or timers, which is all the job uses. Beam's runner reports
no metrics; here each bundle's counters go to the scheduler as an event of its task, and the
pass's result sums the last event of every task (`DatagenDaskResult.metrics`). Workers must import this project: run them from the same environment,
or `pip install` the project on them (README, Runners).
"""

import contextlib
import dataclasses
import time
import typing as t
import uuid

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics.execution import MetricKey, MetricsContainer
from apache_beam.metrics.metric import MetricResult, MetricResults
from apache_beam.metrics.metricbase import MetricName
from apache_beam.pipeline import AppliedPTransform, PipelineVisitor
from apache_beam.runners.dask import transform_evaluator as stock
from apache_beam.runners.dask.dask_runner import DaskOptions, DaskRunner, DaskRunnerResult
from apache_beam.runners.dask.overrides import _Create, _Reshuffle, dask_overrides
from apache_beam.runners.runner import PipelineState
from apache_beam.runners.worker import statesampler
from apache_beam.utils import counters as beam_counters
from apache_beam.transforms.sideinputs import SideInputMap
from apache_beam.utils.windowed_value import WindowedValue

from pipeline.runtime.runners import DatagenError

MAIN = None  # the tag of a ParDo's main output
CANCEL_SECONDS = 300  # the longest a cancelled pass's running tasks are waited for
METRICS_TOPIC = "beam-datagen-counters"  # the scheduler's event topic of bundles' counters


class _Receiver(stock.Receiver):
    """Collects one tag's outputs of a bundle as (tag, WindowedValue)."""

    def __init__(self, tag: t.Optional[str], values: list) -> None:
        self.tag = tag
        self.values = values

    def receive(self, windowed_value: WindowedValue) -> None:
        self.values.append((self.tag, windowed_value))


class _Receivers(dict):
    """A receiver per output tag, made on first use, all into one list."""

    def __init__(self) -> None:
        super().__init__()
        self.outputs: list = []

    def __missing__(self, tag):
        receiver = self[tag] = _Receiver(tag, self.outputs)
        return receiver


def _side_input_maps(side_inputs, materialized):
    """SideInputMaps over side inputs' values computed once, before the task (fix 5)."""
    return [SideInputMap(view_type, view_options,
                         [stock.get_windowed_value(v, window_fn) for v in values])
            for (view_type, view_options, window_fn), values in zip(side_inputs, materialized)]


def _run_bundle(items, pass_id, options, transform, window_fn, args, kwargs, side_inputs,
                *materialized):
    """A ParDo on one partition (a bundle): (tag, value) of every output, finish_bundle's
    included (fixes 2, 4), with the pass's `options` on FileSystems (fix 6). Receivers are
    made here, per bundle: a receiver list handed in with the task would be shared by the
    tasks of one worker thread pool."""
    FileSystems.set_options(options)
    receivers = _Receivers()
    invoker = stock.DoFnInvoker.create_invoker(
        stock.DoFnSignature(transform.fn),
        stock._OutputHandler(
            window_fn=window_fn, main_receivers=receivers[MAIN],
            tagged_receivers=receivers, per_element_output_counter=None,
            output_batch_converter=None, process_yields_batches=False,
            process_batch_yields_elements=False),
        context=stock.DoFnContext(transform.label, state=None),
        side_inputs=_side_input_maps(side_inputs, materialized),
        input_args=args, input_kwargs=kwargs, user_state_context=None,
        bundle_finalizer_param=beam.DoFn.BundleFinalizerParam())
    # The bundle's counters go to a container of its own, through a state sampler of its
    # own (a sampler keeps the first container it is given per step).
    outer = statesampler.get_current_tracker()
    sampler = statesampler.StateSampler("", beam_counters.CounterFactory())
    statesampler.set_current_tracker(sampler)
    metrics = MetricsContainer(transform.label)
    try:
        with sampler.scoped_state(transform.label, "process", metrics_container=metrics):
            invoker.invoke_setup()
            invoker.invoke_start_bundle()
            for item in items:
                invoker.invoke_process(stock.get_windowed_value(item, window_fn))
            invoker.invoke_finish_bundle()
            invoker.invoke_teardown()
    finally:
        statesampler.set_current_tracker(outer)
    _report_counters(pass_id, transform.label, metrics)
    return [(tag, value.value) for tag, value in receivers.outputs]


def _report_counters(pass_id, step, metrics) -> None:
    """Sends the bundle's Beam counters to the scheduler as an event of the task (Beam's
    runner collects none): the driver sums the last event of each task, so a task rerun
    after a lost worker counts once, as committed metrics do."""
    counters = [(key.metric.namespace, key.metric.name, value)
                for key, value in metrics.get_cumulative().counters.items() if value]
    if counters:
        from distributed import get_worker
        worker = get_worker()
        worker.log_event(METRICS_TOPIC, {"pass": pass_id, "task": str(worker.get_current_task()),
                                         "step": step, "counters": counters})


def _is_pardo(transform) -> bool:
    """A ParDo the translation runs. Not a subclass: Beam's runner translates its
    GroupAlsoByWindow ParDo (after GroupByKey, which already groups) as the identity."""
    return type(transform) is beam.ParDo


def _of_tag(outputs, tag):
    return [value for output_tag, value in outputs if output_tag == tag]


def _concat(*partitions):
    return [value for partition in partitions for value in partition]


@dataclasses.dataclass
class _Translator(PipelineVisitor):
    """Builds a dask bag per applied transform (as Beam's visitor does) with the fixes."""

    bag_kwargs: dict
    threads: int
    pass_id: str
    options: t.Any  # the pass's PipelineOptions, for the workers' FileSystems
    bags: dict = dataclasses.field(default_factory=dict)
    consumed: set = dataclasses.field(default_factory=set)

    def _input(self, pcoll):
        self.consumed.add(pcoll.producer)
        bag = self.bags[pcoll.producer]
        if _is_pardo(pcoll.producer.transform):
            bag = bag.map_partitions(_of_tag, pcoll.tag)  # fix 2
        return bag

    def visit_transform(self, node: AppliedPTransform) -> None:
        import dask
        import dask.bag as db
        transform = node.transform
        inputs = [self._input(p) for p in node.inputs if not isinstance(p, pvalue.PBegin)]
        if isinstance(transform, beam.Impulse):  # fix 1
            bag = db.from_sequence([b""], npartitions=1)
        elif isinstance(transform, _Create):
            values = list(transform.values)
            count = self.bag_kwargs.get("npartitions") or max(1, len(values))
            bag = db.from_sequence(values, npartitions=count) if values else \
                db.from_sequence([], npartitions=1)
        elif isinstance(transform, _Reshuffle):
            bag = inputs[0].repartition(npartitions=max(inputs[0].npartitions, self.threads))
        elif _is_pardo(transform):
            main = next(iter(node.main_inputs.values()))
            window_fn = main.windowing.windowfn if hasattr(main, "windowing") else None
            args, kwargs = transform.raw_side_inputs
            side_inputs, materialized = [], []
            for side in node.side_inputs:  # fix 5: each computed once, a graph dependency
                self.consumed.add(side.pvalue.producer)
                side_bag = self._input(side.pvalue)
                side_inputs.append((type(side), side._view_options(), side._window_mapping_fn))
                materialized.append(dask.delayed(_concat)(*side_bag.to_delayed()))
            bag = inputs[0].map_partitions(_run_bundle, self.pass_id, self.options, transform,
                                           window_fn, list(args), kwargs, side_inputs,
                                           *materialized)
        else:  # Beam's own translation (GroupByKey, Flatten) or its identity
            op = stock.TRANSLATIONS.get(type(transform), stock.NoOp)(
                node, bag_kwargs=self.bag_kwargs)
            bag = op.apply(input_bag=inputs if isinstance(op, stock.Flatten) else
                           (inputs[0] if inputs else None))
        if bag is not None:
            self.bags[node] = bag

    def leaves(self) -> list:
        """Every bag no other transform reads (fix 3): each branch's last step."""
        return [bag for node, bag in self.bags.items() if node not in self.consumed]


def _imports_project() -> bool:
    """On a worker: whether it can import this project's packages."""
    import importlib.util
    return all(importlib.util.find_spec(name) is not None for name in ("pipeline", "transforms"))


def _running_of(keys, dask_worker=None) -> list:
    """On a worker: the tasks of `keys` whose code still runs there."""
    return [key for key, task in dask_worker.state.tasks.items()
            if str(key) in keys and task.state in ("executing", "long-running", "cancelled",
                                              "resumed")]


def _on_each_worker(client, function, *args) -> dict:
    """{worker: function(*args)} of every worker that answers: a worker lost at this moment
    (its host gone, not yet removed by the scheduler) is left out, not an error, as Dask
    reschedules its tasks."""
    done = client.run(function, *args, on_error="return")
    return {worker: value for worker, value in done.items()
            if not isinstance(value, BaseException)}


class _CounterResults(MetricResults):
    """Beam's MetricResults over the counters of one pass on Dask (committed = attempted:
    each task counted once)."""

    def __init__(self, counters: dict) -> None:
        self._results = [MetricResult(MetricKey(step, MetricName(namespace, name)), value, value)
                         for (step, namespace, name), value in sorted(counters.items())]

    def query(self, filter=None) -> dict:
        return {"counters": [r for r in self._results if self.matches(filter, r.key)],
                "distributions": [], "gauges": []}


class DatagenDaskResult(DaskRunnerResult):
    """Beam's result, which also collects the pass's counters when it ends, closes the
    pass's client, and cancels the pass so that none of its tasks runs on."""

    keys: frozenset = frozenset()  # the pass's task keys
    pass_id = ""  # what the pass's counter events carry
    counters: t.Optional[dict] = None  # {(step, namespace, name): value}, once finished

    def wait_until_finish(self, duration=None) -> str:
        try:
            state = super().wait_until_finish(duration)
        except BaseException:
            # A failed task fails the pass, but Dask runs the pass's other tasks on: stop
            # them before the driver removes the work directory they write into (on a
            # cluster of other hosts they would write after it, and leave files behind).
            with contextlib.suppress(Exception):
                self.cancel()
            self._state = PipelineState.FAILED
            raise
        try:
            self.counters = self._collect_counters()
        finally:
            self.client.close()
        return state

    def _collect_counters(self) -> dict:
        last = {}  # the last event of each bundle (a task runs one bundle of each step)
        for _, event in self.client.get_events(METRICS_TOPIC):
            if event["pass"] == self.pass_id:
                last[event["task"], event["step"]] = event
        counters: dict = {}
        for event in last.values():
            for namespace, name, value in event["counters"]:
                key = (event["step"], namespace, name)
                counters[key] = counters.get(key, 0) + value
        return counters

    def metrics(self) -> _CounterResults:
        if self.counters is None:
            raise RuntimeError("the pass has not finished")
        return _CounterResults(self.counters)

    def cancel(self) -> str:
        """Cancels the pass's tasks and returns once none of them runs on a worker any more
        (a cancelled task's thread runs to its end: Dask cannot stop it), so nothing of the
        pass writes after the driver has stopped; then closes the client. Once is enough
        (a failed pass cancels itself)."""
        if self.client.status in ("closing", "closed"):
            return self._state
        self._state = PipelineState.CANCELLING
        try:
            self.client.cancel(self.futures, force=True)
            deadline = time.time() + CANCEL_SECONDS
            while time.time() < deadline and any(_on_each_worker(
                    self.client, _running_of, self.keys).values()):
                time.sleep(0.2)
        finally:
            self.client.close()
        self._state = PipelineState.CANCELLED
        return self._state


class DatagenDaskRunner(DaskRunner):
    """Beam's DaskRunner with the job's five fixes (module docstring)."""

    def run_pipeline(self, pipeline, options):
        import dask
        import dask.distributed as ddist
        dask_options = options.view_as(DaskOptions).get_all_options(
            drop_default=True, current_only=True)
        bag_kwargs = DaskOptions._extract_bag_kwargs(dask_options)
        client = ddist.Client(**dask_options)
        try:
            missing = sorted(a for a, ok in _on_each_worker(client, _imports_project).items()
                             if not ok)
            if missing:
                raise DatagenError(
                    "Dask workers %s cannot import this project (pipeline, transforms): start "
                    "them from the job's environment, or pip install the project on them "
                    "(README, Runners)" % ", ".join(missing))
            threads = sum(client.nthreads().values()) or 1
            pipeline.replace_all(dask_overrides())
            translator = _Translator(bag_kwargs, threads, uuid.uuid4().hex, options)
            pipeline.visit(translator)
            leaves = dask.optimize(*translator.leaves())
            futures = client.compute(leaves)
        except BaseException:
            client.close()
            raise
        result = DatagenDaskResult(client, futures)
        result.pass_id = translator.pass_id
        result.keys = frozenset(str(key) for leaf in leaves for key in leaf.__dask_graph__())
        return result
