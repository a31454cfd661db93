"""The job's connection to a Dask cluster, opened once for all of its passes.

Beam's DaskRunner connects a new client for every pipeline; a job of several passes then
paid the connection, the check of its workers and their imports once per pass. `DaskSession`
connects once (`start`), before the first pass is built, and:

- checks that the scheduler and every worker run the driver's project: the same Python
  (major.minor), apache-beam and t2t-beam-datagen, from the same source files
  (`pipeline.runtime.dask_worker.project_identity`, shipped by value so that it runs where the
  project is missing or differs). A worker that does not is refused with one line naming it
  (`DatagenError`, exit 2); a worker lost during the check is left to Dask (its tasks run
  elsewhere); a worker that joins later is checked before the next pass;
- registers the job's worker plugin (`dask_worker.DatagenWorker`), which warms every worker
  up (Beam, the project, the compiled loops) in the background while the driver builds the
  pass, and holds the workers' set-up stages; the scheduler warms up too;
- turns "no scheduler at that address" and "the scheduler went away" into one line
  (`scheduler_lost`), and says which workers have stopped answering the scheduler
  (`silent_workers`: the scheduler's own view, for the pass's progress lines).

`DatagenDaskResult` is a pass's result on it: it sums the pass's counters from the events its
tasks sent the scheduler (`pass_counters`), and cancels the pass so that none of its tasks
runs on after the driver stopped.
"""

import contextlib
import logging
import threading
import time
import warnings
from typing import Any, Collection, Dict, List, Optional

from apache_beam.metrics.execution import MetricKey
from apache_beam.metrics.metric import MetricResult, MetricResults
from apache_beam.metrics.metricbase import MetricName
from apache_beam.runners.dask.dask_runner import DaskRunnerResult
from apache_beam.runners.runner import PipelineState

from pipeline.runtime import dask_worker
from pipeline.runtime.errors import DatagenError, one_line

LOG = logging.getLogger("datagen")
CLIENT_LOG = logging.getLogger("distributed.client")
CANCEL_SECONDS = 300  # the longest a cancelled pass's running tasks are waited for
ALL_TOPIC = "all"  # the scheduler's topic of every event (a worker removed, among them)
METRICS_TOPIC = "beam-datagen-counters"  # the scheduler's event topic of tasks' counters
SILENT_SECONDS = 15.0  # a worker silent this long (heartbeats every 0.5-5 s) is named
SILENT_REPEAT_SECONDS = 60.0  # and named again this often while it stays silent
LOOK_SECONDS = 5.0  # how often a running pass asks the scheduler about its workers
HOW_TO_FIX = ("run the scheduler and every worker from the driver's environment or from the "
              "project's image (docs/runners.md, Dask on a cluster)")
IDENTITY_FIELDS = (("python", "Python"), ("apache-beam", "apache-beam"),
                   ("version", dask_worker.DISTRIBUTION))


def difference(mine: dict, theirs: Any) -> Optional[str]:
    """What makes `theirs` (a project_identity, or the exception its check raised) differ
    from the driver's `mine`, in a few words; None when they match."""
    if isinstance(theirs, BaseException):
        return "could not run the job's check (%s: %s)" % (type(theirs).__name__,
                                                             one_line(theirs, 200))
    if "error" in theirs:
        return "cannot import this project (%s)" % theirs["error"]
    differ = ["runs %s %s, the driver %s" % (label, theirs.get(field) or "(none)", mine[field])
              for field, label in IDENTITY_FIELDS if theirs.get(field) != mine[field]]
    if not differ and theirs.get("code") != mine["code"]:
        differ.append("runs %s %s from other source files than the driver's (%s)" % (
            dask_worker.DISTRIBUTION, theirs.get("version"), theirs.get("location")))
    return "; ".join(differ) or None


