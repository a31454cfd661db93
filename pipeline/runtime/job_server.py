"""One Beam job server per job for FlinkRunner, SparkRunner and PrismRunner.

The job is several Beam pipelines (passes). Given `--runner FlinkRunner` (or SparkRunner)
without `--job_endpoint`, Beam's Python runner starts a job server JVM for every pipeline it
runs (Flink) or once per process but stopped only at exit (Spark), each start costing
seconds of a JVM's start-up, and a Ctrl-C reaches those JVMs through the terminal's process
group while the job is still cleaning up. So the job starts Beam's own job server once, with
its first pass, from the jar and command Beam's runner would use
(`FlinkJarJobServer`/`SparkJarJobServer`: `--flink_job_server_jar`/`--spark_job_server_jar`,
or Beam's default, the release's jar on Maven Central, fetched into Beam's jar cache), runs
every pass against it with `--job_endpoint`, and stops it when the job ends, fails or is
interrupted (`PassRunner.close`; the job's own signal handling stays in charge: the JVM runs
in a session of its own, so a Ctrl-C to the job's process group does not reach it).

The JVM is started under a small shell that waits on a pipe from this process: when the
driver dies without stopping it (`kill -9`), the pipe closes and the shell stops the JVM.

PrismRunner's job server is Prism itself (Beam's Go runner, one binary): Beam's PrismRunner
would start it from inside `pipeline.run()`, installing a SIGINT handler, which Python allows
on the main thread only, while the job runs each pass from a watcher thread
(`pipeline.driver.passes`). So it is started here, on the main thread, from the command Beam's
`PrismJobServer` builds for `--prism_location` (a local binary: Beam would otherwise download
one from GitHub; `PRISM_BUILD` says how to build it), and every pass submits to it.

Not used with `--job_endpoint` (a job server the user runs), `--flink_submit_uber_jar` /
`--spark_submit_uber_jar` (no job server JVM) or a dry run (nothing is submitted).
"""

import copy
import logging
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Any, List, Optional, Tuple

from apache_beam.options.pipeline_options import (FlinkRunnerOptions, JobServerOptions,
                                                   PortableOptions, PrismRunnerOptions,
                                                   SparkRunnerOptions)

from pipeline.runtime.interrupts import SIGNALS
from pipeline.runtime.runners import is_dry_run, runner_name
from pipeline.runtime.errors import DatagenError, one_line

LOG = logging.getLogger("datagen")
START_SECONDS = 120  # a job server's JVM answers in a few seconds; a cold disk takes longer
STOP_SECONDS = 10
# How a user gets a Prism binary on a machine that cannot download Beam's release (docs/runners.md).
PRISM_BUILD = "go install github.com/apache/beam/sdks/v2/go/cmd/prism@v2.77.0"

# Runs the job server's command ("$@") and stops it when its standard input (a pipe from the
# driver) closes: at the driver's death, whatever the signal. The shell ends with the job
# server (a JVM that cannot start ends it at once, with the JVM's status), and only after it
# and its watcher are gone and reaped: once the shell has exited, nothing of the group runs.
# The watcher gets SIGKILL: a SIGTERM arriving before its subshell has reset the TERM trap it
# inherits runs that trap instead of ending it, and the shell then waits for the pipe to
# close (a JVM that ended at once made the job wait START_SECONDS, about 1 run in 40).
_WATCHDOG = """trap "" INT
trap 'kill -TERM $child 2>/dev/null' TERM
exec 3<&0
"$@" </dev/null 3<&- &
child=$!
{ read _ <&3; kill $child 2>/dev/null; } &
watcher=$!
wait $child
status=$?
while kill -0 $child 2>/dev/null; do wait $child; status=$?; done
kill -KILL $watcher 2>/dev/null
wait $watcher 2>/dev/null
exit $status
"""


def _unblock_signals() -> None:
    """In the job server's process, before it runs: the job's SIGNALS neither blocked nor
    ignored. While the job runs its driver blocks them in every thread and ignores them
    (`pipeline.runtime.interrupts`), and a child inherits both the mask and an ignored signal: the
    job server would not end on SIGTERM (a JVM started with SIGTERM ignored keeps ignoring
    it), only on the SIGKILL after STOP_SECONDS."""
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def needs_job_server(options: Any) -> bool:
    """True when the passes of `options` would each start a job server of their own."""
    if is_dry_run(options) or options.view_as(PortableOptions).job_endpoint:
        return False
    name = runner_name(options)
    if name == "flink":
        return not options.view_as(FlinkRunnerOptions).flink_submit_uber_jar
    if name == "spark":
        return not options.view_as(SparkRunnerOptions).spark_submit_uber_jar
    return name == "prism"


