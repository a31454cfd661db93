"""What the job needs to know about the runner it is given.

Workers of a remote runner (Dataflow, Flink, Spark, a portable runner with Docker workers)
do not have this project installed unless the job ships it: with `--setup_file ./setup.py`,
`--extra_package(s)`, or a custom SDK container (`--sdk_container_image`, or
`--environment_config` naming a Docker image). Without one of them such a job would fail on
its first worker with an ImportError, minutes after submission; the job refuses to start
instead.

DirectRunner's passes (Beam's FnApiRunner, the job's worker pool) are built in
`pipeline.runtime.local_worker_pool`, the one module that touches Beam's internals; this one
uses Beam's public options only.
"""

import argparse
import copy
import difflib
import importlib
from typing import Any, List, Optional

from apache_beam.options.pipeline_options import (DirectOptions, PipelineOptions,
                                                   PortableOptions, SetupOptions,
                                                   StandardOptions, TestOptions, WorkerOptions)

from pipeline.runtime.errors import DatagenError, one_line
from transforms.contracts.flag_ranges import INT32_MAX, bounded

REMOTE_RUNNERS = {"dataflow", "flink", "spark", "portable"}
# Environments whose workers run in an environment the user prepared (or in this process).
LOCAL_ENVIRONMENTS = {"LOOPBACK", "EXTERNAL", "PROCESS", "BEAM_PYTHON"}


FLINK_BATCH_MODE = "BATCH_FORCED"
# Most worker processes `--direct_num_workers` may ask for (0: one per CPU): more is a typo,
# and would start that many processes before the first pass.
MAX_DIRECT_WORKERS = 1024


class FlinkJavaOptions(PipelineOptions):
    """Options of Beam's Flink runner (Java) that Beam's Python options do not declare.

    Python's FlinkRunner sends the job server only options some PipelineOptions class
    declares (and the job refuses unknown flags), so these are declared here; they reach
    Flink with every pass. `--execution_mode_for_batch` defaults to BATCH_FORCED for
    FlinkRunner (`runner_for_pass`): every exchange is blocking, so a failed task restarts
    only its region (with a restart strategy), and no pass can deadlock on a pipelined
    exchange (FLINK-10672; the passes have diamonds: one ParDo's outputs joined again)."""

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--execution_mode_for_batch", default=None,
            choices=["PIPELINED", "PIPELINED_FORCED", "BATCH", "BATCH_FORCED"],
            help="Flink's data exchange mode of batch pipelines (default for FlinkRunner: "
                 "%s)" % FLINK_BATCH_MODE)
        parser.add_argument(
            "--number_of_execution_retries", type=bounded(int, -1, INT32_MAX), default=None,
            help="Flink: times a failed pass is retried (default, or -1: the cluster's "
                 "restart-strategy)")
        parser.add_argument(
            "--execution_retry_delay", type=bounded(int, -1), default=None,
            help="Flink: milliseconds between two retries of a failed pass")


# Runners the job resolves by short name itself: Beam resolves no short name `DaskRunner`,
# and the job runs Beam's DaskRunner patched (`pipeline.runtime.dask_runner`).
JOB_RUNNERS = {"dask": "pipeline.runtime.dask_runner.DatagenDaskRunner"}


def _short(runner: str) -> str:
    name = runner.rsplit(".", 1)[-1].lower()
    return name[:-len("runner")] if name.endswith("runner") else name


def runner_class_path(runner: str) -> Optional[str]:
    """`module.Class` of a `--runner` value: the job's own (JOB_RUNNERS), Beam's by its
    short name, or the value itself when it is a dotted path; None when unknown."""
    if _short(runner) in JOB_RUNNERS and "." not in runner:
        return JOB_RUNNERS[_short(runner)]
    known = {path.rsplit(".", 1)[-1].lower(): path for path in StandardOptions.ALL_KNOWN_RUNNERS}
    path = known.get(runner.lower(), known.get(runner.lower() + "runner"))
    return path or (runner if "." in runner else None)


