"""Scheduled, unattended runs: fingerprints, the output lock, Ctrl-C/SIGTERM and kill -9.

Through the public command (`pipeline.datagen.main` in-process, `python -m pipeline.datagen`
in a subprocess where signals are involved), on a few hundred lines of the sample corpus.
"""

import glob
import json
import os
import signal
import socket
import re
import subprocess
import sys
import time

import psutil
import pytest

from datagen_helpers import DIRECT_MP2, FNAPI
from pipeline import datagen
from repo_paths import REPO_ROOT as ROOT

pytestmark = pytest.mark.slow

SAMPLE = os.path.join(ROOT, "sample_data", "enzh-mlqe-pe")
FLAGS = ["--problem", "p", "--num_train_shards", "2"]


@pytest.fixture
def corpus(tmp_path):
    """300 pairs of the sample corpus, copied so a test may change them."""
    paths = []
    for lang in ("en", "zh"):
        with open(os.path.join(SAMPLE, "train." + lang), "rb") as f:
            data = b"".join(f.readline() for _ in range(300))
        path = tmp_path / ("train." + lang)
        path.write_bytes(data)
        paths.append(str(path))
    return paths


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


def _start(out, corpus, runner):
    cmd = [sys.executable, "-m", "pipeline.datagen"] + _argv(out, corpus, runner=runner)
    return subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            text=True, start_new_session=True)


def _wait_for_pass(proc, seconds):
    """Reads stderr until the first pass starts, then lets it run `seconds`; the lines."""
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if re.search(r" pass 1( of ~?\d+)?: ", line):
            break
    time.sleep(seconds)
    assert proc.poll() is None, "the job ended before it could be stopped:\n" + "".join(lines)
    return lines


