"""Issue 42, item 1: a signal is never lost, whatever the moment (README, Scheduling).

A SIGINT, SIGTERM or SIGHUP in the first moments of a pass was lost: the SIGUSR1 handler's
Interrupted was raised inside a garbage-collection callback, where Python discards it, and
the watcher raised only once, so the job ran on to exit 0 and a marker. The job now stops on
the watcher's flag, checked before and after every pass, while one runs and before the
commit (`pipeline.driver.passes.PassRunner.stop_if_interrupted`).

- `test_a_signal_whose_exception_python_discards_still_stops_the_job`: the discarded
  exception, made certain: the handler runs inside a `__del__` at the start of the encode
  pass.
- `test_a_signal_at_the_start_of_every_pass`: real signals to the job's process group as a
  terminal or scheduler sends them, the moment the job logs a pass's start. Economically:
  every kind's every pass once (8 runs, not 3 signals x 4 kinds x 2 passes x 2 modes = 48),
  chosen so that every signal meets both modes (in process, worker processes) and both
  passes (the vocabulary pass, the encode pass), and every kind both modes. What a signal
  does is the same for the three but the exit status, and the same for every kind.
"""

import json
import os
import re
import signal
import subprocess
import sys
import textwrap

import psutil
import pytest

from bad_input_files import corpus as _corpus
from cluster_jobs import kept_for_resume
from datagen_helpers import DIRECT_MP2, FNAPI
from registries import assert_covers, every_kind
from repo_paths import REPO_ROOT

pytestmark = pytest.mark.slow

KINDS = {"subword": ["--vocab_size", "300"], "word": ["--vocab_size", "300"],
         "byte_bpe": ["--vocab_size", "300"],
         "sentencepiece": ["--vocab_size", "30", "--spm_model_type", "bpe"]}


def test_every_kind_has_its_flags_here():
    assert_covers(KINDS, every_kind(), "test_signals_every_pass.KINDS")


def _argv(tmp_path, kind, runner):
    src, tgt = _corpus(tmp_path / "in")
    return (["--train_source", src, "--train_target", tgt, "--output_dir",
             str(tmp_path / "out"), "--problem", "p", "--num_train_shards", "2",
             "--vocab_type", kind] + KINDS[kind] + list(runner))


def _assert_stopped(out, status, err, sig):
    assert status == 128 + sig, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert err.strip().splitlines()[-1].endswith(
        "ERROR interrupted (%s)" % signal.Signals(sig).name), err
    assert not os.path.exists(os.path.join(out, "p.DATAGEN_COMPLETE"))
    with open(os.path.join(out, "p.datagen_summary.json")) as f:
        assert json.load(f)["status"] == "interrupted"
    assert sorted(n for n in os.listdir(out) if not n.startswith("vocab.")
                  and not n.startswith(".vocab.") and n != ".datagen-work") == [
                      "p.datagen_summary.json"], os.listdir(out)  # no shard, no lock
    # no work directory, but the encode chunks finished before the signal, kept for a rerun
    # (README, Resume): a resume directory with chunk manifests and fragments only
    if os.path.exists(os.path.join(out, ".datagen-work")):
        assert kept_for_resume(out), os.listdir(os.path.join(out, ".datagen-work"))


_SWALLOWED = textwrap.dedent(r'''
    import signal
    signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGTERM, signal.SIGHUP))
    import logging, os, sys, time
    from pipeline import datagen
    from pipeline.runtime import interrupts

    class Discards:
        """Its __del__ is where the signal's handler runs: Python discards what it raises."""
        def __del__(self):
            os.kill(os.getpid(), signal.SIGTERM)
            deadline = time.time() + 600  # a guard: the handler runs at once
            while time.time() < deadline and not handled:
                time.sleep(0.01)  # the handler runs in here, and raises in here

    handled = []
    wake = interrupts.InterruptWatcher._on_wake
    def on_wake(self, signum, frame):
        handled.append(signum)
        wake(self, signum, frame)
    interrupts.InterruptWatcher._on_wake = on_wake

    class AtEncode(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith("pass 2 of"):
                logging.getLogger("datagen").removeHandler(self)
                Discards()  # dropped at once: __del__ runs here, in the main thread
    logging.getLogger("datagen").addHandler(AtEncode())
    status = datagen.main(sys.argv[1:])
    print("handled %s" % handled)
    datagen._leave(status)
''')


