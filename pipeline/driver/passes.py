"""PassRunner: runs one pass of the job (one Beam pipeline) and says so in the log.

Every step (prepare, vocab, encode) hands it a label and a `build(pipeline)` function, so
numbering, timing, the progress heartbeat, the lock check before each pass, the dry run
(translate instead of run) and a clean stop on Ctrl-C/SIGTERM are decided here once, and
a dry run goes through the very same builders as a real run.
"""

import logging
import re
import shutil
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from pipeline.output.lock import OutputLock
from pipeline.runtime import console
from pipeline.runtime.interrupts import Interrupted, kill_worker_processes, stop_thread
from pipeline.runtime.pass_engine import PassEngine
from pipeline.runtime.runners import REMOTE_RUNNERS, is_dry_run, runner_name
from transforms.reporting.job_metrics import counter_values
from transforms.errors import JobError

LOG = logging.getLogger("datagen")
PROGRESS_SECONDS = 30.0  # a long pass logs where it stands this often (--progress_seconds)
WATCH_SECONDS = 0.5  # how often a pass checks for a signal, a lost lock and dead workers
STOP_SECONDS = 60.0  # at most this long for an interrupted in-process pass to end


class WorkerDied(JobError, RuntimeError):
    """A worker process of the job ended while a pass ran (killed for memory, most often).
    The pass's own thread is left blocked in Beam: the program must exit without waiting
    for threads (`python -m pipeline.datagen` does)."""

    def __init__(self, number: int, dead: List[str]) -> None:
        super().__init__("pass %d failed: %s while it ran%s" % (
            number, "; ".join(dead),
            " (out of memory?)" if any("SIGKILL" in d for d in dead) else ""))


class PassFailed(JobError, RuntimeError):
    """A pass failed on a remote runner (Flink, Spark, a portable job service, Dataflow):
    the runner's error (often a Java stack trace of dozens of lines) as one line naming
    the pass, for `python -m pipeline.datagen` to print without a traceback. The runner's
    own log (its web UI, the job server's log) has the whole of it."""

    MAX_CHARS = 300

    def __init__(self, number: int, label: str, runner: str, error: BaseException) -> None:
        super().__init__("pass %d (%s) failed on %s: %s" % (number, label, runner,
                                                              self.summary(error)))

    @classmethod
    def summary(cls, error: BaseException) -> str:
        """The error's first line and its root cause: the last line that names an
        exception (Python's last traceback line, Java's last `Caused by:`)."""
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        first = "%s: %s" % (type(error).__name__, lines[0] if lines else "")
        causes = [line for line in lines[1:] if _EXCEPTION_LINE.match(line)]
        parts = [first] + causes[-1:]
        return " ... ".join(p if len(p) <= cls.MAX_CHARS else p[:cls.MAX_CHARS] + "..."
                            for p in parts)


# "RuntimeError: ...", "Caused by: java.io.IOException: ...", "org.x.FooException"
_EXCEPTION_LINE = re.compile(r"^(Caused by: )?[\w.$]*(Error|Exception)\b")


