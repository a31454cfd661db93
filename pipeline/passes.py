"""PassRunner: runs one pass of the job (one Beam pipeline) and says so in the log.

Every step (prepare, vocab, encode) hands it a label and a `build(pipeline)` function, so
numbering, timing, the progress heartbeat, the lock check before each pass, the dry run
(translate instead of run) and a clean stop on Ctrl-C/SIGTERM are decided here once, and
a dry run goes through the very same builders as a real run.
"""

import logging
import threading
import time

import apache_beam as beam

from pipeline.interrupts import Interrupted, kill_worker_processes
from pipeline.runners import runner_for_pass, runner_name

LOG = logging.getLogger("datagen")
PROGRESS_SECONDS = 30  # a long pass logs where it stands this often


class PassRunner:
    """`runner(label, build)` runs a pass and returns its seconds (0.0 when only translated).

    `interrupted()`: the signal number that stopped the run, or None
    (`InterruptWatcher.received`). `lock`: the OutputLock once the job holds it; a run that
    lost it stops before its next pass.
    """

    def __init__(self, options, dry_run, interrupted):
        self.options = options
        self.dry_run = dry_run
        self.interrupted = interrupted
        self.count = 0
        self.lock = None
        self._expected = None  # (passes in all, whether that number is exact)

    def expect(self, more, exact=True):
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

    def __call__(self, label, build, progress=None):
        """Runs pass `label` built by `build(pipeline)`; `progress(seconds)`, if given, says
        where a running pass stands (a line logged every PROGRESS_SECONDS)."""
        if self.lock is not None:
            self.lock.check()
        self.count += 1
        number = self.count
        LOG.info("pass %d%s: %s", number, self._of(number), label)
        start = time.time()
        pipeline = beam.Pipeline(runner=runner_for_pass(self.options), options=self.options)
        build(pipeline)
        if self.dry_run and runner_name(self.options) != "dataflow":
            # Only Dataflow has a dry run of its own; elsewhere translating is the dry run.
            pipeline.to_runner_api()
            LOG.info("pass %d translated (dry run)", number)
            return 0.0
        stop = threading.Event()

        def heartbeat():
            while not stop.wait(PROGRESS_SECONDS):
                seconds = time.time() - start
                try:
                    where = progress(seconds) if progress else None
                except Exception as e:  # progress is news, never a reason to stop
                    LOG.debug("pass %d progress: %s", number, e)
                    where = None
                LOG.info("pass %d: %s", number, where or "running, %.0f s so far" % seconds)

        threading.Thread(target=heartbeat, daemon=True).start()
        try:
            result = pipeline.run()
            state = result.wait_until_finish()
        except BaseException:
            signum = self.interrupted()
            if signum is not None:
                # Beam may have wrapped Interrupted into its own error; workers still
                # running (an in-process signal) must not write on into the work directory.
                kill_worker_processes()
                raise Interrupted(signum) from None
            raise
        finally:
            stop.set()
        if state not in (None, beam.runners.runner.PipelineState.DONE):
            raise RuntimeError("pass %d (%s) ended in state %s" % (number, label, state))
        seconds = time.time() - start
        LOG.info("pass %d done in %.1f s", number, seconds)
        return seconds