def _wait_for_workers(proc, timeout=60):
    """The job's worker processes, once there are some (their start-up time depends on the
    machine's load, so this polls rather than sleeping a fixed time)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, "the job ended before its workers were seen"
        # the workers: forked by the fork server, the job's child from its first line
        if [c for c in psutil.Process(proc.pid).children(recursive=True)
                if c.ppid() != proc.pid]:
            time.sleep(0.3)  # let the pass take in work, so the signal lands mid-pass
            return psutil.Process(proc.pid).children(recursive=True)
        time.sleep(0.1)
    raise AssertionError("no worker processes within %d s" % timeout)


def _signal_group(proc, sig, timeout=60):
    """Sends `sig` to the job's process group; (exit status, stderr). The group is SIGKILLed
    if the job does not end within `timeout` s (the test then fails on the status)."""
    try:
        os.killpg(proc.pid, sig)
        err = proc.stderr.read()
        return proc.wait(timeout=timeout), err
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _left_running(family):
    """The pids of `family` (psutil processes) still running half a second later."""
    time.sleep(0.5)
    return [p.pid for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.parametrize("sig,runner", [(signal.SIGINT, DIRECT_MP2),
                                        (signal.SIGTERM, DIRECT_MP2),
                                        (signal.SIGINT, FNAPI)],
                         ids=["sigint-2-workers", "sigterm-2-workers", "sigint-fnapi"])
def test_signal_to_the_process_group(tmp_path, corpus, capsys, sig, runner):
    out = tmp_path / "out"
    proc = _start(out, corpus, runner)
    try:
        _wait_for_pass(proc, 0.3 if runner is FNAPI else 0.5)  # the 300-pair job: ~1 s
        family = (_wait_for_workers(proc) if runner is DIRECT_MP2
                  else psutil.Process(proc.pid).children(recursive=True))
        # a second run on the same directory meanwhile stops at once, naming the first
        assert datagen.main(_argv(out, corpus)) == 2
        assert "pid %d" % proc.pid in capsys.readouterr().err
    finally:
        status, err = _signal_group(proc, sig)
    assert status == 128 + sig
    assert "Traceback" not in err and err.strip().splitlines()[-1].endswith(
        "ERROR interrupted (%s)" % signal.Signals(sig).name), err
    assert _left_running(family) == []
    assert _summary(out)["status"] == "interrupted"
    assert _visible(out) == [] and not os.path.exists(out / "p.datagen.lock")
    if runner is DIRECT_MP2:
        assert datagen.main(_argv(out, corpus)) == 0
        assert _summary(out)["status"] == "complete"


@pytest.mark.parametrize("after", [0.3, 1.2])
def test_ctrl_c_while_the_job_starts(tmp_path, corpus, after):
    """A Ctrl-C during the driver's imports (0.3 s) or while the worker processes' fork server
    imports (1.2 s): queued for the driver, not discarded, and it kills no helper process
    with a traceback: exit 130, one line, nothing left running."""
    proc = _start(tmp_path / "out", corpus, DIRECT_MP2)
    try:
        time.sleep(after)
        family = psutil.Process(proc.pid).children(recursive=True)
    finally:
        status, err = _signal_group(proc, signal.SIGINT)
    assert status == 130, err
    assert "Traceback" not in err and "resource_tracker" not in err, err
    assert err.strip().splitlines()[-1].endswith("ERROR interrupted (SIGINT)"), err
    assert _left_running(family) == []


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
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        family = _wait_for_workers(proc)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, stderr
    assert stdout.startswith("datagen complete: problem p") and stdout.rstrip().splitlines()[
        -1].startswith("stages: "), stdout
    assert "pass 2 done" in stderr and "Traceback" not in stderr and "resource_tracker" not in \
        stderr and "leaked" not in stderr, stderr
    assert _summary(out)["status"] == "complete" and marker.exists()
    assert len(family) >= 4  # fork server, resource tracker, 2 workers
    assert _left_running(family) == []


def test_kill_9_then_rerun_takes_over_the_dead_runs_lock(tmp_path, corpus, capsys):
    out = tmp_path / "out"
    proc = _start(out, corpus, FNAPI)
    try:
        _wait_for_pass(proc, 1.0)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert os.path.exists(out / "p.datagen.lock") and _visible(out) == []
    assert datagen.main(_argv(out, corpus)) == 0
    err = capsys.readouterr().err
    assert "taking over the lock" in err and "process %d on this host is gone" % proc.pid in err
    assert _summary(out)["status"] == "complete"


def test_local_lock_is_taken_at_once_by_exactly_one_of_many_runs(tmp_path):
    """On a local disk a free lease is an exclusive create: no settle wait, and of runs that
    try at the same moment exactly one gets it; its heartbeat keeps the file there."""
    import threading
    from pipeline.output.lock import OutputLock
    from pipeline.runtime.errors import DatagenError

    out = str(tmp_path / "new" / "out")  # the lock makes the directory
    locks = [OutputLock(out, "p", stale_seconds=0.8) for _ in range(8)]  # heartbeat 0.2 s
    outcomes = [None] * len(locks)
    start = threading.Barrier(len(locks))

    def take(i):
        start.wait()
        began = time.time()
        try:
            locks[i].acquire()
            outcomes[i] = ("held", time.time() - began)
        except DatagenError as e:
            outcomes[i] = ("refused", str(e))

    threads = [threading.Thread(target=take, args=(i,)) for i in range(len(locks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    held = [i for i, o in enumerate(outcomes) if o[0] == "held"]
    assert len(held) == 1, outcomes
    from pipeline.output.lock import SettledLease, lease_for
    assert not isinstance(lease_for(out), SettledLease)  # no settle wait on a local disk
    assert all("is in use by run %s" % locks[held[0]].lease["run_id"] in o[1]
               for o in outcomes if o[0] == "refused")
    path = os.path.join(out, "p.datagen.lock")
    versions = {locks[held[0]].version}  # five heartbeats: the lease file is never missing
    deadline = time.monotonic() + 600  # a bound on a hang only: the heartbeats are the events
    while len(versions) <= 5:
        assert os.path.exists(path) and time.monotonic() < deadline
        versions.add(locks[held[0]].version)
    assert json.loads(open(path).read())["run_id"] == locks[held[0]].lease["run_id"]
    locks[held[0]].release()
    assert not os.path.exists(path) and os.listdir(out) == []
