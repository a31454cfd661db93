"""Scheduled, unattended runs: fingerprints, the output lock and its lease terms,
Ctrl-C/SIGTERM/SIGHUP and kill -9.

Through the public command (`pipeline.datagen.main` in-process, `python -m pipeline.datagen`
in a subprocess where signals are involved), on a few hundred lines of the sample corpus.
Each test acts on an event (a log line, a process appearing, the job stopped with SIGSTOP),
never after a fixed sleep: a busy machine only makes it slower.
"""

import glob
import json
import os
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest

from datagen_helpers import (DIRECT_MP2, FNAPI, end_group, pass_started, small_corpus,
                             start_job, wait_for, wait_for_line)
from pipeline import datagen
from repo_paths import REPO_ROOT

pytestmark = pytest.mark.slow

FLAGS = ["--problem", "p", "--num_train_shards", "2"]


@pytest.fixture
def corpus(tmp_path):
    """300 pairs of the bundled corpus, copied so a test may change them."""
    return small_corpus(tmp_path, 300)


def _argv(out, corpus, *extra, runner=FNAPI):
    return (["--train_source", corpus[0], "--train_target", corpus[1], "--output_dir",
             str(out)] + FLAGS + list(runner) + [str(e) for e in extra])


def _summary(out):
    with open(os.path.join(str(out), "p.datagen_summary.json")) as f:
        return json.load(f)


def _visible(out):
    """The outputs a reader uses: shards and the length report."""
    return glob.glob(os.path.join(str(out), "p-train*")) + glob.glob(
        os.path.join(str(out), "p-dev*")) + glob.glob(os.path.join(str(out), "p.lengths.html"))


def _write_lease(out, **lease):
    """Another run's lease file; its terms (heartbeat_seconds, stale_seconds) only if given."""
    os.makedirs(str(out), exist_ok=True)
    base = {"run_id": "other", "host": "elsewhere", "pid": 4242,
            "started_at": "2026-01-01T00:00:00+00:00", "heartbeat_at": time.time(),
            "heartbeat_iso": "now"}
    base.update(lease)
    with open(os.path.join(str(out), "p.datagen.lock"), "w") as f:
        json.dump(base, f)


def test_fingerprint_changed_flag_input_and_reused_vocab(tmp_path, corpus, capsys):
    out = tmp_path / "out"
    assert datagen.main(_argv(out, corpus)) == 0
    assert _summary(out)["fingerprint"]["flags"]["seed"] == 0
    assert os.path.exists(out / ".vocab.p.8192.subwords.en.fingerprint.json")
    assert not os.path.exists(out / "p.datagen.lock")
    capsys.readouterr()

    assert datagen.main(_argv(out, corpus, "--encode_chunk_lines", 7)) == 0  # operational
    assert "nothing to do" in capsys.readouterr().err

    assert datagen.main(_argv(out, corpus, "--seed", 1)) == 2
    err = capsys.readouterr().err
    assert "complete output of other inputs/flags: --seed 0 -> 1" in err
    assert "--overwrite" in err and "Traceback" not in err

    os.utime(corpus[0], (time.time() + 100, time.time() + 100))
    assert datagen.main(_argv(out, corpus)) == 2
    assert "%s changed (size/mtime)" % corpus[0] in capsys.readouterr().err
    assert os.path.exists(out / "p.DATAGEN_COMPLETE")

    assert datagen.main(_argv(out, corpus, "--seed", 1, "--overwrite")) == 0
    assert _summary(out)["fingerprint"]["flags"]["seed"] == 1
    assert datagen.main(_argv(out, corpus, "--seed", 1)) == 0  # same fingerprint: no-op
    assert "nothing to do" in capsys.readouterr().err

    # A crash after the vocab was written, then a run on other inputs: the vocab is refused.
    os.remove(out / "p.DATAGEN_COMPLETE")
    with open(corpus[1], "ab") as f:
        f.write(b"\n")
    with open(corpus[0], "ab") as f:
        f.write(b"\n")
    assert datagen.main(_argv(out, corpus, "--seed", 1)) == 2
    err = capsys.readouterr().err
    assert "vocab.p.8192.subwords.en was made from other vocab inputs/flags" in err
    assert "train.en changed (size/mtime)" in err
    assert _visible(out) and not os.path.exists(out / "p.DATAGEN_COMPLETE")


def test_held_lock_exits_2_naming_the_holder_and_stale_lock_is_taken_over(
        tmp_path, corpus, capsys):
    out = tmp_path / "out"
    _write_lease(out, host=socket.gethostname(), pid=os.getpid(), run_id="abc")
    assert datagen.main(_argv(out, corpus)) == 2
    err = capsys.readouterr().err
    assert "in use by run abc (host %s, pid %d" % (socket.gethostname(), os.getpid()) in err
    assert not os.path.exists(out / "p.datagen_summary.json")

    _write_lease(out, heartbeat_at=time.time() - 30)  # another host, heartbeat 30 s old
    assert datagen.main(_argv(out, corpus, "--lock_stale_seconds", 10)) == 0
    err = capsys.readouterr().err
    assert "taking over the lock" in err and "no heartbeat for 30 s" in err
    assert _summary(out)["status"] == "complete"
    assert not os.path.exists(out / "p.datagen.lock")


