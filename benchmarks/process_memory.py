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