def test_a_signal_whose_exception_python_discards_still_stops_the_job(tmp_path):
    argv = _argv(tmp_path, "word", FNAPI)
    done = subprocess.run([sys.executable, "-c", _SWALLOWED] + argv, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    # the handler ran (inside __del__, where its exception was discarded)
    assert done.stdout.strip().endswith("handled [%d]" % signal.SIGUSR1), done.stderr
    _assert_stopped(str(tmp_path / "out"), done.returncode, done.stderr, signal.SIGTERM)


_WRITES_ON = textwrap.dedent(r'''
    import signal
    signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGTERM, signal.SIGHUP))
    import os, sys, threading
    from pipeline import datagen
    from pipeline.runtime import interrupts
    from transforms.storage import file_io
    write = file_io.write_chunks
    woken, returned = threading.Event(), threading.Event()
    writers, after_return = [], []

    wake = interrupts.InterruptWatcher._on_wake
    def on_wake(self, signum, frame):
        woken.set()
        wake(self, signum, frame)
    interrupts.InterruptWatcher._on_wake = on_wake

    def slow_write(path, chunks, stores=None):
        # the encode pass's first shard: SIGINT, and the write goes on only once the
        # driver has the signal (it is stopping the job meanwhile), as a write that takes long
        if returned.is_set():
            after_return.append(path)
        if "/shards/" in path and not writers:
            writers.append(threading.current_thread())
            os.kill(os.getpid(), signal.SIGINT)
            assert woken.wait(600), "the driver never had the signal"
        return write(path, chunks, stores)
    file_io.write_chunks = slow_write
    status = datagen.main(sys.argv[1:])
    returned.set()  # the process lives on (an in-process caller): does the pass write on?
    for thread in writers:
        thread.join(600)  # to its end: whatever it still writes is seen
    print("written after the job returned: %s" % after_return)
    datagen._leave(status)
''')


def test_an_interrupted_in_process_pass_writes_nothing_after_the_job_cleaned_up(tmp_path):
    """The pass of an in-process runner went on in its thread after a signal, writing into
    the work directory the job had removed (a FileNotFoundError traceback from Beam's thread,
    or the work directory made again): it is stopped and waited for first."""
    argv = _argv(tmp_path, "word", FNAPI)
    done = subprocess.run([sys.executable, "-c", _WRITES_ON] + argv, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    _assert_stopped(str(tmp_path / "out"), done.returncode, done.stderr, signal.SIGINT)
    assert "written after the job returned: []" in done.stdout, done.stdout


def test_a_signal_queued_before_the_job_blocked_it_is_not_lost(tmp_path):
    """A Ctrl-C in the driver's first moments is queued (its signals are blocked from its
    first line; here from its start). Starting the worker processes' fork server set them to
    SIG_IGN, which discards a queued signal (POSIX): the job ran to exit 0 (seen under load
    as test_ctrl_c_while_the_job_starts[driver-imports], then a 0.3 s sleep, failing)."""
    def blocked():
        signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT,))
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.datagen"]
                            + _argv(tmp_path, "word", DIRECT_MP2), cwd=REPO_ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=blocked)
    try:
        os.killpg(proc.pid, signal.SIGINT)  # queued: blocked in the new process from exec
        err = proc.stderr.read()
        status = proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert status == 130, err
    assert err.strip().splitlines()[-1].endswith("ERROR interrupted (SIGINT)"), err
    assert "Traceback" not in err and not os.path.exists(tmp_path / "out")


def _family(pid):
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


@pytest.mark.parametrize("kind, number, sig, runner", [
    ("subword", 1, signal.SIGINT, FNAPI), ("subword", 2, signal.SIGTERM, DIRECT_MP2),
    ("word", 1, signal.SIGHUP, DIRECT_MP2), ("word", 2, signal.SIGINT, FNAPI),
    ("byte_bpe", 1, signal.SIGTERM, FNAPI), ("byte_bpe", 2, signal.SIGHUP, DIRECT_MP2),
    ("sentencepiece", 1, signal.SIGINT, DIRECT_MP2), ("sentencepiece", 2, signal.SIGHUP, FNAPI),
], ids=["subword-pass1-SIGINT-in-process", "subword-pass2-SIGTERM-workers",
        "word-pass1-SIGHUP-workers", "word-pass2-SIGINT-in-process",
        "byte_bpe-pass1-SIGTERM-in-process", "byte_bpe-pass2-SIGHUP-workers",
        "sentencepiece-pass1-SIGINT-workers", "sentencepiece-pass2-SIGHUP-in-process"])
def test_a_signal_at_the_start_of_every_pass(tmp_path, kind, number, sig, runner):
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.datagen"]
                            + _argv(tmp_path, kind, runner), cwd=REPO_ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    lines, family = [], []
    try:
        for line in proc.stderr:
            lines.append(line)
            if re.search(r" pass %d of " % number, line):
                family = _family(proc.pid)
                os.killpg(proc.pid, sig)  # the whole group, as a terminal or scheduler
                break
        err = "".join(lines) + proc.stderr.read()
        status = proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert any(" pass %d of " % number in line for line in lines), err
    _assert_stopped(str(tmp_path / "out"), status, err, sig)
    assert [p.pid for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE
            ] == []