def _workers(proc):
    """The job's family of processes, once both its worker processes (DIRECT_MP2: forked
    by the fork server, not the job's own children) are up."""
    def family():
        found = psutil.Process(proc.pid).children(recursive=True)
        return found if len([c for c in found if c.ppid() != proc.pid]) >= 2 else None
    return wait_for(family, "the job's two worker processes started", proc)


def _stopped_in_pass_1(proc, runner):
    """Waits for pass 1 to start (with worker processes, for them too), then stops the
    job's process group (SIGSTOP): whatever the machine's speed, the job is alive and mid-
    pass when the test's signal comes. Returns the job's family of processes."""
    wait_for_line(proc, pass_started(1))
    family = (_workers(proc) if runner is DIRECT_MP2
              else psutil.Process(proc.pid).children(recursive=True))
    os.killpg(proc.pid, signal.SIGSTOP)
    return family


def _signal_group(proc, sig):
    """Sends `sig` to the job's process group (and SIGCONT, should the test have stopped
    it); (exit status, stderr). The group is SIGKILLed if the job hangs."""
    try:
        os.killpg(proc.pid, sig)
        os.killpg(proc.pid, signal.SIGCONT)  # `sig` was sent first: it is what the job meets
        err = proc.stderr.read()
        return proc.wait(timeout=600), err
    finally:
        end_group(proc)


