"""Worker processes kept for the whole job, for DirectRunner's multi_processing mode.

The job runs as several passes, each a pipeline of its own. In multi_processing mode Beam
starts fresh worker processes for every pipeline: each imports Beam and the project again
(~1.6 s here) and at the end Beam waits for them to exit one after the other (~0.45 s each),
so on a 100k-pair job that was ~2.5 s of every pass, more than the work of some passes.

`LocalWorkerPool` starts the worker processes once, when the first pass needs them, and
every pass's runner asks them for workers through Beam's EXTERNAL environment: each process
serves Beam's worker pool API as Beam's own pool does in thread mode (a StartWorker request
runs an `SdkHarness` in a thread of that already warm process), and a
small front service in the driver hands the StartWorker requests of a pass to the processes
in turn, so a pass's N workers land in N different processes (one process each, no GIL
shared), exactly as in multi_processing mode. A harness ends when its pass's runner closes
the control channel; the process stays for the next pass.

The processes are forked from one server process that imported Beam and the project first
(`pipeline.runtime.fork_server`: `multiprocessing`'s forkserver, where the platform has one, started
by the driver before its own imports): each process started fresh
imports the same ~1.5 s of modules, and on 2 cores the second worker's import ran beside the
first's and the driver's, delaying the first stage by as much again. A forked process starts
with all of it loaded, in pages it shares with the server until it writes them. As with
every start method but a bare fork, a process first imports the driver's main module under
another name (multiprocessing's rule): `python -m pipeline.datagen` guards its body, and a
script of a user's that calls `pipeline.datagen.main` needs the same
`if __name__ == "__main__":` guard.

A process gets the job's options through its start arguments, never argv (which any user can
read), and keeps a pipe to the driver: it ends when the driver closes that pipe, at the end of
the job, and also when the driver dies in any way (the kernel closes the pipe), so none is
ever left behind.
"""

import itertools
import multiprocessing.util
import signal
import threading
import traceback
from concurrent import futures

import grpc
from apache_beam.portability.api import beam_fn_api_pb2, beam_fn_api_pb2_grpc

from pipeline.runtime import fork_server
from pipeline.runtime.interrupts import process_alive, SIGNALS

START_TIMEOUT_SECONDS = 120


class LocalWorkerPool:
    """`num_workers` long-lived worker processes and the address of the EXTERNAL
    environment that hands them out (`address`). `options`: the job's Beam options, which
    every worker process applies once (file systems, pickler) as Beam's worker main does;
    `log_level`: the job's --log_level for the processes' own logging."""

    def __init__(self, num_workers, options, log_level=None):
        self.num_workers = num_workers
        self._options = options
        self._log_level = log_level
        self._backends = []
        self._server = None
        self._at_exit = None
        self.address = None

    @property
    def _processes(self):
        """The processes started so far."""
        return [b.process for b in self._backends if b.process is not None]

    def start(self):
        """Starts the processes and the front service, without waiting for the processes
        to be ready (the first one waits for the fork server's imports, while the driver
        builds its first pass): a worker request waits for its process (`ready` waits for
        all)."""
        settings = {"options": self._options.get_all_options(drop_default=True),
                    "log_level": self._log_level}
        try:
            self._backends = [_Backend() for _ in range(self.num_workers)]
            context = fork_server.context()
            # A driver leaving without close() ends them too: multiprocessing's exit handler
            # runs such finalizers first, then would wait for the processes (which ignore
            # its SIGTERM, as they ignore the job's signals).
            self._at_exit = multiprocessing.util.Finalize(self, self.close, exitpriority=10)
            threading.Thread(target=self._start_processes, args=(context, settings),
                             name="datagen-start-workers", daemon=True).start()
            self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
            beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(
                _RoundRobin(self._backends), self._server)
            self.address = "localhost:%d" % self._server.add_insecure_port("localhost:0")
            self._server.start()
        except BaseException:
            self.close()
            raise
        return self

    def _start_processes(self, context, settings):
        with fork_server.keeping_signal_mask():
            for backend in self._backends:
                backend.start(context, settings)

    def dead(self):
        """How each worker process that is gone ended ("worker process 12 killed by
        SIGKILL"): a pass whose worker died fails with Beam's data-channel errors, which do
        not say why."""
        gone = []
        for process in self._processes:
            status = process.exitcode
            if status == 255 and _running(process.pid):
                continue  # the fork server, which reports its children's ends, is gone
            if status is not None:
                gone.append("worker process %d %s" % (process.pid, (
                    "killed by %s" % signal.Signals(-status).name if status < 0
                    else "exited with status %d" % status)))
        return gone

    def ready(self):
        """Waits until every process serves; RuntimeError if one did not start."""
        for backend in self._backends:
            backend.stub()

    def close(self):
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

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
        return False


