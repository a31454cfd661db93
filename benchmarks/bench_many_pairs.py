"""Many language pairs: one `--corpora` job against one single-pair job per pair, in the same
run, and the memory of one job as the number of pairs grows.

    .venv/bin/python benchmarks/bench_many_pairs.py --pairs 20 --lines 1000          # 20 pairs vs 20 jobs
    .venv/bin/python benchmarks/bench_many_pairs.py --shape flores --only multi     # ~200 x English, 1k lines
    .venv/bin/python benchmarks/bench_many_pairs.py --shape skewed --only multi     # 2 large beside 60 tiny
    .venv/bin/python benchmarks/bench_many_pairs.py --shape flat --only multi       # 40k lines as 2, 20, 200 pairs

The corpora are made from the real corpora in /work/shared/data (`--data_dir`): the English
side of pair i is real English (en-de, en-zh, subtitles), its target side real German,
Chinese or Vietnamese text passed through a cipher of its own (Latin letters and CJK
characters shifted by i), so every "language" has a vocabulary of its own, with real
frequencies, line lengths and scripts. No such set of 200 real languages ships here.

Each job runs in a fresh subprocess (`bench_runs.run_measured`): wall time, CPU seconds
(user+sys of the process tree, from wait4) and the peak RSS of the tree (psutil, sampled).
The single-pair jobs run one after another (each its own vocabulary, as a user with one job
per pair runs them); their row is the sum of wall and CPU and the largest peak. Timings on
this machine are noisy (README); compare rows of one run only.
"""

import argparse
import json
import os
import sys
import tempfile
import threading

import psutil  # requirements-test.txt; not a runtime dependency of the job

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_runs import DEFAULT_RUNNER_ARGS  # noqa: E402
from process_memory import TreeSampler  # noqa: E402

DATA = "/work/shared/data/corpora"
SOURCES = [  # (English file, target file, script of the target)
    ("ende-opennmt/train.en", "ende-opennmt/train.de", "latin"),
    ("enzh-mlqe-pe/train.en", "enzh-mlqe-pe/train.zh", "cjk"),
    ("enzh-aichallenger/train.en", "enzh-aichallenger/train.zh", "cjk"),
    ("envi-nmt-testdata/iwslt15.tst2013.100.en", "envi-nmt-testdata/iwslt15.tst2013.100.vi",
     "latin"),
]


def _cipher(text, shift, script):
    """Latin letters rotated by `shift`, CJK ideographs moved `shift % 4 * 7` code points on
    (a language of its own with the source language's statistics; a few ideographic
    alphabets, as among real languages, not one per pair)."""
    out = []
    for c in text:
        o = ord(c)
        if script == "latin" and "a" <= c <= "z":
            c = chr((o - 97 + shift) % 26 + 97)
        elif script == "latin" and "A" <= c <= "Z":
            c = chr((o - 65 + shift) % 26 + 65)
        elif 0x4E00 <= o <= 0x9FFF:
            c = chr(0x4E00 + (o - 0x4E00 + shift % 4 * 7) % (0x9FFF - 0x4E00))
        out.append(c)
    return "".join(out)


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def make_corpora(work, sizes, data_dir=DATA):
    """Writes pair i's `sizes[i]` lines under work/data/p{i:03d}/; returns the corpora file."""
    texts = [(_lines(os.path.join(data_dir, s)), _lines(os.path.join(data_dir, t)), script)
             for s, t, script in SOURCES]
    entries = []
    for i, n in enumerate(sizes):
        src, tgt, script = texts[i % 3] if n > 100 else texts[i % len(texts)]
        start = (i * 997) % len(src)
        lang = "x%03d" % i
        directory = os.path.join(work, "data", "p%03d" % i)
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "train.en"), "w", encoding="utf-8") as fs, \
                open(os.path.join(directory, "train." + lang), "w", encoding="utf-8") as ft:
            for j in range(n):
                k = (start + j) % len(src)
                fs.write(src[k] + "\n")
                ft.write(_cipher(tgt[k], i + 1, script) + "\n")
        entries.append({"name": "en-" + lang, "source_lang": "en", "target_lang": lang,
                        "train": {"source": "p%03d/train.en" % i,
                                  "target": "p%03d/train.%s" % (i, lang)}})
    path = os.path.join(work, "data", "corpora.yaml")
    with open(path, "w") as f:
        json.dump({"corpora": entries}, f)
    return path, entries


