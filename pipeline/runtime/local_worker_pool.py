"""DirectRunner's passes on this machine, and the only module that touches Beam's internals.

Beam's DirectRunner first tries Prism, a Go runner it downloads from GitHub (offline every
pass waits ~0.5 s for that to fail; online Prism ignores `--direct_num_workers`), so a
DirectRunner pass runs on Beam's `FnApiRunner` directly, built as DirectRunner's fallback
builds it, workers getting the pipeline options (`direct_runner`).

In multi_processing mode Beam starts fresh worker processes for every pass; each imports Beam
and the project (~1.6 s here) and Beam stops them one after the other (~0.45 s each). The
job's `LocalWorkerPool` starts `--direct_num_workers` processes once and every pass's
FnApiRunner asks them for workers through Beam's EXTERNAL environment: each process serves
Beam's worker pool API as Beam's own pool does in thread mode (a StartWorker runs an
`SdkHarness` in a thread, not kept once it ends), and a front service in the driver hands
a pass's StartWorker requests to the processes in turn, so its N workers land in N processes.
They are forked from one server (`multiprocessing`'s forkserver) that imported Beam and the
project first (`worker_preload`: its kind's modules), started before the driver's own imports (`start_early`; a script
calling `pipeline.datagen.main` needs the `if __name__ == "__main__":` guard). A process gets
the options through its start arguments (not argv, which anyone can read) and ends when its
pipe from the driver closes: at the end of the job, or when the driver dies in any way.

Beam's internals change between releases, so `internals_missing()` checks up front that
every one this module uses (`REQUIRED_INTERNALS`) exists with the parameters it passes; if
not, the job logs one warning and its passes run on Beam's stock DirectRunner (tests add an
entry Beam lacks to `REQUIRED_INTERNALS`: the documented hook). Only DirectRunner passes come
here (`pipeline.driver.passes`); `--local_worker_pool off` keeps Beam's own multi_processing
workers. Top-level imports stay light: `start_early` runs before the driver imports Beam.
"""

import contextlib
import importlib
import inspect
import itertools
import logging
import multiprocessing
import multiprocessing.util
import signal
import sys
import threading
import traceback
from typing import TYPE_CHECKING, Any, Iterator, Literal, NoReturn, Optional, Sequence

from pipeline.runtime import grpc_servers, small_input, worker_preload
from pipeline.runtime.interrupts import SIGNALS, holding_job_signals, process_alive
from pipeline.runtime.memory import freeze_long_lived, run_then_release

if TYPE_CHECKING:  # Beam is imported where it is used: see start_early
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess
    from multiprocessing.util import Finalize

    import grpc
    from apache_beam.options.pipeline_options import PipelineOptions

START_TIMEOUT_SECONDS = 120
FN_RUNNER = "apache_beam.runners.portability.fn_api_runner.fn_runner"
SDK_WORKER = worker_preload.SDK_WORKER
API = "apache_beam.portability.api"  # its modules are attributes, not importable by name

# (module, attribute, parameters this module passes to it): every internal used below.
REQUIRED_INTERNALS = [
    (FN_RUNNER, "FnApiRunner", ("default_environment", "provision_info")),
    (FN_RUNNER, "ExtendedProvisionInfo", ("provision_info",)),
    ("apache_beam.runners.portability.portable_runner",
     "JobServiceHandle.encode_pipeline_options", ("all_options",)),
    ("apache_beam.transforms.environments", "ExternalEnvironment", ("url",)),
    (SDK_WORKER, "SdkHarness", ("control_address", "worker_id", "state_cache_size")),
    (SDK_WORKER, "SdkHarness.run", ()),
    ("apache_beam.internal.pickler", "set_library", ("selected_library",)),
    (API, "beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server",
     ("servicer", "server")),
    (API, "beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolStub", ("channel",)),
    (API, "beam_fn_api_pb2.StartWorkerResponse", ()),
    (API, "beam_provision_api_pb2.ProvisionInfo", ()),
    ("apache_beam.runners.worker.channel_factory", "GRPCChannelFactory.DEFAULT_OPTIONS", ()),
]


