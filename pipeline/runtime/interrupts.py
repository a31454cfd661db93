"""Ctrl-C, SIGTERM and SIGHUP: one line "interrupted", exit 130/143/129, no worker left, no
traceback.

A terminal's Ctrl-C sends SIGINT to the whole foreground process group, schedulers
(Airflow, systemd) send SIGTERM, and a closed terminal or ssh session sends SIGHUP; the
worker processes (DirectRunner multi_processing: the job's own,
`pipeline.runtime.local_worker_pool`, or Beam's) are in that group too, so each would print its
own KeyboardInterrupt traceback while the driver is still cleaning up. A child keeps ignored
signals ignored across exec (POSIX; also through Beam's `/bin/sh -c`, which resets a blocked
signal mask), and Python leaves an ignored SIGINT ignored. So while the job runs, these
(`SIGNALS`) are set to SIG_IGN, and the workers started meanwhile never react to them; the
driver kills them (every descendant) when it stops.

The driver still hears them: they are also *blocked* in its threads, and a blocked signal is
queued even when ignored. A watcher thread takes it with `sigtimedwait`, records it (a flag:
`received`) and sends SIGUSR1 to the main thread, which wakes it from whatever it waits on;
the SIGUSR1 handler raises `Interrupted` there. The driver kills its worker processes (Beam
would wait for them), records the summary as "interrupted", releases the lock and exits
128 + signal number. Every thread must block the signals, or one that does not could take
the queued signal and drop it: `python -m pipeline.datagen` blocks them before its first
import starts a thread.

The handler's exception alone can be lost: Python runs a signal handler wherever the main
thread is, a garbage-collection or weakref callback or a `__del__` included, and there an
exception is printed ("Exception ignored in ...") and discarded. So the flag is what counts:
the job asks `claim()` before and after every pass, every half second while one runs, and
before its commit, and stops there (`pipeline.driver.passes.PassRunner`); the handler only
makes the stop prompt where the main thread waits elsewhere.
"""

import contextlib
import ctypes
import logging
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any, Callable, Dict, Iterator, List, Literal, Optional, Set, Union

# SIGHUP: a closed terminal or ssh session, a stop as much as SIGTERM is.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
GONE_SECONDS = 10.0  # how long `kill_worker_processes` waits for the killed to end
WAKE = signal.SIGUSR1
# How long the watcher waits for a signal before it looks whether the run is over: the end
# of every run waits for it that long at most.
POLL_SECONDS = 0.02


@contextlib.contextmanager
def holding_job_signals() -> Iterator[None]:
    """The job's signals held while in (main thread only, before the driver's
    `InterruptWatcher`: `pipeline.runtime.local_worker_pool.start_early`): one already
    queued (blocked since the driver's first line) is taken, one that comes while
    multiprocessing's resource tracker unblocks them is recorded, not raised, and the first
    is sent again on leaving, blocked, for the watcher (exit 128 + signal). Ignoring them
    instead (SIG_IGN) discarded a queued Ctrl-C: the job ran to its end."""
    held: List[int] = []
    while True:  # taken now: nothing may discard them
        pending = signal.sigtimedwait(SIGNALS, 0)
        if pending is None or pending.si_signo not in SIGNALS:
            break
        held.append(pending.si_signo)

    def record(signum: int, frame: Any) -> None:
        held.append(signum)
    saved = {sig: signal.signal(sig, record) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        if held:
            os.kill(os.getpid(), held[0])


class Interrupted(BaseException):
    """The job was stopped by a signal; BaseException so no `except Exception` swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


class InterruptWatcher:
    """While entered (from the main thread), SIGINT/SIGTERM raise Interrupted in the main
    thread, once; leaving drops signals that came later and restores handlers and mask."""

    def __init__(self) -> None:
        self._received: Optional[int] = None
        self._raised = False
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._saved: Dict[int, Any] = {}
        self._old_mask: Set[int] = set()

    @property
    def received(self) -> Optional[int]:
        """The signal number this run was stopped by, or None. Beam wraps what a DoFn
        raises (Interrupted raised inside one becomes a RuntimeError), so the driver asks
        this rather than trusting the exception's type."""
        return self._received

    def claim(self) -> Optional[int]:
        """`received`, for a caller that raises Interrupted itself when it is a number: the
        SIGUSR1 handler raises no second one afterwards (into the caller's clean-up)."""
        if self._received is not None:
            self._raised = True
        return self._received

    def _on_wake(self, signum: int, frame: Optional[FrameType]) -> None:
        if self._received is not None and not self._raised:
            self._raised = True  # a second Ctrl-C while cleaning up changes nothing
            raise Interrupted(self._received)

    def _unraisable(self, unraisable: Any) -> None:
        """Python's report of an exception it discards (raised in a `__del__` or a
        garbage-collection callback): the handler's Interrupted, lost there, is no news (the
        job stops at its next check of `claim()`); any other is reported as Python does."""
        if not isinstance(unraisable.exc_value, Interrupted):
            self._unraisablehook(unraisable)

    def _watch(self, main_ident: int) -> None:
        while not self._stop.is_set():
            info = signal.sigtimedwait(SIGNALS, POLL_SECONDS)
            # Under ptrace (py-spy, a debugger) the wait may return with a garbage signal
            # number: only the signals waited for stop the run.
            if info is not None and info.si_signo in SIGNALS and self._received is None:
                self._received = info.si_signo
                # Beam's threads waiting on the killed workers end in errors, and Beam
                # logs the interrupted bundle's traceback: not news.
                threading.excepthook = lambda args: None
                # (a level, not `disabled`: that would not cover its child loggers)
                logging.getLogger("apache_beam").setLevel(logging.CRITICAL + 1)
                # First, or Beam's cleanup in the main thread waits for them forever.
                kill_worker_processes()
                signal.pthread_kill(main_ident, WAKE)

    def __enter__(self) -> "InterruptWatcher":
        if threading.current_thread() is not threading.main_thread():
            return self  # handlers can only be set from the main thread
        self._old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
        # A Ctrl-C during the driver's imports is queued (blocked since its first line);
        # ignoring the signal below would discard it: the run stops before it starts.
        pending = signal.sigtimedwait(SIGNALS, 0)
        if pending is not None and pending.si_signo in SIGNALS:
            kill_worker_processes()  # the fork server the driver started first
            signal.pthread_sigmask(signal.SIG_SETMASK, self._old_mask)
            raise Interrupted(pending.si_signo)
        self._saved = {sig: signal.signal(sig, signal.SIG_IGN) for sig in SIGNALS}
        self._saved[WAKE] = signal.signal(WAKE, self._on_wake)
        self._excepthook = threading.excepthook
        self._unraisablehook = sys.unraisablehook
        sys.unraisablehook = self._unraisable
        self._beam_log_level = logging.getLogger("apache_beam").level
        self._thread = threading.Thread(target=self._watch, args=(threading.get_ident(),),
                                        name="datagen-signals", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> Literal[False]:
        if self._thread is None:
            return False
        self._stop.set()
        self._thread.join()
        while signal.sigtimedwait(SIGNALS, 0) is not None:
            pass  # signals after the first: the run is over, they must not kill the exit
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, self._old_mask)
        threading.excepthook = self._excepthook
        sys.unraisablehook = self._unraisablehook
        logging.getLogger("apache_beam").setLevel(self._beam_log_level)
        return False


class PassStopped(BaseException):
    """Raised inside an interrupted pass's own thread (`stop_thread`); a BaseException, so
    that no `except Exception` of Beam's wraps or logs it on its way out."""


def stop_thread(thread: threading.Thread, finished: threading.Event, seconds: float) -> bool:
    """Raises PassStopped in `thread` at its next Python instruction and waits up to
    `seconds` for it to end (`finished`: the event it sets last; `Thread.is_alive` may lie
    once a join was interrupted); whether it ended. For a pass that runs in this process
    (Beam's in-process runner has no cancel): interrupted, it would write on into the work
    directory the job removes, and log a FileNotFoundError traceback there. Code in C (a
    compiled loop, a sleep) finishes its call first."""
    if thread.ident is not None and not finished.is_set():
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident),
                                                   ctypes.py_object(PassStopped))
    return finished.wait(seconds)