class TreeCpu(threading.Thread):
    """CPU seconds (user + system) of a process tree: the last value sampled of each process
    that ever was in it, summed. wait4's rusage misses the worker processes the job's
    pool forks from a server it does not reap itself."""

    def __init__(self, pid, interval=0.1):
        super().__init__(daemon=True)
        self.pid, self.interval, self.seen = pid, interval, {}
        self._stop_event = threading.Event()

    def run(self):
        while True:
            try:
                root = psutil.Process(self.pid)
                for proc in [root] + root.children(recursive=True):
                    try:
                        times = proc.cpu_times()
                        self.seen[(proc.pid, proc.create_time())] = times.user + times.system
                    except psutil.Error:
                        pass
            except psutil.Error:
                pass
            if self._stop_event.wait(self.interval):
                return

    def stop(self):
        self._stop_event.set()
        self.join()
        return sum(self.seen.values())


def measured(cmd, log_prefix, interval=0.1):
    """Runs `cmd` in a fresh subprocess: {returncode, wall_seconds, cpu_seconds (the tree's,
    `TreeCpu`), peak_mb (the tree's RSS, `process_memory.TreeSampler`), stderr_path}."""
    import subprocess
    import time
    with open(log_prefix + ".stdout", "wb") as out, open(log_prefix + ".stderr", "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        memory, cpu = TreeSampler(proc.pid, interval, 0), TreeCpu(proc.pid, interval)
        memory.start()
        cpu.start()
        _, status, rusage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        memory.stop()
        cpu_seconds = max(cpu.stop(), rusage.ru_utime + rusage.ru_stime)
    return {"returncode": os.waitstatus_to_exitcode(status), "wall_seconds": wall,
            "cpu_seconds": cpu_seconds, "stderr_path": log_prefix + ".stderr",
            "peak_mb": max(memory.peak_bytes, memory.peak_single_bytes,
                           rusage.ru_maxrss * 1024) / 2.0 ** 20}


def _row(name, runs):
    ok = all(r["returncode"] == 0 for r in runs)
    return {"run": name, "jobs": len(runs), "ok": ok,
            "wall_seconds": round(sum(r["wall_seconds"] for r in runs), 1),
            "cpu_seconds": round(sum(r["cpu_seconds"] for r in runs), 1),
            "peak_mb": round(max(r["peak_mb"] for r in runs), 1)}


def bench(work, sizes, only, extra):
    corpora, entries = make_corpora(work, sizes)
    common = ["--problem", "p", "--vocab_size", "8192"] + DEFAULT_RUNNER_ARGS.split() + extra
    python = [sys.executable, "-m", "pipeline.datagen"]
    rows = []
    if only in (None, "multi"):
        run = measured(python + ["--corpora", corpora, "--output_dir",
                                     os.path.join(work, "multi")] + common,
                           os.path.join(work, "multi"))
        rows.append(_row("one job, %d pairs (--corpora)" % len(sizes), [run]))
        if run["returncode"]:
            print(open(run["stderr_path"]).read()[-3000:], file=sys.stderr)
    if only in (None, "single"):
        runs = []
        for i, entry in enumerate(entries):
            base = os.path.join(work, "data")
            runs.append(measured(python + [
                "--train_source", os.path.join(base, entry["train"]["source"]),
                "--train_target", os.path.join(base, entry["train"]["target"]),
                "--output_dir", os.path.join(work, "single", "%03d" % i)] + common,
                os.path.join(work, "single-%03d" % i)))
        rows.append(_row("%d single-pair jobs, one after another" % len(sizes), runs))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="pairs", choices=("pairs", "flores", "skewed", "flat"))
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--only", choices=("multi", "single"), default=None)
    parser.add_argument("--work_dir", default=None)
    parser.add_argument("--json_out", default=None)
    parser.add_argument("extra", nargs="*", help="more flags for every job (after --)")
    args = parser.parse_args()
    work = args.work_dir or tempfile.mkdtemp(prefix="bench-many-pairs-")
    shapes = {"pairs": [[args.lines] * args.pairs],
              "flores": [[1000] * 200],
              "skewed": [[7000, 10000] + [200] * 60],
              "flat": [[40000 // n] * n for n in (2, 20, 200)]}[args.shape]
    rows = []
    for i, sizes in enumerate(shapes):
        rows += bench(os.path.join(work, "shape%d" % i), sizes, args.only, args.extra)
    print("%-44s %5s %9s %9s %9s" % ("run", "ok", "wall s", "cpu s", "peak MB"))
    for r in rows:
        print("%-44s %5s %9.1f %9.1f %9.1f" % (r["run"], r["ok"], r["wall_seconds"],
                                                r["cpu_seconds"], r["peak_mb"]))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"shape": args.shape, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