def beam_ping_interval_ms() -> int:
    """How often Beam's channels ping: the pool's servers accept it (grpc_servers)."""
    from apache_beam.runners.worker.channel_factory import GRPCChannelFactory
    return dict(GRPCChannelFactory.DEFAULT_OPTIONS)["grpc.keepalive_time_ms"]


def internals_missing() -> Optional[str]:
    """None when every entry of REQUIRED_INTERNALS exists and takes its parameters; else
    what differs ("apache_beam...fn_runner.FnApiRunner has no parameter provision_info")."""
    for module_name, path, parameters in REQUIRED_INTERNALS:
        name = "%s.%s" % (module_name, path)
        try:
            target: Any = importlib.import_module(module_name)  # then its attributes
            for part in path.split("."):
                target = getattr(target, part)
            accepted = inspect.signature(target).parameters if parameters else {}
        except (ImportError, AttributeError, TypeError, ValueError) as e:
            return "%s: %s" % (name, e)
        for parameter in parameters:
            if parameter not in accepted:
                return "%s has no parameter %s" % (name, parameter)
    return None


class _SameWorkersWarning(logging.Filter):
    """Drops the FnApiRunner's advice to use multi_processing for several workers: a pass on
    the pool is in_memory for it, with workers that are processes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("If direct_num_workers is not equal to 1")


def direct_runner(options: "PipelineOptions", pool: Optional["LocalWorkerPool"] = None
                  ) -> "tuple[object, PipelineOptions]":
    """(runner, options) of a DirectRunner pass: Beam's FnApiRunner with the provision info
    DirectRunner's fallback gives it; with `pool`, its workers come from the pool's processes
    (an EXTERNAL environment) and the pass's options say in_memory with the same number of
    workers (multi_processing would make the runner start processes of its own). Call only
    when `internals_missing()` is None."""
    import copy
    from apache_beam.options.pipeline_options import DirectOptions
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.portability.fn_api_runner import fn_runner
    from apache_beam.runners.portability.portable_runner import JobServiceHandle
    from apache_beam.transforms.environments import ExternalEnvironment
    encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
    provision = fn_runner.ExtendedProvisionInfo(
        beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded))
    if pool is None:
        return fn_runner.FnApiRunner(provision_info=provision), options
    logger = logging.getLogger(fn_runner.__name__)
    if not any(isinstance(f, _SameWorkersWarning) for f in logger.filters):
        logger.addFilter(_SameWorkersWarning())
    pass_options = copy.deepcopy(options)
    direct = pass_options.view_as(DirectOptions)
    direct.direct_running_mode = "in_memory"
    direct.direct_num_workers = pool.num_workers
    return fn_runner.FnApiRunner(default_environment=ExternalEnvironment(pool.address),
                                 provision_info=provision), pass_options


def leave(status: int, exit_handlers: bool) -> NoReturn:
    """Ends the process with `status` without the interpreter's teardown of its modules
    (~0.3 s for Beam's); `exit_handlers`: run the atexit handlers first (they stop a job
    server a runner started, flush logging). Without Python's private `_run_exitfuncs` the
    handlers and the teardown run as in any exit."""
    import atexit
    import os
    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    if exit_handlers:
        if run_handlers is None:
            raise SystemExit(status)
        run_handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:  # a closed pipe (`| head`): nothing more to say there
            pass
    os._exit(status)


def fork_context(preload: Sequence[str] = ()) -> multiprocessing.context.BaseContext:
    """Processes forked from a server that preloads `preload` (default: what any job's
    workers need, `worker_preload.preload()`) where the platform has one (Linux, macOS);
    else spawned, each importing what it needs. A server already running keeps its own."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        forkserver = multiprocessing.get_context("forkserver")
        forkserver.set_forkserver_preload(list(preload or worker_preload.preload()))
        return forkserver
    return multiprocessing.get_context("spawn")