class PassRunner:
    """`runner(label, build)` runs a pass and returns its seconds (0.0 when only translated).

    `interrupted()`: the signal number that stopped the run, or None
    (`InterruptWatcher.received`). `lock`: the OutputLock once the job holds it; a run that
    lost it stops before its next pass.

    Where the passes run (their runner, the job server and worker processes they share) is
    `engine`'s (`pipeline.runtime.pass_engine`); `close()` ends what they share.
    `log_level`: the job's --log_level, for the worker processes' logging;
    `progress_seconds`: how often a running pass logs where it stands.
    """

    def __init__(self, options: PipelineOptions, interrupted: Callable[[], Optional[int]],
                 log_level: Optional[str] = None,
                 progress_seconds: float = PROGRESS_SECONDS) -> None:
        self.options = options
        self.interrupted = interrupted
        self.log_level = log_level
        self.progress_seconds = progress_seconds
        self.count = 0
        self.counters: Dict[str, int] = {}  # the job's Beam counters summed over its passes
        self.lock: Optional[OutputLock] = None
        self._expected: Optional[Tuple[int, bool]] = None  # (passes in all, whether exact)
        self.engine = PassEngine(options, log_level)  # where the passes run
        self._submitted: Optional[float] = None  # when the running pass's job was submitted
        self._running: Any = None  # the running pass's PipelineResult, once run() returned
        # the running pass's thread, and the event it sets when it ends
        self._thread: Optional[Tuple[threading.Thread, threading.Event]] = None

    @property
    def dry_run(self) -> bool:
        """--dry_run: passes are only translated."""
        return is_dry_run(self.options)

    def abort_for_lost_lock(self) -> None:
        """Called by the lock's heartbeat when another run took the lease: the pass in
        progress must stop writing at once (its worker processes are killed; an in-process
        pass is left behind, writing only into this run's own work directory)."""
        if self.engine.runs_worker_processes():
            console.quiet_libraries()
            kill_worker_processes()

    def _run_watched(self, pipeline, number):
        """Runs `pipeline` in a thread of its own while this one watches: Beam's runner waits
        forever for a worker that died (an out-of-memory kill) in the middle of a bundle, so
        a dead worker ends the pass here, with WorkerDied; a lost lock ends it with the
        lock's DatagenError. A remote runner's `run()` returns once the job is submitted."""
        outcome = {}
        # Its end is an Event, not `thread.join`: a signal handler's exception raised in a
        # join (CPython 3.11) marks the thread stopped while it runs on (bpo-45274's fix).
        finished = threading.Event()

        def run():
            try:
                result = pipeline.run()  # a remote runner returns once the job is submitted
                self._running = result
                self._submitted = time.time()
                outcome["state"] = result.wait_until_finish()
                outcome["counters"] = counter_values(result)
            except BaseException as e:  # handed to the watching thread
                outcome["error"] = e
            finally:
                finished.set()

        thread = threading.Thread(target=run, name="datagen-pass-%d" % number, daemon=True)
        self._thread = (thread, finished)
        thread.start()
        while True:
            finished.wait(WATCH_SECONDS)
            self.stop_if_interrupted()
            self._log_lost_workers(number)
            if self.lock is not None:
                self.lock.check()  # raises once another run took the lease
            for line in self.engine.worker_news():
                LOG.warning("pass %d: %s", number, line)
            # a dead worker either blocks the pass or is why it failed
            dead = (self.engine.dead_workers()
                    if not finished.is_set() or "error" in outcome else [])
            if dead:
                kill_worker_processes()  # the pass cannot finish: no worker writes on
                raise WorkerDied(number, dead)
            if finished.is_set():
                break
        self._log_lost_workers(number)  # those the pass's last moments saw
        if "error" in outcome:
            raise outcome["error"]
        for name, value in outcome["counters"].items():
            self.counters[name] = self.counters.get(name, 0) + value
        return outcome["state"]

    def live_counters(self) -> Dict[str, int]:
        """The running pass's Beam counters so far, where its runner reports them while it
        runs (a job service's, the Dask runner's); {} elsewhere (DirectRunner's result
        exists only once the pass is done)."""
        running = self._running
        return counter_values(running) if running is not None else {}

    def _log_lost_workers(self, number: int) -> None:
        """A WARNING line for each worker the runner's cluster lost while the pass runs, and
        what of the pass it computes again (a runner whose result can tell:
        `lost_workers()`, the Dask runner's)."""
        lost = getattr(self._running, "lost_workers", None)
        if lost is not None:
            for line in lost():
                LOG.warning("pass %d: %s", number, line)
    def stop_if_interrupted(self) -> None:
        """Raises Interrupted once a signal stopped the run: before and after every pass,
        every WATCH_SECONDS while one runs, and (the job's call) before the commit. The
        signal handler's own exception may have been raised where Python discards it (a
        garbage-collection callback, `pipeline.runtime.interrupts`): this flag is not lost."""
        signum = self.interrupted()
        if signum is not None:
            raise Interrupted(signum)

    def _stop_in_process_pass(self) -> None:
        """An interrupted pass that runs in this process (no worker processes to kill) is
        stopped in its thread and waited for, so that nothing writes into the work directory
        once the job removes it."""
        if self._thread is None or self.engine.runs_worker_processes():
            return
        thread, finished = self._thread
        if not stop_thread(thread, finished, STOP_SECONDS):
            LOG.warning("the interrupted pass did not stop within %.0f s", STOP_SECONDS)

    def _cancel_running(self) -> None:
        """A pass stopped by an interrupt or a failure: on a runner whose computation goes on
        without the driver (a Dask cluster), cancel it, so that nothing of it writes on."""
        running = self._running
        if running is None or not self.engine.cancels_on_stop():
            return
        try:
            running.cancel()
        except Exception as e:  # the pass is failing already; say so and go on stopping
            LOG.warning("could not cancel the pass on %s: %s", runner_name(self.options), e)

    @property
    def job_server_seconds(self) -> Optional[float]:
        """How long starting the job's job server took, once a pass started one."""
        return self.engine.job_server_seconds

    def close(self) -> None:
        """Ends what the passes shared (worker processes, the job server)."""
        self.engine.close()

    def expect(self, more: int, exact: bool = True) -> None:
        """The job expects `more` passes after those run so far (`exact`: False while a
        search decides how many); the log numbers passes "3 of 5" or "3 of ~5"."""
        self._expected = (self.count + more, exact)

    def _of(self, number):
        if self._expected is None:
            return ""
        total, exact = self._expected
        if number > total:  # more than expected: the search went on
            total, exact = number, False
        return " of %s%d" % ("" if exact else "~", total)

    def __call__(self, label: str, build: Callable[[beam.Pipeline], Any],
                 progress: Optional[Callable[[float], str]] = None) -> float:
        """Runs pass `label` built by `build(pipeline)`; `progress(seconds)`, if given, says
        where a running pass stands (a line logged every `progress_seconds`)."""
        self.stop_if_interrupted()
        if self.lock is not None:
            self.lock.confirm()  # still this run's, and --output_dir still there
        self.count += 1
        number = self.count
        LOG.info("pass %d%s: %s", number, self._of(number), label)
        start = time.time()
        runner, options = self.engine.runner_and_options()
        pipeline = beam.Pipeline(runner=runner, options=options)
        try:
            build(pipeline)
            if self.dry_run and runner_name(self.options) != "dataflow":
                # Only Dataflow has a dry run of its own; elsewhere translating is the dry run.
                pipeline.to_runner_api()
                LOG.info("pass %d translated (dry run)", number)
                return 0.0
            stop = threading.Event()
            said = threading.Lock()  # a progress line is logged, or the pass ended: never both
            self._submitted = None

            def heartbeat():
                while not stop.wait(self.progress_seconds):
                    seconds = time.time() - start
                    try:
                        where = progress(seconds) if progress else None
                    except Exception as e:  # progress is news, never a reason to stop
                        LOG.debug("pass %d progress: %s", number, e)
                        where = None
                    with said:  # a line worked out as the pass ended is old news: not logged
                        if not stop.is_set():
                            LOG.info("pass %d: %s", number,
                                     where or "running, %.0f s so far" % seconds)

            threading.Thread(target=heartbeat, name="datagen-pass-%d-progress" % number,
                             daemon=True).start()
            try:
                state = self._run_watched(pipeline, number)
            except BaseException:
                self._cancel_running()
                signum = self.interrupted()
                if signum is not None:
                    # Beam may have wrapped Interrupted into its own error; workers still
                    # running (an in-process signal) must not write on into the work directory.
                    console.quiet_libraries()
                    kill_worker_processes()
                    self._stop_in_process_pass()
                    raise Interrupted(signum) from None
                error = sys.exc_info()[1]
                if runner_name(self.options) in REMOTE_RUNNERS and isinstance(error, Exception):
                    raise PassFailed(number, label, self.options.view_as(StandardOptions).runner,
                                     error) from error
                raise
            finally:
                with said:  # no progress line after this: it would follow the pass's end
                    stop.set()
                self._running = None
            self.stop_if_interrupted()  # a signal as the pass ended: it must not look done
            if state not in (None, beam.runners.runner.PipelineState.DONE):
                raise RuntimeError("pass %d (%s) ended in state %s" % (number, label, state))
            seconds = time.time() - start
            if runner_name(self.options) in REMOTE_RUNNERS and self._submitted:
                # building, translating and submitting it (the job server's Prepare, artifact
                # staging and Run), against the runner's own time to run it
                LOG.info("pass %d done in %.1f s (submitted after %.1f s)", number, seconds,
                         self._submitted - start)
            else:
                LOG.info("pass %d done in %.1f s", number, seconds)
            return seconds
        finally:
            # Beam removes the pipeline's local temp dir in run() only: a dry run, a
            # build that failed or a pass stopped before it ran would leave it in TMPDIR.
            shutil.rmtree(pipeline.local_tempdir, ignore_errors=True)
