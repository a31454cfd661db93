"""Where a job's wall time goes, process by process: a CPU timeline of its process tree.

Runs the bench's job command once (as `bench_subword.py` does) and samples every process of
its tree every `--interval` s (`process_tree.run_tree`). Prints, per time slot of `--slot`
seconds, the CPU each process used in it (in cores: 1.0 = one core busy all the slot) and the
job's log lines that arrived in it (the pass and round lines; with `--beam_log` also Beam's
"Running ((stage))" lines), then per process its CPU seconds and, for the worker processes,
how long each sat idle while the job ran. The last lines sum up what bounds the scaling: the
seconds in which fewer than `--busy` cores were busy (the serial part) and what ran then.

    .venv/bin/python benchmarks/subword_timeline.py --workers 2                # full bench corpus
    .venv/bin/python benchmarks/subword_timeline.py --workers 1 --slot 1
    .venv/bin/python benchmarks/subword_timeline.py --code_dir /tmp/base-a1458ff --lines 100000
    .venv/bin/python benchmarks/subword_timeline.py --rss --slot 1     # memory, not CPU
"""

import argparse
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
REPO_ROOT = os.path.dirname(HERE)

from bench_subword import DATA_DIR, JOB_FLAGS, stage_input  # noqa: E402
from process_tree import run_tree  # noqa: E402


def _read_lines(stream, events):
    for raw in iter(stream.readline, b""):
        events.append((time.time(), raw.decode("utf-8", "replace").rstrip()))


def cpu_per_slot(samples, start, slot, slots):
    """[cores used in each slot] from a process's [(t, cumulative cpu s, rss)] samples."""
    used = [0.0] * slots
    prev_t, prev_c = None, None
    for t, c, _ in samples:
        if prev_t is None:
            prev_t, prev_c = t, c
            continue
        # spread the CPU of (prev_t, t] evenly over the slots it covers
        delta, span = c - prev_c, t - prev_t
        if span > 0 and delta > 0:
            a = prev_t
            while a < t:
                k = int((a - start) // slot)
                b = min(t, start + (k + 1) * slot)
                if 0 <= k < slots:
                    used[k] += delta * (b - a) / span
                a = b
        prev_t, prev_c = t, c
    return [u / slot for u in used]


def rss_per_slot(samples, start, slot, slots):
    """[the largest RSS sampled in each slot, MB] from a process's [(t, cpu s, rss)]
    samples (0 where it was not alive)."""
    peak = [0.0] * slots
    for t, _, rss in samples:
        k = int((t - start) // slot)
        if 0 <= k < slots:
            peak[k] = max(peak[k], rss / 2 ** 20)
    return peak


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--code_dir", default=REPO_ROOT)
    p.add_argument("--python", default=os.path.join(REPO_ROOT, ".venv", "bin", "python"))
    p.add_argument("--source", default=os.path.join(DATA_DIR, "train.en.xz"))
    p.add_argument("--target", default=os.path.join(DATA_DIR, "train.zh.xz"))
    p.add_argument("--lines", type=int, default=None)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--work_dir", default="/tmp/bench_subword")
    p.add_argument("--interval", type=float, default=0.05, help="sampling interval, s")
    p.add_argument("--slot", type=float, default=0.5, help="seconds per printed row")
    p.add_argument("--busy", type=float, default=1.5,
                   help="below this many busy cores a slot counts as serial")
    p.add_argument("--beam_log", action="store_true", help="with Beam's stage lines (-v)")
    p.add_argument("--rss", action="store_true", help="each process's largest RSS (MB) in "
                   "a slot instead of its CPU: where the peak memory is")
    p.add_argument("extra", nargs="*", help="more job flags (after --)")
    args = p.parse_args(argv)
    os.makedirs(args.work_dir, exist_ok=True)
    inputs = stage_input(args.source, args.target, args.lines, args.work_dir)
    out_dir = os.path.join(args.work_dir, "out-timeline")
    cmd = [args.python, "-m", "pipeline.datagen", "--train_source", inputs[0],
           "--train_target", inputs[1], "--output_dir", out_dir] + JOB_FLAGS + [
           "--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
           "--direct_num_workers", str(args.workers)] + (["-v"] if args.beam_log else []) + \
        args.extra
    env = dict(os.environ, PYTHONPATH=os.path.abspath(args.code_dir), PYTHONUNBUFFERED="1")
    read_fd, write_fd = os.pipe()
    events = []
    reader = threading.Thread(target=_read_lines, args=(os.fdopen(read_fd, "rb"), events),
                              daemon=True)
    reader.start()
    with os.fdopen(write_fd, "wb") as write_end:
        run = run_tree(cmd, cwd=args.code_dir, env=env, stdout=write_end, stderr=write_end,
                       interval=args.interval)
    reader.join(5)
    timeline, start = run["timeline"], run["start"]
    slots = int(run["wall_with_orphans_s"] // args.slot) + 1
    order = {"driver": 0, "forkserver": 1, "tracker": 2, "worker": 3, "other": 4}
    pids = sorted(timeline.samples, key=lambda pid: (order[timeline.roles[pid]], pid))
    names = []
    for pid in pids:
        role = timeline.roles[pid]
        names.append("%s %d" % (role if role != "forkserver" else "fork srv", pid))
    per_slot = rss_per_slot if args.rss else cpu_per_slot
    per = {pid: per_slot(timeline.samples[pid], start, args.slot, slots) for pid in pids}
    width = max(len(n) for n in names) if names else 8
    print("exit %s, wall %.2f s, CPU %.2f s (user %.2f, sys %.2f) over the tree, largest "
          "process %.0f MB, tree %.0f MB" % (
              run["returncode"], run["wall_s"], run["cpu_s"], run["user_s"], run["sys_s"],
              run["peak_largest_mb"], run["peak_sum_mb"]))
    print("%s per %.2f s slot; columns: %s" % (
        "largest RSS, MB," if args.rss else "cores busy", args.slot, " | ".join(names)))
    serial = []
    ev = sorted(events)
    e = 0
    for k in range(slots):
        row = [per[pid][k] for pid in pids]
        busy = sum(row)
        t0 = start + k * args.slot
        lines = []
        while e < len(ev) and ev[e][0] < t0 + args.slot:
            lines.append(ev[e][1])
            e += 1
        if busy < args.busy and not args.rss:
            serial.append((k, busy, row))
        print(("%7.2f %s  sum %5.0f %s" if args.rss else "%7.2f %s  sum %4.2f %s") % (
            k * args.slot, " ".join(("%5.0f" if args.rss else "%4.2f") % v for v in row), busy,
            ("  << " + " // ".join(line[:110] for line in lines)) if lines else ""))
    print()
    print("per process: CPU s, busy share of the job's wall")
    for pid, name in zip(pids, names):
        s = timeline.samples[pid]
        cpu = s[-1][1] - (0 if timeline.roles[pid] != "driver" else 0)
        print("  %-*s  %7.2f s  %5.1f%%  peak %5.0f MB" % (
            width, name, cpu, 100 * cpu / run["wall_s"], max(r for _, _, r in s) / 2 ** 20))
    serial_s = len(serial) * args.slot
    print("slots with fewer than %.1f cores busy: %.1f s of %.1f s (%.0f%%); cores busy "
          "in them on average %.2f" % (
              args.busy, serial_s, run["wall_s"], 100 * serial_s / run["wall_s"],
              sum(b for _, b, _ in serial) / len(serial) if serial else 0))
    return run["returncode"]


if __name__ == "__main__":
    sys.exit(main())