def check_flink_cluster(options: Any) -> None:
    """For `--flink_master HOST:PORT` (a session cluster): the cluster answers on its REST
    port, and the job server that will be used is built for the cluster's Flink version
    (Beam's default `--flink_version` is the newest, 2.2; a job server of another minor
    version fails only at submission, with a Flink RPC error). DatagenError otherwise."""
    flink = options.view_as(FlinkRunnerOptions)
    master = flink.flink_master.strip()
    from apache_beam.runners.portability.flink_runner import MAGIC_HOST_NAMES
    if master in MAGIC_HOST_NAMES or flink.flink_submit_uber_jar:
        return
    import json
    import urllib.request
    url = (master if "://" in master else "http://" + master).rstrip("/") + "/overview"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            version = json.loads(response.read().decode("utf-8")).get("flink-version", "")
    except (OSError, ValueError) as e:
        raise DatagenError("--flink_master %s: Flink's REST API does not answer (%s)"
                           % (master, one_line(e))) from None
    minor = ".".join(version.split(".")[:2])
    jar = flink.flink_job_server_jar
    if jar:
        named = re.search(r"flink-(\d+\.\d+)-job-server", os.path.basename(jar))
        wrong = named.group(1) if named and named.group(1) != minor else None
        what = "--flink_job_server_jar %s" % os.path.basename(jar)
    else:
        wrong = flink.flink_version if flink.flink_version != minor else None
        what = "--flink_version %s" % flink.flink_version
    if minor and wrong:
        raise DatagenError("--flink_master %s runs Flink %s but %s is for Flink %s: pass "
                           "--flink_version %s (and its job server jar)"
                           % (master, version, what, wrong, minor))


def _beam_job_server(options: Any) -> Any:
    """Beam's own description of the job server its runner would start for `options`."""
    if runner_name(options) == "prism":
        from apache_beam.runners.portability.prism_runner import PrismJobServer
        return PrismJobServer(options)
    if runner_name(options) == "flink":
        from apache_beam.runners.portability.flink_runner import FlinkJarJobServer, FlinkRunner
        options.view_as(FlinkRunnerOptions).flink_master = FlinkRunner.add_http_scheme(
            options.view_as(FlinkRunnerOptions).flink_master)
        return FlinkJarJobServer(options)
    from apache_beam.runners.portability.spark_runner import SparkJarJobServer
    return SparkJarJobServer(options)


def job_server_command(options: Any, artifacts_dir: str) -> Tuple[List[str], str]:
    """(command, endpoint) of Beam's job server for `options`' runner, its jar fetched (into
    Beam's jar cache) when it is a URL; DatagenError when the jar cannot be had."""
    options = copy.deepcopy(options)
    options.view_as(JobServerOptions).artifacts_dir = artifacts_dir
    name = runner_name(options)
    if name == "prism":
        return _prism_command(options)
    flag = "--%s_job_server_jar" % name
    try:
        server = _beam_job_server(options)
        return server.subprocess_cmd_and_endpoint()
    except Exception as e:  # a missing file, an HTTP error, no network: Beam's message says
        raise DatagenError(
            "cannot get Beam's %s job server jar (%s): fetch it ahead of time "
            "(docs/runners.md, Flink and Spark) and pass %s PATH"
            % (name.capitalize(), one_line(e)[:300], flag)) from e


def check_prism_location(options: Any) -> None:
    """DatagenError unless a PrismRunner job that starts its own Prism has a binary to start
    (checked before the job takes its output's lock)."""
    if runner_name(options) != "prism" or not needs_job_server(options):
        return
    location = options.view_as(PrismRunnerOptions).prism_location
    if not location:
        raise DatagenError("--runner PrismRunner needs --prism_location PATH, a Prism binary: "
                           "build one with `GOBIN=DIR %s` (docs/runners.md, Prism)" % PRISM_BUILD)
    if "://" not in location and not os.access(location, os.X_OK):
        raise DatagenError("--prism_location %s: no executable Prism binary there (build one "
                           "with `GOBIN=DIR %s`)" % (location, PRISM_BUILD))