@contextlib.contextmanager
def keeping_signal_mask() -> Iterator[None]:
    """Restores the calling thread's signal mask on leaving: starting the first process
    starts multiprocessing's resource tracker, which unblocks SIGINT and SIGTERM in the
    calling thread; the job keeps them blocked in every thread (`pipeline.runtime.interrupts`)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


# The Beam pipeline options `start_early` reads (Beam's and `runners.LocalWorkerPoolOptions`
# declare them; a test holds these names to those declarations): Beam's own parser needs
# Beam's import, which the fork server's imports are to overlap.
EARLY_FLAGS = ("--runner", "--direct_running_mode", "--local_worker_pool", "--dry_run")


def _early_flags(argv: "list[str]") -> Any:
    """The flags `start_early` reads, parsed before Beam's import (which declares them for
    the real parse); None for a flag without its value (the real parse says so)."""
    import argparse
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    for flag in EARLY_FLAGS:
        parser.add_argument(flag)
    parser.add_argument("-h", "--help", action="store_true")
    try:
        return parser.parse_known_args(list(argv))[0]
    except argparse.ArgumentError:
        return None


def start_early(argv: "list[str]") -> None:
    """Starts the fork server now, not waiting for its imports, when `argv` (the job's
    command line) asks for DirectRunner's multi_processing mode with the pool (`small_input`)."""
    flags = _early_flags(argv)
    if flags is None or flags.direct_running_mode != "multi_processing":
        return
    if flags.runner and flags.runner.rsplit(".", 1)[-1] != "DirectRunner":
        return  # the pool only ever serves DirectRunner's passes
    if flags.local_worker_pool == "off" or flags.help or flags.dry_run is not None \
            or small_input.runs_in_driver(argv):  # (its passes run in this process)
        return  # no worker process will run
    if fork_context(worker_preload.preload(argv)).get_start_method() == "forkserver":
        from multiprocessing import forkserver, resource_tracker
        with holding_job_signals():
            with keeping_signal_mask():
                resource_tracker.ensure_running()  # it unblocks SIGINT, SIGTERM here
            # spawned with the job's signals blocked (the tracker runs: nothing unblocks
            # them now), which it keeps through exec: no Ctrl-C kills it mid-import
            forkserver.ensure_running()


