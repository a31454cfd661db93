"""The server the job's worker processes are forked from (`multiprocessing`'s forkserver).

It imports Beam's harness and the project's transforms once (`PRELOAD`, ~1.5 s); every worker
process forked from it starts with all of that loaded (`pipeline.runtime.worker_pool`). The driver
starts it first thing (`start_early`), so that its imports run on another core beside the
driver's own instead of after them. This module imports nothing heavy for that reason.
"""

import contextlib
import multiprocessing
import signal

from pipeline.runtime.interrupts import SIGNALS  # the job's signals (a light import)

# What every worker process needs before its first bundle: Beam's harness, the file systems,
# and the project's transforms with their codecs, numba's compiled loops loaded.
PRELOAD = ("apache_beam", "apache_beam.runners.worker.sdk_worker", "pipeline.runtime.worker_pool",
           "transforms.token_counts", "transforms.subword_refine", "transforms.encode_pairs",
           "transforms.vocab_kinds", "pipeline.runtime.worker_warmup")


def context():
    """Processes forked from a server that preloaded `PRELOAD` where the platform has one
    (Linux, macOS); else spawned, each importing what it needs."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        forkserver = multiprocessing.get_context("forkserver")
        forkserver.set_forkserver_preload(list(PRELOAD))
        return forkserver
    return multiprocessing.get_context("spawn")


@contextlib.contextmanager
def ignoring_job_signals():
    """SIGINT and SIGTERM ignored while in (main thread only), so that a process started
    meanwhile inherits that through exec: the fork server and the resource tracker the driver
    starts before its `InterruptWatcher` ignores them for the run would otherwise die of a
    Ctrl-C with a traceback, in the middle of their imports. (Blocked signals are already
    queued for the driver; one arriving in these microseconds is dropped.)"""
    saved = {sig: signal.signal(sig, signal.SIG_IGN) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def keeping_signal_mask():
    """Restores the calling thread's signal mask on leaving. Starting the first process
    starts multiprocessing's resource tracker, which unblocks SIGINT and SIGTERM in the
    calling thread afterwards; the job keeps them blocked in every thread, or an ignored
    signal delivered to that thread is lost instead of queued for the driver
    (`pipeline.runtime.interrupts`)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def start_early(argv):
    """Starts the fork server now when `argv` (the job's command line) asks for DirectRunner's
    multi_processing mode, without waiting for its imports. The job may still run in one
    process (a small input, `--in_process_below_mb`); the server then only cost its imports,
    on another core."""
    if not any(arg.endswith("multi_processing") for arg in argv):
        return
    if _runner_arg(argv) not in (None, "DirectRunner"):
        return  # worker processes of this machine only ever serve DirectRunner's passes
    if any(arg in ("-h", "--help") or arg.startswith("--dry_run") for arg in argv):
        return  # no worker process will run: the server would only hold stdout a while
    if context().get_start_method() == "forkserver":
        from multiprocessing import forkserver
        with keeping_signal_mask(), ignoring_job_signals():
            forkserver.ensure_running()


def _runner_arg(argv):
    """The value of --runner in `argv` (last one wins, as argparse), or None."""
    runner = None
    for i, arg in enumerate(argv):
        if arg == "--runner" and i + 1 < len(argv):
            runner = argv[i + 1]
        elif arg.startswith("--runner="):
            runner = arg.split("=", 1)[1]
    return runner.rsplit(".", 1)[-1] if runner else None
