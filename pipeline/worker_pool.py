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

A process reads the job's options from its stdin (not argv, which any user can read) and
ends when the driver closes that pipe: at the end of the job, and also when the driver dies
in any way (the kernel closes the pipe), so none is ever left behind.
"""

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import traceback
from concurrent import futures

import grpc
from apache_beam.portability.api import beam_fn_api_pb2, beam_fn_api_pb2_grpc

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
        self._processes = []
        self._backends = []
        self._server = None
        self.address = None

    def start(self):
        """Starts the processes and the front service, without waiting for the processes
        to be ready (they import Beam meanwhile, while the driver builds its first pass): a
        worker request waits for its process (`ready` waits for all)."""
        settings = json.dumps({"options": self._options.get_all_options(drop_default=True),
                               "log_level": self._log_level})
        try:
            for _ in range(self.num_workers):
                process = subprocess.Popen([sys.executable, "-m", "pipeline.worker_pool"],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                self._processes.append(process)
                try:  # on stdin, not argv: options may hold credentials, argv is public
                    process.stdin.write(settings.encode() + b"\n")
                    process.stdin.flush()
                except BrokenPipeError:
                    pass  # it died at once: a worker request (or `ready`) says so
            self._backends = [_Backend(p) for p in self._processes]
            self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
            beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(
                _RoundRobin(self._backends), self._server)
            self.address = "localhost:%d" % self._server.add_insecure_port("localhost:0")
            self._server.start()
        except BaseException:
            self.close()
            raise
        return self

    def dead(self):
        """How each worker process that is gone ended ("worker process 12 killed by
        SIGKILL"): a pass whose worker died fails with Beam's data-channel errors, which do
        not say why."""
        gone = []
        for process in self._processes:
            status = process.poll()
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
        if self._server is not None:
            self._server.stop(None)
            self._server = None
        for backend in self._backends:
            backend.close()
        for process in self._processes:
            try:
                process.stdin.close()
            except OSError:
                pass
        for process in self._processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stdout.close()
        self._processes = []
        self._backends = []

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
        return False


class _Backend:
    """One worker process and, once it has printed its address, a stub of its service."""

    def __init__(self, process):
        self.process = process
        self._channel = None
        self._stub = None
        self._lock = threading.Lock()

    def stub(self):
        with self._lock:
            if self._stub is None:
                self._channel = grpc.insecure_channel(self._address())
                self._stub = beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolStub(self._channel)
            return self._stub

    def close(self):
        """Closes the channel first: a process stopping under an open channel makes gRPC
        log its GOAWAY on the console."""
        with self._lock:
            if self._channel is not None:
                self._channel.close()
                self._channel = self._stub = None

    def _address(self):
        """The first line the process prints: its pool service's address."""
        result = []
        reader = threading.Thread(target=lambda: result.append(self.process.stdout.readline()),
                                  daemon=True)
        reader.start()
        reader.join(START_TIMEOUT_SECONDS)
        line = result[0].decode().strip() if result else ""
        if not line.startswith("localhost:"):
            raise RuntimeError("worker process %d did not start (exit status %s)"
                               % (self.process.pid, self.process.poll()))
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


def _serve(settings):
    """A worker process: harnesses in threads (`_HarnessThreads`) until stdin closes."""
    from apache_beam.internal import pickler
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import (PipelineOptions, SetupOptions,
                                                      WorkerOptions)

    from pipeline import console

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
        print("localhost:%d" % port, flush=True)
        # From here on stdout is stderr: nobody reads the pipe after the address, and a
        # full pipe would block whatever prints next.
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        sys.stdin.buffer.read()  # returns when the driver closes the pipe or dies
        server.stop(None)


if __name__ == "__main__":
    _serve(json.loads(sys.stdin.buffer.readline()))