def _prism_command(options: Any) -> Tuple[List[str], str]:
    """(command, endpoint) of Prism for `options`: the binary `--prism_location` names (a
    local file; Beam's own resolution takes care of a URL or a zip), started as Beam's
    PrismRunner would start it. DatagenError without one: Beam's fallback, a download from
    GitHub, is not something a scheduled job should depend on."""
    check_prism_location(options)
    location = options.view_as(PrismRunnerOptions).prism_location
    try:
        from apache_beam.runners.portability.prism_runner import PrismJobServer
        command, endpoint = PrismJobServer(options).subprocess_cmd_and_endpoint()
    except Exception as e:  # a URL that cannot be fetched, a zip without the binary
        raise DatagenError("--prism_location %s: %s" % (location, one_line(e)[:300])) from e
    return [str(c) for c in command], endpoint


class JobServer:
    """Beam's job server of the job's runner, started once (`start`), stopped by process
    id (`stop`); `endpoint` is what the passes get as `--job_endpoint`."""

    def __init__(self, options: Any, log_dir: Optional[str] = None) -> None:
        self._options = options
        self._log_dir = log_dir
        self._dir: Optional[str] = None
        self._proc: Optional[subprocess.Popen] = None
        self._log_path = ""
        self.endpoint: Optional[str] = None
        self.seconds: Optional[float] = None  # how long the start took, once started

    def start(self) -> "JobServer":
        start = time.time()
        if runner_name(self._options) == "flink":
            check_flink_cluster(self._options)
        self._dir = tempfile.mkdtemp(prefix="datagen-job-server-", dir=self._log_dir)
        try:
            command, endpoint = job_server_command(self._options,
                                                   os.path.join(self._dir, "artifacts"))
            self._log_path = os.path.join(self._dir, "job-server.log")
            with open(self._log_path, "wb") as log:
                proc = self._proc = subprocess.Popen(
                    ["sh", "-c", _WATCHDOG, "sh"] + [str(c) for c in command],
                    stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True, preexec_fn=_unblock_signals)
            # an interrupt kills the job's workers, not this (a session of its own:
            # interrupts.kill_worker_processes): stop() ends it by SIGTERM
            self._wait_until_ready(proc, endpoint)
        except BaseException:
            self.stop()
            raise
        self.endpoint = endpoint
        self.seconds = time.time() - start
        LOG.info("%s job server started in %.1f s (%s, pid %d)",
                 runner_name(self._options).capitalize(), self.seconds, endpoint, proc.pid)
        return self

    def _log_tail(self, lines: int = 5) -> str:
        try:
            with open(self._log_path, encoding="utf-8", errors="replace") as f:
                return " | ".join(f.read().strip().splitlines()[-lines:])
        except OSError:
            return ""

    def _wait_until_ready(self, proc: subprocess.Popen, endpoint: str) -> None:
        import grpc
        deadline = time.time() + START_SECONDS
        channel = grpc.insecure_channel(endpoint)
        try:
            while True:
                if proc.poll() is not None:
                    raise DatagenError("Beam's job server exited with status %s before it "
                                       "answered: %s" % (proc.returncode,
                                                         self._log_tail()))
                try:
                    grpc.channel_ready_future(channel).result(timeout=0.5)
                    return
                except grpc.FutureTimeoutError:
                    if time.time() > deadline:
                        raise DatagenError("Beam's job server did not answer on %s within "
                                           "%d s: %s" % (endpoint, START_SECONDS,
                                                         self._log_tail())) from None
        finally:
            channel.close()

    def pass_options(self, options: Any) -> Any:
        """A copy of `options` that submits to this job server."""
        options = copy.deepcopy(options)
        options.view_as(PortableOptions).job_endpoint = self.endpoint
        return options

    def stop(self) -> None:
        """Stops the job server's process group (the shell and the JVM) and removes its
        directory (artifacts, log); safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is not None:
            _stop_group(proc)
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def _stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM to `proc`'s process group (the watchdog shell, the JVM, the watcher); the
    shell ends once the JVM has (after its shutdown hooks); SIGKILL after STOP_SECONDS."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(STOP_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        proc.wait()
    if proc.stdin:
        proc.stdin.close()