def mismatched_versions(table: str) -> str:
    """distributed's VersionMismatchWarning (a table of packages whose versions differ between
    the client, the scheduler and the workers) as one line."""
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in table.splitlines() if line.strip().startswith("|")]
    if len(rows) < 2:
        return one_line(table)
    header, rows = rows[0], rows[1:]
    return "other package versions on the Dask cluster than the driver's: " + "; ".join(
        "%s: %s" % (row[0], ", ".join("%s %s" % (h.lower(), v) for h, v in zip(header[1:],
                                                                           row[1:])))
        for row in rows)


def is_connection_error(error: BaseException) -> bool:
    """An error of a comm to the scheduler or a worker (distributed's CommClosedError is an
    OSError), rather than one of the job's code."""
    return isinstance(error, (OSError, TimeoutError))


class DaskSession:
    """A client of the Dask cluster that Beam's `--dask_*` flags name (`client_kwargs`, as
    `distributed.Client` takes them), for every pass of one job; `close()` at the end."""

    def __init__(self, client_kwargs: Dict[str, Any], bag_kwargs: Dict[str, Any]) -> None:
        self.bag_kwargs = bag_kwargs  # --dask_npartitions, --dask_partition_size
        self._client_kwargs = client_kwargs  # the other --dask_* flags, as Client's
        self.address = (client_kwargs.get("address") or client_kwargs.get("scheduler_file")
                        or "a local cluster")
        self.client: Any = None
        self._identity: Dict[str, Any] = {}
        self._checked: set = set()  # workers found to run the driver's project
        self._silent: Dict[str, float] = {}  # worker -> when it was last named silent
        # worker -> its last heartbeat (the scheduler's clock) while silent: the line for its
        # removal says how long it was silent then
        self.last_seen: Dict[str, float] = {}
        self.ttl: Optional[float] = None  # the scheduler's worker-ttl, once asked
        self._next_look = 0.0
        self._looking: Optional[threading.Thread] = None  # asking the scheduler, if alive
        self._view: Optional[tuple] = None  # its last answer, not yet reported
        self._client_log_level = logging.NOTSET

    def start(self) -> "DaskSession":
        """Connects (once), checks the scheduler and the workers not checked yet, and, the
        first time, registers the job's worker plugin. DatagenError when the scheduler does
        not answer (or went away), or a process of the cluster does not run the driver's
        project."""
        first = self.client is None
        if first:
            self._connect()
        try:
            if first:
                self._identity = dask_worker.project_identity()
                try:
                    theirs = self.client.run_on_scheduler(dask_worker.project_identity)
                except Exception as e:
                    if self.lost(e):
                        raise
                    theirs = e
                problem = difference(self._identity, theirs)
                if problem:
                    raise DatagenError("the Dask scheduler at %s %s: it unpickles the job's "
                                       "task graphs, so it needs the project too; %s" % (
                                           self.address, problem, HOW_TO_FIX))
            self.check_workers()
            if first:
                self._register_plugin()
                self.client.run_on_scheduler(dask_worker.warm_scheduler)
        except DatagenError:
            self.close()
            raise
        except Exception as e:
            if self.lost(e):
                raise self.scheduler_lost(e) from None
            raise
        return self

    def _register_plugin(self) -> None:
        """Registers the job's worker plugin: the scheduler keeps it for the workers that
        join later, and sends it to those it has; one that dies meanwhile fails the
        scheduler's broadcast, not the job (the nanny's new worker gets the plugin)."""
        try:
            self.client.register_plugin(dask_worker.DatagenWorker(),
                                        name=dask_worker.PLUGIN_NAME)
        except Exception as e:
            if not is_connection_error(e) or self.client.status != "running":
                raise
            LOG.debug("a Dask worker left while the job's plugin was registered: %s", e)

    def _connect(self) -> None:
        import cloudpickle
        import dask.distributed as ddist
        from distributed.versions import VersionMismatchWarning
        cloudpickle.register_pickle_by_value(dask_worker)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", VersionMismatchWarning)
                self.client = ddist.Client(**self._client_kwargs)
            for warning in caught:
                LOG.warning("%s", mismatched_versions(str(warning.message)))
        except Exception as e:
            if not is_connection_error(e):
                raise
            raise DatagenError("the Dask scheduler at %s does not answer (%s): start it, or "
                               "fix --dask_client_address" % (self.address, one_line(e, 300))
                               ) from None
        # its "Failed to reconnect to scheduler" ERROR: the job says it in its own line
        self._client_log_level = CLIENT_LOG.level
        CLIENT_LOG.setLevel(logging.CRITICAL)

    def lost(self, error: BaseException) -> bool:
        """Whether `error` came from losing the scheduler."""
        return self.client is None or self.client.status != "running" or (
            is_connection_error(error) and not isinstance(error, DatagenError))

    def scheduler_lost(self, error: BaseException) -> DatagenError:
        """The one line for a scheduler that went away."""
        why = ("%s: %s" % (type(error).__name__, one_line(error, 300))
               if is_connection_error(error) else "no answer: the client stopped reconnecting")
        return DatagenError("lost the Dask scheduler at %s (%s); nothing was committed: "
                            "rerun once it is back" % (self.address, why))

    def check_workers(self) -> None:
        """Checks the workers that joined since the last check (all, the first time)."""
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        new = sorted(address for address in info if address not in self._checked)
        if not new:
            return
        results = self.client.run(dask_worker.project_identity, workers=new, on_error="return")
        refused = []
        for address in new:
            result = results.get(address)
            if result is None or (isinstance(result, BaseException)
                                  and is_connection_error(result)):
                continue  # it left during the check; Dask runs its tasks elsewhere
            problem = difference(self._identity, result)
            if problem:
                refused.append("%s (%s) %s" % (info[address].get("name"), address, problem))
            else:
                self._checked.add(address)
        if refused:
            raise DatagenError("Dask worker%s refused: %s; %s" % (
                "s" if len(refused) > 1 else "", "; ".join(refused), HOW_TO_FIX))

    def threads(self) -> int:
        """The cluster's worker threads, in all (at least 1)."""
        return max(1, sum(self.client.nthreads().values()))

    def news(self) -> List[str]:
        """Lines about workers that stopped answering the scheduler (or answer again), from
        the scheduler's view, asked for in a thread of its own every LOOK_SECONDS (a
        scheduler that does not answer must not hold up the pass's watch); [] meanwhile.
        A silent worker the scheduler no longer lists was dropped (its nanny, if any, starts
        a new worker at another address): the lost-worker line says so, not this one."""
        now = time.time()
        if self.client is None:
            return []
        if now >= self._next_look and not (self._looking and self._looking.is_alive()):
            self._next_look = now + LOOK_SECONDS
            self._looking = threading.Thread(target=self._look, name="datagen-dask-look",
                                             daemon=True)
            self._looking.start()
        view, self._view = self._view, None
        if view is None:
            return []
        silent, ttl, present = view
        self.ttl = ttl
        lines = []
        for worker in silent:
            self.last_seen[worker["address"]] = worker["last_seen"]
            named = self._silent.get(worker["address"])
            if named is None or now - named >= SILENT_REPEAT_SECONDS:
                self._silent[worker["address"]] = now
                lines.append(describe_silent(worker, ttl))
        not_silent = set(self._silent) - {w["address"] for w in silent}
        for address in sorted(not_silent):
            del self._silent[address]
            if address in present:  # else dropped: the lost-worker line says it
                self.last_seen.pop(address, None)
                lines.append("Dask worker %s answers the scheduler again" % address)
        return lines

    def _look(self) -> None:
        try:
            self._view = silent_workers(self.client, SILENT_SECONDS)
        except Exception as e:  # news only: the pass itself reports a lost scheduler
            LOG.debug("could not ask the Dask scheduler about its workers: %s", e)

    def forget_pass(self, pass_id: str) -> None:
        """Tells the workers to tear down the set-up stages of a finished pass (not waited
        for: a silent worker must not hold up the job)."""
        if self.client is not None:
            try:
                self.client.run(dask_worker.forget_pass, pass_id, wait=False)
            except Exception as e:
                LOG.debug("could not tell the workers to forget pass %s: %s", pass_id, e)

    def close(self) -> None:
        if self.client is not None:
            client, self.client = self.client, None
            try:
                # a client still subscribed to "all" is sent its own remove-client event
                # while it closes: the scheduler logs that failed send as a CRITICAL traceback
                unsubscribe_all(client)
                client.close()
            except Exception as e:  # a lost scheduler: nothing to close
                LOG.debug("closing the Dask client: %s", e)
            CLIENT_LOG.setLevel(self._client_log_level)


