"""`kill_worker_processes` on real processes: every descendant of the job is killed, except a
child started in a session of its own (the job server), which the job stops itself.

It runs in a fresh Python process of its own, so it kills nothing of the test run's.
"""

import json
import os
import subprocess
import sys

from repo_paths import REPO_ROOT

_SCRIPT = r'''
import json, subprocess, sys, time
from pipeline.runtime.interrupts import kill_worker_processes, process_alive

sleep = [sys.executable, "-c", "import time; time.sleep(120)"]
worker = subprocess.Popen(sleep)
# a shell and its child, as Beam's workers run: both in the job's session
shell = subprocess.Popen(["sh", "-c", " ".join(sleep[:2]) + " 'import time; time.sleep(120)'"])
server = subprocess.Popen(sleep, start_new_session=True)
def children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as listing:
        return listing.read().split()
while not children(shell.pid):  # until the shell has started its child
    time.sleep(0.05)
kill_worker_processes()
for p in (worker, shell):
    p.wait(timeout=60)  # killed: wait() returns
alive = process_alive(server.pid) and server.poll() is None
server.kill()
server.wait()
print(json.dumps({"worker": worker.returncode, "shell": shell.returncode, "server": alive}))
'''


def test_children_are_killed_but_not_one_in_a_session_of_its_own():
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result == {"worker": -9, "shell": -9, "server": True}


# A worker holding a large heap: SIGKILL is delivered at once, but the process ends only once
# the kernel has freed its pages; the job exits saying no worker is left.
_BIG_SCRIPT = r'''
import subprocess, sys
from pipeline.runtime.interrupts import kill_worker_processes, process_alive

big = ("import time; b = bytearray(1 << 30); b[::4096] = b'x' * len(range(0, 1 << 30, 4096));"
       "print('ready', flush=True); time.sleep(600)")
worker = subprocess.Popen([sys.executable, "-c", big], stdout=subprocess.PIPE, text=True)
assert worker.stdout.readline().strip() == "ready"
kill_worker_processes()
print("alive" if process_alive(worker.pid) else "gone")  # not reaped: a zombie is gone
'''


def test_a_killed_worker_has_ended_when_the_kill_returns():
    """After `kill_worker_processes` no killed process still runs (it waits for them, up to
    GONE_SECONDS): before, a 1 GB worker was still ending when it returned, and a job
    stopped by SIGTERM on a loaded machine left a worker behind it (test_signals_every_pass)."""
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    done = subprocess.run([sys.executable, "-c", _BIG_SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == "gone"
