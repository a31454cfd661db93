"""JobRecord: what a run did, as its JSON summary says it: when it started, how long each
stage took, the output's fingerprint, how many passes ran, and (on failure) why it stopped.

`DatagenJob` orders the steps; this object keeps the facts and writes the summary when the
job writes a "running" or "failed" one (`pipeline.output.commit` writes the complete one).
"""

import datetime
import logging
import time
from typing import Any, Callable, Dict, Optional

from apache_beam.options.pipeline_options import PipelineOptions

from pipeline.driver.passes import PassRunner
from pipeline.output import commit
from pipeline.output.layout import OutputLayout
from pipeline.runtime.errors import one_line
from pipeline.runtime.storage_errors import storage_error
from transforms.contracts.config import DatagenConfig
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores

LOG = logging.getLogger("datagen")


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class JobRecord:
    """The facts of one run (`config`, Beam's `options`, its `layout` and PassRunner);
    summaries are written through `stores`, the job's store clients."""

    def __init__(self, config: DatagenConfig, options: PipelineOptions, layout: OutputLayout,
                 run_pass: PassRunner, stores: ObjectStores) -> None:
        self._config = config
        self._options = options
        self._layout = layout
        self._run_pass = run_pass
        self._stores = stores
        self.stages: Dict[str, dict] = {}
        self.fingerprint: Optional[dict] = None  # pipeline.driver.fingerprint.output_fingerprint
        self.started: Optional[str] = None
        self.t0 = time.time()  # until `start`

    def start(self) -> None:
        """The run starts now (its summary's `started_at` and `seconds`)."""
        self.started, self.t0 = now(), time.time()

    def timed(self, stage: str, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)`, its seconds recorded as `stage`'s."""
        start = time.time()
        value = fn(*args)
        self.stages[stage] = {"seconds": round(time.time() - start, 3)}
        return value

    def summary(self, status: str, **facts: Any) -> dict:
        """The summary of the run so far with `status` and `facts` added."""
        job = self._config.job
        summary = {
            "status": status, "started_at": self.started, "finished_at": now(),
            "seconds": round(time.time() - self.t0, 3), "problem": job.problem,
            "seed": job.seed, "output_dir": self._layout.output_dir,
            "flags": self._config.flags(),
            "runner": self._options.get_all_options().get("runner"),
            "passes": self._run_pass.count, "stages": self.stages,
            "fingerprint": self.fingerprint,
            # what a one-pair output's files end with (`layout.summary_languages`): in the
            # running summary too, so a rerun after a kill finds them to replace
            "languages": list(self._layout.shards.langs)}
        if self._run_pass.job_server_seconds is not None:  # FlinkRunner, SparkRunner
            summary["job_server_start_seconds"] = self._run_pass.job_server_seconds
        summary.update(facts)
        return summary

    def write_running(self) -> None:
        """The "running" summary: this run writes into --output_dir from now on."""
        file_io.write_json(self._layout.summary_path, self.summary("running"), self._stores)

    def record_failure(self, error: BaseException, status: str = "failed") -> None:
        """A failed or interrupted run leaves a summary saying so (unless a complete output
        is still there: then the summary describes that output)."""
        stores = self._stores
        if file_io.exists(self._layout.complete_path, stores):
            return
        if storage_error(error):
            # a full disk: the work directory's files go first, so the summary fits
            commit.remove_work_dir(self._layout, stores)
        try:
            file_io.write_json(self._layout.summary_path, self.summary(
                status, error="%s: %s" % (type(error).__name__, error)), stores)
        except Exception as e:  # the original error matters more
            LOG.warning("could not write the failure summary: %s", one_line(e))