def silent_workers(client: Any, seconds: float
                   ) -> "tuple[List[dict], Optional[float], set]":
    """The scheduler's view of its workers that have not sent a heartbeat for `seconds` or
    more ([{"address", "name", "silent", "last_seen", "processing", "status"}]), the
    scheduler's worker-ttl (after which it drops such a worker and runs its tasks
    elsewhere), and the addresses of every worker it lists."""
    view = client.run_on_scheduler(dask_worker.scheduler_view)
    return ([w for w in view["workers"] if w["silent"] >= seconds], view["ttl"],
            {w["address"] for w in view["workers"]})


def describe_silent(worker: dict, ttl: Optional[float]) -> str:
    """One short line about a silent worker, as the scheduler sees it: how long since its
    last heartbeat, the tasks it holds, and when the scheduler gives up on it. It checks
    every `distributed.scheduler.worker-ttl` seconds for workers silent longer than that
    (distributed's `check_worker_ttl`), so it drops one after ttl to twice ttl of silence:
    the line names the setting, not a time it cannot promise."""
    return "Dask worker %s (%s): silent %.0f s, holds %d task%s; %s" % (
        worker["name"], worker["address"], worker["silent"], worker["processing"],
        "" if worker["processing"] == 1 else "s",
        "the scheduler drops it after %.0f-%.0f s silent (distributed.scheduler.worker-ttl "
        "%.0f s)" % (ttl, 2 * ttl, ttl) if ttl
        else "never dropped (distributed.scheduler.worker-ttl is off)")


