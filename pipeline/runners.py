"""What the job needs to know about the runner it is given.

Workers of a remote runner (Dataflow, Flink, Spark, a portable runner with Docker workers)
do not have this project installed unless the job ships it: with `--setup_file ./setup.py`,
`--extra_package(s)`, or a custom SDK container (`--sdk_container_image`, or
`--environment_config` naming a Docker image). Without one of them such a job would fail on
its first worker with an ImportError, minutes after submission; the job refuses to start
instead.
"""

from apache_beam.options.pipeline_options import (DirectOptions, PortableOptions, SetupOptions,
                                                   StandardOptions, TestOptions, WorkerOptions)

REMOTE_RUNNERS = {"dataflow", "flink", "spark", "portable"}
# Environments whose workers run in an environment the user prepared (or in this process).
LOCAL_ENVIRONMENTS = {"LOOPBACK", "EXTERNAL", "PROCESS", "BEAM_PYTHON"}


class DatagenError(Exception):
    """A problem with the job's input or flags, reported without a traceback."""


def one_line(text):
    """A message as one line: a scheduler's log shows one line per failure."""
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


def runner_name(options):
    runner = options.view_as(StandardOptions).runner or "DirectRunner"
    if not isinstance(runner, str):
        runner = type(runner).__name__
    name = runner.rsplit(".", 1)[-1].lower()
    return name[:-len("runner")] if name.endswith("runner") else name


def project_shipped(options):
    setup = options.view_as(SetupOptions)
    worker = options.view_as(WorkerOptions)
    portable = options.view_as(PortableOptions)
    env_type = (portable.environment_type or "").upper()
    return bool(setup.setup_file or setup.extra_packages or worker.sdk_container_image
                or (env_type == "DOCKER" and portable.environment_config)
                or env_type in LOCAL_ENVIRONMENTS)


def check_workers_can_import_project(options):
    """Raises DatagenError when a remote runner's workers would not have this project."""
    name = runner_name(options)
    if name in REMOTE_RUNNERS and not project_shipped(options):
        raise DatagenError(
            "--runner %s starts workers that do not have this project installed: pass "
            "--setup_file ./setup.py (or --sdk_container_image with an image built from the "
            "project's Dockerfile)" % options.view_as(StandardOptions).runner)


def is_dry_run(options):
    return bool(options.view_as(TestOptions).dry_run)


def run_small_input_in_process(options, input_bytes, limit_mb):
    """Switches DirectRunner's multi_processing mode to in-process (`in_memory`) when the
    input is smaller than `limit_mb`; True if it did.

    In multi_processing mode every pass starts its own worker processes, which import Beam
    and the project (about 3.5 s a pass with 2 workers here), while a few MB of text take a
    second or two to process: such a job is faster in one process. Every runner writes the
    same bytes, so this changes only the time.
    """
    if runner_name(options) != "direct" or limit_mb <= 0:
        return False
    direct = options.view_as(DirectOptions)
    if direct.direct_running_mode != "multi_processing" or input_bytes >= limit_mb * 1e6:
        return False
    direct.direct_running_mode = "in_memory"
    direct.direct_num_workers = 1  # threads of one process only contend for the GIL
    return True


def runner_for_pass(options):
    """The runner object a pass's pipeline gets, or None to let Beam choose by `--runner`.

    Beam's DirectRunner first tries to run a pipeline on Prism, a Go runner it downloads from
    GitHub on first use: without network access every pass waits for that download to fail
    (~0.5 s) before DirectRunner falls back to its portable FnApiRunner, and with it Prism runs
    the pass, ignoring `--direct_running_mode` and `--direct_num_workers`. For DirectRunner the
    job therefore runs its passes on the FnApiRunner directly, as DirectRunner's fallback does
    (same provision info, so workers get the same pipeline options); `--runner PrismRunner`
    still chooses Prism.
    """
    if runner_name(options) != "direct":
        return None
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.portability.fn_api_runner import fn_runner
    from apache_beam.runners.portability.portable_runner import JobServiceHandle
    encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
    return fn_runner.FnApiRunner(provision_info=fn_runner.ExtendedProvisionInfo(
        beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded)))
