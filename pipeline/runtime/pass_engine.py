"""PassEngine: where the job's passes run, the same for every pass of one job.

A job is several Beam pipelines (passes). What they share lives here, started with the first
pass that needs it and stopped once by `close()`: the job server a FlinkRunner or SparkRunner
pass submits to (`pipeline.runtime.job_server`), DirectRunner's worker processes
(`pipeline.runtime.local_worker_pool`, or Beam's stock DirectRunner, after one warning, when
Beam's internals are not what that module expects), and the job's own runner
(`DatagenDaskRunner`: one connection to the Dask cluster, its workers checked and warmed up
while the first pass is built). Running a pass, numbering it and
watching it is `pipeline.driver.passes.PassRunner`'s job; this object only says on what.
"""

import logging
from typing import Any, List, Optional, Tuple

from apache_beam.options.pipeline_options import PipelineOptions

from pipeline.runtime import local_worker_pool
from pipeline.runtime.job_server import JobServer, needs_job_server
from pipeline.runtime.memory import freeze_long_lived
from pipeline.runtime.runners import (is_dry_run, runner_for_pass, runner_name,
                                      uses_local_worker_pool, uses_worker_processes, worker_count)
from transforms.storage.heap import release_free_memory

LOG = logging.getLogger("datagen")


class PassEngine:
    """The runner and options of each pass of a job given `options` (its PipelineOptions);
    `log_level`: the job's --log_level, for its worker processes' logging."""

    def __init__(self, options: PipelineOptions, log_level: Optional[str] = None) -> None:
        self.options = options
        self.log_level = log_level
        self.job_server: Optional[JobServer] = None  # once a pass started one
        self.job_server_seconds: Optional[float] = None  # how long starting it took
        self._workers: Optional[local_worker_pool.LocalWorkerPool] = None
        self._internals_ok: Optional[bool] = None  # may local_worker_pool run Direct passes
        self._job_runner: Any = None  # the job's own runner (JOB_RUNNERS), for every pass
        self._passes = 0  # DirectRunner passes handed out

    def runner_and_options(self) -> Tuple[Any, PipelineOptions]:
        """(runner, options) of the next pass: DirectRunner's passes on the FnApiRunner and
        (multi_processing) the job's worker pool, started on first use, unless Beam's
        internals differ (then None: Beam's stock DirectRunner); a FlinkRunner or SparkRunner
        pass pointed at the job's one job server, started with the first pass."""
        runner, options = self._direct_runner()
        if needs_job_server(self.options):
            if self.job_server is None:
                # held before it starts: an interrupt that lands once the server runs, even
                # as start() returns, leaves it to close() (it has a session of its own)
                self.job_server = JobServer(self.options)
                self.job_server.start()
                assert self.job_server.seconds is not None  # set by start()
                self.job_server_seconds = round(self.job_server.seconds, 3)
            options = self.job_server.pass_options(options)
        return runner, options

    def _direct_runner(self) -> Tuple[Any, PipelineOptions]:
        runner, options = runner_for_pass(self.options)
        if runner_name(self.options) != "direct":
            if runner is not None:  # the job's own: one instance, started before the pass
                self._job_runner = runner = self._job_runner or runner
                if not is_dry_run(self.options):
                    runner.start(options)
            return runner, options
        if self._internals_ok is None:
            missing = local_worker_pool.internals_missing()
            if missing:
                LOG.warning("Beam's internals are not what the job's local runner expects "
                            "(%s): the passes run on Beam's stock DirectRunner", missing)
            self._internals_ok = not missing
        if not self._internals_ok:
            return None, options
        if self._workers is None and uses_local_worker_pool(self.options):
            self._workers = local_worker_pool.LocalWorkerPool(
                worker_count(self.options), self.options, self.log_level).start()
        # the local runner's buffers of the pass before (its shuffles are held here) are
        # freed: give the pages back before this pass, as the workers do after each pass;
        # before the first, what lives now lives to the end (modules): out of gc's way
        if self._passes:
            release_free_memory()
        else:
            freeze_long_lived()
        self._passes += 1
        return local_worker_pool.direct_runner(options, self._workers)

    def runs_worker_processes(self) -> bool:
        """Whether passes run in worker processes (the job's pool or Beam's own)."""
        return self._workers is not None or uses_worker_processes(self.options)

    def cancels_on_stop(self) -> bool:
        """Whether a pass stopped by the driver (interrupt, failure) must be cancelled on the
        runner: a Dask cluster computes on without the driver."""
        return runner_name(self.options) == "dask"

    def worker_news(self) -> List[str]:
        """Lines about the runner's workers while a pass runs (a Dask worker that stopped
        answering its scheduler, named with the scheduler's view of it)."""
        return self._job_runner.news() if self._job_runner is not None else []

    def dead_workers(self) -> List[str]:
        """The job's worker processes that ended (empty without a pool of the job's)."""
        return self._workers.dead() if self._workers is not None else []

    def close(self) -> None:
        """Ends the worker processes the passes shared, stops the job server they
        submitted to and closes the job runner's connection, if any."""
        if self._job_runner is not None:
            self._job_runner.close()
            self._job_runner = None
        if self._workers is not None:
            self._workers.close()
            self._workers = None
        if self.job_server is not None:
            self.job_server.stop()
            LOG.info("job server stopped")
            self.job_server = None