class _CounterResults(MetricResults):
    """Beam's MetricResults over the counters of one pass on Dask (committed = attempted:
    each task counted once)."""

    def __init__(self, counters: dict) -> None:
        self._results = [MetricResult(MetricKey(step, MetricName(namespace, name)), value, value)
                         for (step, namespace, name), value in sorted(counters.items())]

    def query(self, filter: Any = None) -> dict:
        return {"counters": [r for r in self._results if self.matches(filter, r.key)],
                "distributions": [], "gauges": []}


def pass_counters(client: Any, topic: str, pass_id: str) -> MetricResults:
    """The Beam counters of pass `pass_id`, from the events its tasks sent the scheduler on
    `topic`: the last event of each task and step (a task rerun after a lost worker counts
    once, as committed metrics do), summed."""
    last = {}
    for _, event in client.get_events(topic):
        if event["pass"] == pass_id:
            last[event["task"], event["step"]] = event
    counters: Dict[Any, int] = {}
    for event in last.values():
        for namespace, name, value in event["counters"]:
            key = (event["step"], namespace, name)
            counters[key] = counters.get(key, 0) + value
    return _CounterResults(counters)


class LostWorkers:
    """The scheduler's `remove-worker` events while a pass runs (its "all" topic, subscribed
    to before the pass's tasks are submitted): Dask computes a lost worker's running tasks,
    and the results only it held, again elsewhere, and says which; the driver logs a line."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: List[dict] = []

    def __call__(self, event: Any) -> None:  # in the client's event loop thread
        at, message = event  # `at`: the scheduler's clock
        if isinstance(message, dict) and message.get("action") == "remove-worker":
            with self._lock:
                self._events.append(dict(message, at=at))

    def take(self) -> List[dict]:
        with self._lock:
            events, self._events = self._events, []
        return events


def lost_worker_line(event: dict, keys: Collection[str],
                     last_seen: Optional[float] = None, ttl: Optional[float] = None) -> str:
    """One line for a worker the cluster lost while the pass (its task `keys`) ran. A worker
    seen silent before (`last_seen`: its last heartbeat, on the scheduler's clock as the
    event's `at`) was dropped for it: the line says after how long, by the event's time, and
    names the setting (`ttl`: its value)."""
    running = len({str(k) for k in event.get("processing-tasks") or ()} & set(keys))
    computed = len({str(k) for k in event.get("lost-computed-tasks") or ()} & set(keys))
    how = "retired" if event.get("expected") else "lost"
    if last_seen is not None and event.get("at") is not None and not event.get("expected"):
        how = "dropped after %.0f s silent (distributed.scheduler.worker-ttl%s)" % (
            event["at"] - last_seen, " %.0f s" % ttl if ttl else "")
    if not running and not computed:
        return "Dask worker %s %s; none of the pass's tasks were on it" % (
            event.get("worker"), how)
    return "Dask worker %s %s: %d running and %d finished tasks of the pass are computed " \
        "again" % (event.get("worker"), how, running, computed)


def unsubscribe_all(client: Any) -> None:
    """Stops the client's subscription to the scheduler's "all" topic (`LostWorkers`)."""
    with contextlib.suppress(ValueError):  # never subscribed
        client.unsubscribe_topic(ALL_TOPIC)


class DatagenDaskResult(DaskRunnerResult):
    """The result of a pass on Dask (`dask_runner.DatagenDaskRunner`): Beam's, which also
    collects the pass's counters when it ends, turns a lost scheduler into one line, and
    cancels the pass so that none of its tasks runs on."""

    def __init__(self, client: Any, futures: list, session: "DaskSession", pass_id: str,
                 keys: frozenset) -> None:
        super().__init__(client, futures)
        self.session = session
        self.pass_id = pass_id  # what the pass's counter events carry
        self.keys = keys  # the pass's task keys
        self.counters: Optional[MetricResults] = None  # once finished
        self.lost: Optional[LostWorkers] = None  # the scheduler's remove-worker events
        self._cancelled = False

    def lost_workers(self) -> List[str]:
        """A line for each worker the cluster lost since the last call, while the pass ran."""
        events = self.lost.take() if self.lost is not None else []
        return [lost_worker_line(event, self.keys,
                                 self.session.last_seen.pop(str(event.get("worker")), None),
                                 self.session.ttl) for event in events]

    def wait_until_finish(self, duration=None) -> str:
        try:
            state = super().wait_until_finish(duration)
            self.counters = pass_counters(self.client, METRICS_TOPIC, self.pass_id)
            return state
        except Exception as e:
            if self.client.status != "running":
                raise self.session.scheduler_lost(e) from None
            # A failed task fails the pass, but Dask runs the pass's other tasks on: stop
            # them before the driver removes the work directory they write into (on a
            # cluster of other hosts they would write after it, and leave files behind).
            with contextlib.suppress(Exception):
                self.cancel()
            self._state = PipelineState.FAILED
            raise
        finally:  # the workers' set-up stages of the pass are done with
            if self.client.status == "running":
                self.session.forget_pass(self.pass_id)
                with contextlib.suppress(Exception):
                    unsubscribe_all(self.client)

    def metrics(self) -> MetricResults:
        if self.counters is None:
            raise RuntimeError("the pass has not finished")
        return self.counters

    def cancel(self) -> str:
        """Cancels the pass's tasks and returns once none of them runs on a worker any more
        (a cancelled task's thread runs to its end: Dask cannot stop it), so nothing of the
        pass writes after the driver has stopped. Nothing to cancel once the scheduler is
        gone (its workers run no task without it), nor twice (a failed pass cancels itself
        before the driver does)."""
        if self._cancelled:
            return self._state
        self._cancelled = True
        self._state = PipelineState.CANCELLING
        if self.client.status == "running":
            self.client.cancel(self.futures, force=True)
            deadline = time.time() + CANCEL_SECONDS
            while time.time() < deadline and self.client.status == "running" and any(
                    running and not isinstance(running, BaseException)  # a lost worker runs none
                    for running in self.client.run(dask_worker.running_of, self.keys,
                                                   on_error="return").values()):
                time.sleep(0.2)
        self._state = PipelineState.CANCELLED
        return self._state