def runner_names() -> List[str]:
    """The `--runner` names the job resolves: Beam's known runners and the job's own
    (DaskRunner), by class name."""
    paths = list(StandardOptions.ALL_KNOWN_RUNNERS) + list(JOB_RUNNERS.values())
    names = {path.rsplit(".", 1)[-1] for path in paths}
    names.discard("DatagenDaskRunner")
    return sorted(names | {"DaskRunner"}, key=str.lower)


def unknown_runner(runner: str) -> DatagenError:
    """The one-line error of a `--runner` no one knows, with the closest names."""
    names = runner_names()
    lower = {name.lower(): name for name in names}
    close = difflib.get_close_matches(runner.lower(), list(lower), n=1)
    return DatagenError("unknown --runner %s%s: the runners are %s, or a PipelineRunner "
                        "subclass as module.Class" % (
                            runner, " (did you mean %s?)" % lower[close[0]] if close else "",
                            ", ".join(names)))


def register_runner_options(runner: Optional[str]) -> None:
    """Imports the module of the runner `runner` names (a `--runner` value, as parsed), so
    that the options it declares on import are known to the flag check (Beam's DaskOptions,
    `--dask_*`, are declared only in its runner's module); DatagenError when the runner is
    unknown (with the closest names), or its module cannot be imported (Dask not installed)
    or has no such class: one line before any work, where Beam would raise at the first
    pass."""
    if not runner:
        return
    path = runner_class_path(runner)
    if not path:
        raise unknown_runner(runner)
    module, name = path.rsplit(".", 1)
    try:
        imported = importlib.import_module(module)
    except ImportError as e:
        raise DatagenError("--runner %s: cannot import %s (%s)" % (
            runner, module, one_line(e))) from None
    if not isinstance(getattr(imported, name, None), type):
        raise DatagenError("--runner %s: %s has no class %s" % (runner, module, name))


def check_pipeline_options(options: PipelineOptions) -> None:
    """Raises DatagenError (one line) for Beam pipeline options that Beam itself would
    refuse when the first pass's pipeline is made (`PipelineOptionsValidator`, as
    `beam.Pipeline` calls it: DataflowRunner without --project, --region or
    --temp_location, ...), and for a `--direct_num_workers` the job cannot start: before any
    work, and before --output_dir is made."""
    workers = options.view_as(DirectOptions).direct_num_workers
    if workers is not None and not 0 <= workers <= MAX_DIRECT_WORKERS:
        raise DatagenError("--direct_num_workers must be 0 (one per CPU) to %d, not %s"
                           % (MAX_DIRECT_WORKERS, workers))
    if is_dry_run(options):
        return  # translated only: a Dataflow dry run needs no project (docs/runners.md)
    name = options.view_as(StandardOptions).runner
    if not isinstance(name, str) or runner_name(options) != "dataflow":
        return  # other runners' options Beam validates are Dataflow's (GCP) only
    from apache_beam.options.pipeline_options_validator import PipelineOptionsValidator
    from apache_beam.runners.runner import create_runner
    try:
        errors = PipelineOptionsValidator(options, create_runner(name)).validate()
    except Exception as e:  # it asks Cloud Storage about the buckets: unreachable, denied
        raise DatagenError("--runner %s: cannot check the options (%s)" % (
            name, one_line(e, 300))) from None
    if errors:
        raise DatagenError("--runner %s: %s" % (name, "; ".join(
            e.strip().rstrip(".") for e in errors)))


def job_runner(options: PipelineOptions) -> Any:
    """An instance of the job's own runner for `options`' --runner, or None for Beam's."""
    runner = options.view_as(StandardOptions).runner
    if isinstance(runner, str) and "." not in runner and _short(runner) in JOB_RUNNERS:
        module, name = JOB_RUNNERS[_short(runner)].rsplit(".", 1)
        return getattr(importlib.import_module(module), name)()
    return None


def runner_name(options: PipelineOptions) -> str:
    runner = options.view_as(StandardOptions).runner or "DirectRunner"
    if not isinstance(runner, str):
        runner = type(runner).__name__
    return _short(runner)