class LocalWorkerPool:
    """`num_workers` long-lived worker processes and the address of the EXTERNAL environment
    that hands them out (`address`). `options`: the job's Beam options, which each process
    applies once (file systems, pickler) as Beam's worker main does; `log_level`: the job's
    --log_level for the processes' own logging."""

    def __init__(self, num_workers: int, options: "PipelineOptions",
                 log_level: Optional[str] = None) -> None:
        self.num_workers = num_workers
        self._options = options
        self._log_level = log_level
        self._backends: "list[_Backend]" = []
        self._server: "Optional[grpc.Server]" = None
        self._at_exit: "Optional[Finalize[None]]" = None
        self.address: Optional[str] = None

    @property
    def processes(self) -> "list[multiprocessing.process.BaseProcess]":
        """The processes started so far."""
        return [b.process for b in self._backends if b.process is not None]

    def start(self) -> "LocalWorkerPool":
        """Starts the processes (in a thread: the first waits for the fork server's imports
        while the driver builds its first pass) and the front service; a worker request
        waits for its process, `ready` for all."""
        from apache_beam.portability.api import beam_fn_api_pb2_grpc
        settings = {"options": self._options.get_all_options(drop_default=True),
                    "log_level": self._log_level}
        try:
            self._backends = [_Backend() for _ in range(self.num_workers)]
            context = fork_context()
            # A driver leaving without close() ends them too: multiprocessing's exit handler
            # runs such finalizers first, then would wait for the processes.
            self._at_exit = multiprocessing.util.Finalize(self, self.close, exitpriority=10)
            threading.Thread(target=self._start_processes, args=(context, settings),
                             name="datagen-start-workers", daemon=True).start()
            self._server = grpc_servers.new_server(beam_ping_interval_ms())
            beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(
                _RoundRobin(self._backends), self._server)
            self.address = "localhost:%d" % self._server.add_insecure_port("localhost:0")
            self._server.start()
        except BaseException:
            self.close()
            raise
        return self

    def _start_processes(self, context, settings: dict) -> None:
        with keeping_signal_mask():
            for backend in self._backends:
                backend.start(context, settings)

    def dead(self) -> "list[str]":
        """How each worker process that is gone ended ("worker process 12 killed by
        SIGKILL"): a pass whose worker died fails with Beam's data-channel errors, which do
        not say why."""
        gone = []
        for process in self.processes:
            status, pid = process.exitcode, process.pid
            if status is None or pid is None:
                continue  # running, or not started yet
            if status == 255 and _running(pid):
                continue  # the fork server, which reports its children's ends, is gone
            gone.append("worker process %d %s" % (pid, (
                "killed by %s" % signal.Signals(-status).name if status < 0
                else "exited with status %d" % status)))
        return gone

    def ready(self) -> None:
        """Waits until every process serves; RuntimeError if one did not start."""
        for backend in self._backends:
            backend.stub()

    def close(self) -> None:
        if self._at_exit is not None:
            self._at_exit.cancel()
            self._at_exit = None
        if self._server is not None:
            self._server.stop(None)
            self._server = None
        for backend in self._backends:
            backend.close()
        for backend in self._backends:
            backend.end()
        self._backends = []

    def __enter__(self) -> "LocalWorkerPool":
        return self.start()

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False


def _running(pid: int) -> bool:
    """Whether process `pid` still runs (not a zombie, where /proc says so)."""
    if not process_alive(pid):
        return False
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True  # no /proc here: it exists


class _Backend:
    """One worker process and, once it has sent its address, a stub of its service."""

    def __init__(self) -> None:
        self.process: "Optional[BaseProcess]" = None
        self._pipe: "Optional[Connection]" = None  # the driver's end of the process's pipe
        self._error: Optional[str] = None
        self._started = threading.Event()
        self._closed = False
        self._start_lock = threading.Lock()  # starting the process vs closing
        self._channel = self._stub = None
        self._lock = threading.Lock()  # the channel; held while waiting for the address

    def start(self, context, settings):
        """Starts the process (blocks while the fork server imports, the first time)."""
        try:
            with self._start_lock:
                if self._closed:
                    return
                ours, theirs = context.Pipe()
                self.process = context.Process(target=_serve, args=(settings, theirs),
                                               name="datagen-worker", daemon=True)
                self._pipe = ours
            self.process.start()
            theirs.close()  # kept here, the process would never see EOF
        except BaseException as e:
            self._error = "%s: %s" % (type(e).__name__, e)
        finally:
            self._started.set()

    def stub(self):
        import grpc
        from apache_beam.portability.api import beam_fn_api_pb2_grpc
        with self._lock:
            if self._stub is None:
                self._channel = grpc.insecure_channel(self._address())
                self._stub = beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolStub(self._channel)
            return self._stub

    def close(self):
        """Closes the channel first (a process stopping under it makes gRPC log a GOAWAY)."""
        with self._start_lock:
            self._closed = True
        with self._lock:
            if self._channel is not None:
                self._channel.close()
                self._channel = self._stub = None

    def end(self):
        """Closes the process's pipe (it then stops) and waits for it."""
        self._started.wait(START_TIMEOUT_SECONDS)
        if self._pipe is not None:
            self._pipe.close()
        if self.process is not None and self.process.pid is not None:
            self.process.join(10)
            if self.process.exitcode is None:
                self.process.kill()
                self.process.join()

    def _address(self):
        """The first message the process sends: its pool service's address."""
        line = ""
        if self._started.wait(START_TIMEOUT_SECONDS) and self._error is None:
            try:  # no pipe: the pool closed before this process started
                if self._pipe is not None and self._pipe.poll(START_TIMEOUT_SECONDS):
                    line = self._pipe.recv()
            except (EOFError, OSError):
                pass
        if not line.startswith("localhost:"):
            process = self.process
            pid = process.pid if process is not None else None
            status = None
            if process is not None and pid is not None:
                process.join(1)  # its exit status, when it is ending
                status = process.exitcode
            raise RuntimeError("worker process %s did not start (%s)" % (
                pid, self._error or "exit status %s" % status))
        return line


