"""A command's whole process tree measured: wall time, CPU seconds, memory, a CPU timeline.

The job's worker processes are forked from a fork server, which outlives the driver by a
moment (the driver leaves with `os._exit`), so the driver's own `wait4` rusage misses them,
and `time` reports the driver alone. Here the measuring process makes itself a *child
subreaper* (Linux `prctl(PR_SET_CHILD_SUBREAPER)`): every orphaned descendant is re-parented
to it, it reaps every one of them, and the sum of their rusages is the CPU time (user + sys)
of every process the command ever started, exactly. Memory (RSS summed over the live tree and
of its largest process) and, for the timeline, each process's cumulative CPU are sampled with
psutil every `interval` seconds (`process_memory.tree_rss`).

Used by `bench_subword.py` (A/B tables) and `subword_timeline.py` (CPU per process over time).
"""

import ctypes
import os
import subprocess
import threading
import time

import psutil  # requirements-test.txt; not a runtime dependency of the job

from process_memory import tree_rss

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper():
    """Orphaned descendants of this process come to it (Linux); False where that fails."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _role(proc, root_pid, roles):
    """driver / forkserver / tracker / worker / other, from the process's place and command."""
    pid = proc.pid
    if pid in roles:
        return roles[pid]
    try:
        cmd = " ".join(proc.cmdline())
        parent = proc.ppid()
    except psutil.Error:
        return None
    if pid == root_pid:
        role = "driver"
    elif "forkserver" in cmd and roles.get(parent) != "forkserver":
        role = "forkserver"
    elif "resource_tracker" in cmd:
        role = "tracker"
    elif roles.get(parent) == "forkserver" or "forkserver" in cmd:
        role = "worker"
    else:
        role = "other"
    roles[pid] = role
    return role


class TreeTimeline(threading.Thread):
    """Samples this process's descendants every `interval` s: RSS (sum, largest) and, per
    process, its cumulative user + sys CPU seconds: {pid: [(unix time, cpu s, rss bytes)]}."""

    def __init__(self, root_pid, interval):
        super().__init__(daemon=True)
        self.root_pid, self.interval = root_pid, interval
        self.peak_sum = self.peak_largest = 0
        self.samples = {}  # pid -> [(t, cpu, rss)]
        self.roles = {}  # pid -> role
        self._halt = threading.Event()

    def run(self):
        me = psutil.Process()
        while True:
            try:
                procs = me.children(recursive=True)  # orphans re-parented here included
            except psutil.Error:
                procs = []
            now = time.time()
            total = largest = 0
            for proc in procs:
                try:
                    with proc.oneshot():
                        cpu = proc.cpu_times()
                        rss = proc.memory_info().rss
                except psutil.Error:
                    continue
                if not rss:  # a zombie
                    continue
                total += rss
                largest = max(largest, rss)
                if _role(proc, self.root_pid, self.roles) is None:
                    continue
                self.samples.setdefault(proc.pid, []).append((now, cpu.user + cpu.system, rss))
            self.peak_sum = max(self.peak_sum, total)
            self.peak_largest = max(self.peak_largest, largest)
            if self._halt.wait(self.interval):
                return

    def stop(self):
        self._halt.set()
        self.join()


def run_tree(cmd, cwd=None, env=None, interval=0.1, stdout=None, stderr=None,
             linger_seconds=30.0):
    """Runs `cmd` and measures its whole tree. Returns {returncode, wall_s, cpu_s (user+sys
    of every process of the tree), user_s, sys_s, peak_sum_mb, peak_largest_mb,
    largest_rusage_mb (the kernel's high-water mark of the largest process), timeline
    (a TreeTimeline), start (unix time)}. Descendants still running when the command ends
    (the fork server, the workers ending) are waited for, `linger_seconds` at most."""
    subreaper = become_subreaper()
    start = time.time()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=stdout, stderr=stderr)
    timeline = TreeTimeline(proc.pid, interval)
    timeline.start()
    user = system = 0.0
    largest_rusage = 0
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    user, system, largest_rusage = usage.ru_utime, usage.ru_stime, usage.ru_maxrss
    deadline = time.time() + linger_seconds
    while subreaper:  # the orphans (fork server, workers): reap each, add its rusage
        try:
            pid, _, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            if time.time() > deadline:
                break
            time.sleep(0.02)
            continue
        user += usage.ru_utime
        system += usage.ru_stime
        largest_rusage = max(largest_rusage, usage.ru_maxrss)
    tail_wall = time.perf_counter() - t0
    timeline.stop()
    return {"returncode": proc.returncode, "wall_s": wall, "wall_with_orphans_s": tail_wall,
            "cpu_s": user + system, "user_s": user, "sys_s": system,
            "cpu_complete": subreaper,
            "peak_sum_mb": timeline.peak_sum / 2.0 ** 20,
            "peak_largest_mb": max(timeline.peak_largest / 2.0 ** 20, largest_rusage / 1024.0),
            "timeline": timeline, "start": start}
