"""Memory of a process tree, sampled with psutil: what the benchmarks report as peak memory.

A benchmarked command is a subprocess that may start more processes (Beam's SDK workers), so
its memory is the RSS of the whole tree: the subprocess plus all of its live descendants,
summed, and the RSS of its largest single process. psutil reads the same kernel counters on
Linux (and works elsewhere), so the benchmarks need no /proc parsing of their own. Sampling
can miss a peak shorter than the interval; the interval is a flag of each benchmark.
"""

import threading
import time

import psutil


def tree_rss(root):
    """RSS over a psutil.Process and all of its live descendants.

    Returns (sum of RSS in bytes, largest single RSS in bytes, (pid, name) of that process,
    the live processes). Processes that vanish or turn zombie mid-scan are skipped."""
    try:
        procs = [root] + root.children(recursive=True)
    except psutil.Error:
        return 0, 0, None, []
    total = largest = 0
    largest_proc, live = None, []
    for proc in procs:
        try:
            rss = proc.memory_info().rss
        except psutil.Error:
            continue
        if not rss:  # a zombie's statm reads 0
            continue
        live.append(proc)
        total += rss
        if rss > largest:
            largest, largest_proc = rss, proc
    ident = None
    if largest_proc is not None:
        try:
            ident = (largest_proc.pid, largest_proc.name())
        except psutil.Error:
            ident = (largest_proc.pid, "?")
    return total, largest, ident, live


def pss_bytes(procs):
    """Sum of PSS (shared pages split between the processes mapping them) over procs
    (psutil memory_full_info().pss; reads /proc/PID/smaps_rollup)."""
    total = 0
    for proc in procs:
        try:
            total += proc.memory_full_info().pss
        except psutil.Error:
            continue
    return total


class TreeSampler(threading.Thread):
    """Samples, with psutil, the RSS of a process tree every `interval` s: summed over the
    processes and of the largest single process; and its PSS every `pss_interval` s (reading
    smaps_rollup costs a few ms per process)."""

    def __init__(self, pid, interval, pss_interval):
        super().__init__(daemon=True)
        self.pid, self.interval, self.pss_interval = pid, interval, pss_interval
        self.peak_bytes, self.peak_pss_bytes, self.max_procs = 0, 0, 0
        self.peak_single_bytes, self.peak_single_process = 0, None
        self.samples = []  # (unix time, rss bytes summed over the tree, largest single rss)
        self._stop_event = threading.Event()

    def run(self):
        try:
            root = psutil.Process(self.pid)
        except psutil.Error:
            return  # exited (and reaped) before the first sample
        next_pss = 0.0
        while True:
            total, largest, ident, procs = tree_rss(root)
            if total:
                now = time.time()
                self.samples.append((now, total, largest))
                self.peak_bytes = max(self.peak_bytes, total)
                if largest > self.peak_single_bytes:
                    self.peak_single_bytes, self.peak_single_process = largest, ident
                self.max_procs = max(self.max_procs, len(procs))
                if self.pss_interval > 0 and now >= next_pss:
                    self.peak_pss_bytes = max(self.peak_pss_bytes, pss_bytes(procs))
                    next_pss = now + self.pss_interval
            if self._stop_event.wait(self.interval):
                return

    def stop(self):
        self._stop_event.set()
        self.join()


class CpuSampler(threading.Thread):
    """CPU seconds (user + system) used by process trees while it runs: every `interval` s it
    reads each live process's own CPU time; a process's last reading counts (one that ends
    loses at most its last interval). Processes alive at start count from their reading then."""

    def __init__(self, pids, interval=0.1):
        super().__init__(daemon=True)
        self.pids, self.interval = list(pids), interval
        self._first, self._last = {}, {}
        self._stop_event = threading.Event()

    def _read(self):
        for pid in self.pids:
            try:
                root = psutil.Process(pid)
                procs = [root] + root.children(recursive=True)
            except psutil.Error:
                continue
            for proc in procs:
                try:
                    times = proc.cpu_times()
                    key = (proc.pid, proc.create_time())
                except psutil.Error:
                    continue
                self._first.setdefault(key, times.user + times.system)
                self._last[key] = times.user + times.system

    def start(self):
        self._read()  # what the trees had used before
        self._seen_at_start = set(self._first)
        super().start()

    def run(self):
        while not self._stop_event.wait(self.interval):
            self._read()

    def stop(self):
        """Stops; returns the CPU seconds used since `start` (processes that started later
        count from zero)."""
        self._stop_event.set()
        self.join()
        self._read()
        return sum(self._last[k] - (self._first[k] if k in self._seen_at_start else 0)
                   for k in self._last)