def _running(pid):
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

    def __init__(self):
        self.process = None
        self._pipe = None  # the driver's end of the process's pipe
        self._error = None
        self._started = threading.Event()
        self._closed = False
        self._start_lock = threading.Lock()  # starting the process vs closing
        self._channel = None
        self._stub = None
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
            theirs.close()  # the process's end: kept here, the process would never see EOF
        except BaseException as e:
            self._error = "%s: %s" % (type(e).__name__, e)
        finally:
            self._started.set()

    def stub(self):
        with self._lock:
            if self._stub is None:
                self._channel = grpc.insecure_channel(self._address())
                self._stub = beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolStub(self._channel)
            return self._stub

    def close(self):
        """Closes the channel first: a process stopping under an open channel makes gRPC
        log its GOAWAY on the console."""
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
            try:
                if self._pipe.poll(START_TIMEOUT_SECONDS):
                    line = self._pipe.recv()
            except (EOFError, OSError):
                pass
        if not line.startswith("localhost:"):
            pid = self.process.pid if self.process is not None else None
            if pid is not None:
                self.process.join(1)  # its exit status, when it is ending
            status = self.process.exitcode if pid is not None else None
            raise RuntimeError("worker process %s did not start (%s)" % (
                pid, self._error or "exit status %s" % status))
        return line


class _RoundRobin(beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolServicer):
    """Forwards each StartWorker request to the next worker process in turn. Nothing to stop:
    a harness ends when its pass's runner closes the control channel (Beam's EXTERNAL worker
    handler never sends StopWorker)."""

    def __init__(self, backends):
        self._next = itertools.cycle(backends)
        self._lock = threading.Lock()

    def StartWorker(self, request, context):
        with self._lock:
            backend = next(self._next)
        try:
            return backend.stub().StartWorker(request)
        except Exception as e:  # the runner raises it as "Error starting worker: ..."
            return beam_fn_api_pb2.StartWorkerResponse(error=str(e))

    def StopWorker(self, request, context):
        return beam_fn_api_pb2.StopWorkerResponse()


class _HarnessThreads(beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolServicer):
    """A worker process's service: each StartWorker runs Beam's `SdkHarness` in a thread, as
    Beam's worker pool does in thread mode, but keeps no reference to it, so a finished
    pass's harness (and its state cache) is freed instead of kept for the job's lifetime."""

    def __init__(self, state_cache_size):
        self._state_cache_size = state_cache_size

    def StartWorker(self, request, context):
        from apache_beam.runners.worker.sdk_worker import SdkHarness
        try:
            harness = SdkHarness(request.control_endpoint.url, worker_id=request.worker_id,
                                 state_cache_size=self._state_cache_size)
            threading.Thread(target=harness.run, name="harness-" + request.worker_id,
                             daemon=True).start()
            return beam_fn_api_pb2.StartWorkerResponse()
        except Exception:
            return beam_fn_api_pb2.StartWorkerResponse(error=traceback.format_exc())

    def StopWorker(self, request, context):
        return beam_fn_api_pb2.StopWorkerResponse()


class _NoBundleTraceback:
    """A worker's stderr without the traceback Beam's SDK harness prints there when a bundle
    fails (`sdk_worker._execute`: `print(traceback_string, file=sys.stderr)`): the same text
    reaches the driver as the pass's error, which reports it (one line for a full disk, the
    traceback for a bug). Everything else is written as it comes; `--log_level` shows it."""

    def __init__(self, stream):
        self._stream = stream
        self._dropped = False

    def write(self, text):
        dropped, self._dropped = self._dropped, False
        if text.startswith("Traceback (most recent call last):"):
            self._dropped = True
            return len(text)
        if dropped and text == "\n":  # print's line end after it
            return len(text)
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _serve(settings, pipe):
    """A worker process: harnesses in threads (`_HarnessThreads`) until the driver closes
    `pipe`, the process's end of its pipe to the driver."""
    import os
    import sys

    from apache_beam.internal import pickler
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import (PipelineOptions, SetupOptions,
                                                      WorkerOptions)

    from pipeline.runtime import console

    # The job's signals are the driver's to handle (it ends the workers): ignored here
    # whatever the fork server was started with (`pipeline.runtime.interrupts`).
    for signum in SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    # stdout is the user's (the driver's summary): whatever a worker prints goes to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if not settings["log_level"]:
        sys.stderr = _NoBundleTraceback(sys.stderr)
    options = PipelineOptions.from_dictionary(settings["options"])
    FileSystems.set_options(options)
    pickler.set_library(options.view_as(SetupOptions).pickle_library)
    with console.library_logging(settings["log_level"]):
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(
            _HarnessThreads(options.view_as(WorkerOptions).max_cache_memory_usage_mb << 20),
            server)
        port = server.add_insecure_port("localhost:0")
        server.start()
        try:
            pipe.send("localhost:%d" % port)
            pipe.recv()  # the driver sends nothing: this returns when it closes the pipe or dies
        except (EOFError, OSError):  # OSError: the pool closed before this process served
            pass
        server.stop(None)