def _children(pid: int) -> List[int]:
    """Child pids of `pid`, from /proc (Linux; none elsewhere). Each thread's children are
    listed under that thread, and Beam starts its workers from threads of its own."""
    children: List[int] = []
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return children
    for task in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                children.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return children


def _session(pid: int) -> Optional[int]:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def kill_worker_processes() -> None:
    """SIGKILLs every descendant of this process (Beam's worker processes and their shells):
    they ignore the blocked SIGINT/SIGTERM, and Beam would otherwise wait for them. A child
    in a session of its own, and what it started, is left alone: the job started it so
    (`start_new_session`: the job server, `pipeline.runtime.job_server`) to stop it itself,
    by SIGTERM, once interrupted; Beam starts its workers in the job's session."""
    seen = []
    own = _session(0)
    todo = _children(os.getpid())
    while todo:
        pid = todo.pop()
        session = _session(pid)
        if session is not None and session != own:
            continue
        seen.append(pid)
        todo.extend(_children(pid))
    for pid in seen:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    # SIGKILL is delivered at once but a process ends later: one with a large heap is still
    # freeing it (a worker of ~1 GB, on a loaded machine, for a while). The job promises no
    # worker left when it exits (a scheduler then reuses the memory), so it waits for them,
    # a bounded time: one stuck in the kernel is not worth a job that never ends.
    deadline = time.monotonic() + GONE_SECONDS
    while any(process_alive(pid) for pid in seen) and time.monotonic() < deadline:
        time.sleep(0.01)

def process_alive(pid: int) -> bool:
    """Whether a process of this host exists (a permission error means it does) and has not
    ended: a zombie, killed but not yet reaped by its parent, runs no more."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _state(pid) != "Z"


def _stat_fields(pid: int) -> List[str]:
    """The fields of `/proc/PID/stat` after the process's name (Linux: the state first,
    field 3), or none where that cannot be read (no /proc, or no such process)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read().decode("ascii", "replace")
    except OSError:
        return []
    return stat.rsplit(")", 1)[-1].split()  # the name, in parentheses, may hold spaces


def _state(pid: int) -> Optional[str]:
    """A process's state letter (`Z`: a zombie), or None."""
    fields = _stat_fields(pid)
    return fields[0] if fields else None


def process_start(pid: int) -> Optional[str]:
    """When a process of this host started, as the kernel counts it (Linux: field 22 of
    `/proc/PID/stat`, clock ticks since boot), so that a pid reused by another process is told
    apart; None where that cannot be read (no /proc, or no such process)."""
    fields = _stat_fields(pid)
    return fields[19] if len(fields) > 19 else None