class _PoolService:
    """Beam's worker pool API (BeamFnExternalWorkerPool). Nothing to stop: a harness ends
    when its pass's runner closes the control channel (Beam's EXTERNAL worker handler never
    sends StopWorker)."""

    def StopWorker(self, request, context):
        from apache_beam.portability.api import beam_fn_api_pb2
        return beam_fn_api_pb2.StopWorkerResponse()


class _RoundRobin(_PoolService):
    """The driver's worker pool service: each StartWorker goes to the next process in turn."""

    def __init__(self, backends):
        self._next = itertools.cycle(backends)
        self._lock = threading.Lock()

    def StartWorker(self, request, context):
        from apache_beam.portability.api import beam_fn_api_pb2
        with self._lock:
            backend = next(self._next)
        try:
            return backend.stub().StartWorker(request)
        except Exception as e:  # the runner raises it as "Error starting worker: ..."
            return beam_fn_api_pb2.StartWorkerResponse(error=str(e))


class _HarnessThreads(_PoolService):
    """A worker process's service: each StartWorker runs Beam's `SdkHarness` in a thread, as
    Beam's pool does in thread mode, but keeps no reference to it, so a finished pass's
    harness (and its state cache) is freed."""

    def __init__(self, state_cache_size):
        self._state_cache_size = state_cache_size

    def StartWorker(self, request, context):
        from apache_beam.portability.api import beam_fn_api_pb2
        from apache_beam.runners.worker.sdk_worker import SdkHarness
        try:
            harness = SdkHarness(request.control_endpoint.url, worker_id=request.worker_id,
                                 state_cache_size=self._state_cache_size)
            threading.Thread(target=run_then_release, args=([harness],),
                             name="harness-" + request.worker_id, daemon=True).start()
            return beam_fn_api_pb2.StartWorkerResponse()
        except Exception:
            return beam_fn_api_pb2.StartWorkerResponse(error=traceback.format_exc())


def _serve(settings, pipe):
    """A worker process: harnesses in threads until the driver closes `pipe`."""
    import os
    from apache_beam.internal import pickler
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import (PipelineOptions, SetupOptions,
                                                      WorkerOptions)
    from apache_beam.portability.api import beam_fn_api_pb2_grpc

    from pipeline.runtime import console

    # The job's signals are the driver's to handle (it ends the workers).
    for signum in SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    # stdout is the user's (the driver's summary): whatever a worker prints goes to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if not settings["log_level"]:
        sys.stderr = console.NoBundleTraceback(sys.stderr)
    options = PipelineOptions.from_dictionary(settings["options"])
    FileSystems.set_options(options)
    freeze_long_lived()  # the fork server's imports: kept to the end, out of gc's way
    pickler.set_library(options.view_as(SetupOptions).pickle_library)
    with console.library_logging(settings["log_level"]):
        server = grpc_servers.new_server(beam_ping_interval_ms())
        beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(
            _HarnessThreads(options.view_as(WorkerOptions).max_cache_memory_usage_mb << 20),
            server)
        port = server.add_insecure_port("localhost:0")
        server.start()
        try:
            pipe.send("localhost:%d" % port)
            pipe.recv()  # nothing comes: this returns when the driver closes the pipe or dies
        except (EOFError, OSError):  # OSError: the pool closed before this process served
            pass
        server.stop(None)