def project_shipped(options: PipelineOptions) -> bool:
    setup = options.view_as(SetupOptions)
    worker = options.view_as(WorkerOptions)
    portable = options.view_as(PortableOptions)
    env_type = (portable.environment_type or "").upper()
    return bool(setup.setup_file or setup.extra_packages or worker.sdk_container_image
                or (env_type == "DOCKER" and portable.environment_config)
                or env_type in LOCAL_ENVIRONMENTS)


def check_workers_can_import_project(options: PipelineOptions) -> None:
    """Raises DatagenError when a remote runner's workers would not have this project."""
    name = runner_name(options)
    if name in REMOTE_RUNNERS and not project_shipped(options):
        raise DatagenError(
            "--runner %s starts workers that do not have this project installed: pass "
            "--setup_file ./setup.py (or --sdk_container_image with an image built from the "
            "project's Dockerfile)" % options.view_as(StandardOptions).runner)


def is_dry_run(options: PipelineOptions) -> bool:
    return bool(options.view_as(TestOptions).dry_run)


def run_small_input_in_process(options: PipelineOptions, input_bytes: int,
                               limit_mb: float) -> bool:
    """Switches DirectRunner's multi_processing mode to in-process (`in_memory`) when the
    input is smaller than `limit_mb`; True if it did.

    In multi_processing mode the job starts worker processes, forked from a server that
    imports Beam and the project (~2 s of a core, beside the driver's own imports;
    `pipeline.runtime.local_worker_pool`), while a few MB of text take a second or two to process: such a
    job is no slower in one process. Every runner writes the same bytes, so this changes only the time.
    """
    if runner_name(options) != "direct" or limit_mb <= 0:
        return False
    direct = options.view_as(DirectOptions)
    if direct.direct_running_mode != "multi_processing" or input_bytes >= limit_mb * 1e6:
        return False
    direct.direct_running_mode = "in_memory"
    direct.direct_num_workers = 1  # threads of one process only contend for the GIL
    return True


class LocalWorkerPoolOptions(PipelineOptions):
    """`--local_worker_pool`: whether DirectRunner's multi_processing passes take their
    workers from the job's pool (`pipeline.runtime.local_worker_pool`) or from Beam's own
    processes, started anew for every pass. The output is the same either way."""

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--local_worker_pool", default=None, choices=["auto", "off"],
            help="DirectRunner's multi_processing mode: auto (the default) keeps "
                 "--direct_num_workers worker processes for all passes, where Beam's "
                 "internals are as expected; off: Beam starts its own for every pass")


def uses_worker_processes(options: PipelineOptions) -> bool:
    """True when the passes run on DirectRunner with worker processes (multi_processing),
    the job's pool's or Beam's own."""
    return (runner_name(options) == "direct" and not is_dry_run(options)
            and options.view_as(DirectOptions).direct_running_mode == "multi_processing")


def uses_local_worker_pool(options: PipelineOptions) -> bool:
    """True when the job keeps its worker processes for all its passes
    (`pipeline.runtime.local_worker_pool`): multi_processing, `--local_worker_pool` not off."""
    return (uses_worker_processes(options)
            and options.view_as(LocalWorkerPoolOptions).local_worker_pool != "off")


def worker_count(options: PipelineOptions) -> int:
    """--direct_num_workers as Beam reads it (0: one per CPU)."""
    import multiprocessing
    return options.view_as(DirectOptions).direct_num_workers or multiprocessing.cpu_count()


def runner_for_pass(options: PipelineOptions) -> "tuple[None, PipelineOptions]":
    """(runner, options) a pass's pipeline gets on a runner other than DirectRunner (whose
    passes `pipeline.runtime.local_worker_pool.direct_runner` builds): the job's own runner
    (JOB_RUNNERS: DaskRunner), else None, which lets Beam choose by `--runner`;
    FlinkRunner's options get `--execution_mode_for_batch`."""
    if runner_name(options) == "flink" and not options.view_as(
            FlinkJavaOptions).execution_mode_for_batch:
        options = copy.deepcopy(options)
        options.view_as(FlinkJavaOptions).execution_mode_for_batch = FLINK_BATCH_MODE
    return job_runner(options), options