def _assert_none_left_running(family):
    """Every process of `family` (psutil processes of a job that has ended) ends too."""
    def running():
        return [p.pid for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    wait_for(lambda: not running(), "the ended job's processes ending", seconds=120)


@pytest.mark.parametrize("sig,runner", [(signal.SIGINT, DIRECT_MP2),
                                        (signal.SIGTERM, DIRECT_MP2),
                                        (signal.SIGHUP, DIRECT_MP2),
                                        (signal.SIGINT, FNAPI)],
                         ids=["sigint-2-workers", "sigterm-2-workers", "sighup-2-workers",
                              "sigint-fnapi"])
def test_signal_to_the_process_group(tmp_path, corpus, capsys, sig, runner):
    """SIGINT (Ctrl-C), SIGTERM (a scheduler) and SIGHUP (a closed terminal or ssh session,
    which the kernel sends to the terminal's foreground group) mid-pass: one line
    "interrupted (SIG...)", exit 128 + the signal, the summary says interrupted, no output
    and no lock left, no process left running, and a rerun completes."""
    out = tmp_path / "out"
    proc = start_job(_argv(out, corpus, runner=runner))
    try:
        family = _stopped_in_pass_1(proc, runner)
        # a second run on the same directory meanwhile stops at once, naming the first
        assert datagen.main(_argv(out, corpus)) == 2
        assert "pid %d" % proc.pid in capsys.readouterr().err
    finally:
        status, err = _signal_group(proc, sig)
    assert status == 128 + sig, err
    assert "Traceback" not in err and err.strip().splitlines()[-1].endswith(
        "ERROR interrupted (%s)" % signal.Signals(sig).name), err
    _assert_none_left_running(family)
    assert _summary(out)["status"] == "interrupted"
    assert _visible(out) == [] and not os.path.exists(out / "p.datagen.lock")
    if runner is DIRECT_MP2:
        assert datagen.main(_argv(out, corpus)) == 0
        assert _summary(out)["status"] == "complete"


def _fork_server(proc):
    for child in psutil.Process(proc.pid).children():
        if "multiprocessing.forkserver" in " ".join(child.cmdline()):
            return child
    return None


def _importing_beam(server):
    """True once the fork server has mapped one of Beam's compiled modules: it is importing
    Beam (its imports take about a second more)."""
    with open("/proc/%d/maps" % server.pid) as maps:
        return "apache_beam" in maps.read()


@pytest.mark.parametrize("moment", ["driver-imports", "fork-server-imports"])
def test_ctrl_c_while_the_job_starts(tmp_path, corpus, moment):
    """A Ctrl-C during the driver's imports (the fork server has just been started, before
    them) or while the worker processes' fork server imports Beam: queued for the driver, not
    discarded, and it kills no helper process with a traceback: exit 130, one line, nothing
    left running."""
    proc = start_job(_argv(tmp_path / "out", corpus, runner=DIRECT_MP2))
    try:
        server = wait_for(lambda: _fork_server(proc), "the fork server started", proc)
        if moment == "fork-server-imports":
            wait_for(lambda: _importing_beam(server), "the fork server importing Beam", proc)
        family = psutil.Process(proc.pid).children(recursive=True)
    finally:
        status, err = _signal_group(proc, signal.SIGINT)
    assert status == 130, err
    assert "Traceback" not in err and "resource_tracker" not in err, err
    assert err.strip().splitlines()[-1].endswith("ERROR interrupted (SIGINT)"), err
    _assert_none_left_running(family)


def test_a_finished_run_ends_its_helpers_and_prints_everything(tmp_path, corpus):
    """The command leaves without the interpreter's teardown (os._exit): the summary on
    stdout and the log are complete, exit handlers ran (one stops the job server a runner
    such as Prism started), the worker processes, fork server and resource tracker all end,
    and no helper complains (a leaked resource, a lost channel)."""
    out = tmp_path / "out"
    marker = tmp_path / "exit-handler-ran"
    # the command as `python -m` runs it, with an exit handler registered first
    cmd = [sys.executable, "-c", "import atexit, runpy, sys; marker = sys.argv[1]; "
           "atexit.register(lambda: open(marker, 'w').close()); "
           "sys.argv = ['pipeline.datagen'] + sys.argv[2:]; "
           "runpy.run_module('pipeline.datagen', run_name='__main__', alter_sys=True)",
           str(marker)] + _argv(out, corpus, runner=DIRECT_MP2)
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        family = _workers(proc)
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        end_group(proc)
    assert proc.returncode == 0, stderr
    assert stdout.startswith("datagen complete: problem p") and stdout.rstrip().splitlines()[
        -1].startswith("stages: "), stdout
    assert "pass 2 done" in stderr and "Traceback" not in stderr and "resource_tracker" not in \
        stderr and "leaked" not in stderr, stderr
    assert _summary(out)["status"] == "complete" and marker.exists()
    assert len(family) >= 4  # fork server, resource tracker, 2 workers
    _assert_none_left_running(family)


def test_kill_9_then_rerun_takes_over_the_dead_runs_lock(tmp_path, corpus, capsys):
    out = tmp_path / "out"
    proc = start_job(_argv(out, corpus))
    try:
        wait_for_line(proc, pass_started(1))  # the lock is held from before pass 1
    finally:
        end_group(proc)
    assert os.path.exists(out / "p.datagen.lock") and _visible(out) == []
    assert datagen.main(_argv(out, corpus)) == 0
    err = capsys.readouterr().err
    assert "taking over the lock" in err and "process %d on this host is gone" % proc.pid in err
    assert _summary(out)["status"] == "complete"


# -- the lease records its holder's terms (`pipeline.output.lock`) -------------------------------
# A taker judges staleness by the holder's recorded --lock_stale_seconds, never by its own
# shorter one. The lock's own tests (a live holder on this host, one of many takers, the
# stores): tests/pipeline/output/test_lock.py.

def test_a_shorter_lock_stale_seconds_does_not_take_a_live_runs_lease(tmp_path, corpus,
                                                                       capsys):
    """A real job holds the lease (default terms: 120 s); it is stopped (SIGSTOP: alive, no
    heartbeat) for longer than a second run's --lock_stale_seconds 0.5. The second run is
    refused with one line and exit 2; the first goes on (SIGCONT) and ends complete."""
    out = tmp_path / "out"
    proc = start_job(_argv(out, corpus))
    try:
        lines = wait_for_line(proc, pass_started(1))
        os.killpg(proc.pid, signal.SIGSTOP)
        try:
            # its last heartbeat is older than the second run's terms: no event to wait
            # for, a lower bound on time passed, which a busy machine only lengthens
            time.sleep(1.5)
            assert datagen.main(_argv(out, corpus, "--lock_stale_seconds", 0.5)) == 2
        finally:
            os.killpg(proc.pid, signal.SIGCONT)
        err = "".join(lines) + proc.stderr.read()
        assert proc.wait(timeout=600) == 0, err
    finally:
        end_group(proc)
    refusal = capsys.readouterr().err.strip().splitlines()
    assert len(refusal) == 1, refusal
    assert "is in use by run" in refusal[0] and "pid %d" % proc.pid in refusal[0]
    assert "stale after 120 s without a heartbeat" in refusal[0]
    assert _summary(out)["status"] == "complete"
    assert not os.path.exists(out / "p.datagen.lock")


def test_a_dead_holders_lease_is_taken_after_the_holders_staleness(tmp_path, corpus, capsys):
    """Another host's lease with terms (stale after 2 s): a heartbeat 1 s old is not stale
    even to a run with --lock_stale_seconds 0.5; one 5 s old is, even to a run with 600."""
    out = tmp_path / "out"
    terms = dict(pid_start=None, heartbeat_seconds=0.5, stale_seconds=2.0)
    _write_lease(out, heartbeat_at=time.time() - 1, **terms)
    assert datagen.main(_argv(out, corpus, "--lock_stale_seconds", 0.5)) == 2
    err = capsys.readouterr().err
    assert "is in use by run other (host elsewhere" in err and "stale after 2 s" in err
    _write_lease(out, heartbeat_at=time.time() - 5, **terms)
    assert datagen.main(_argv(out, corpus, "--lock_stale_seconds", 600)) == 0
    err = capsys.readouterr().err
    assert "taking over the lock" in err and "its holder's --lock_stale_seconds 2)" in err
    assert not os.path.exists(out / "p.datagen.lock")
