"""The subword job, this tree against another checkout (an A/B), run alternately: one table.

Each run is the bench's job command (`bench_datagen.py`'s settings: `--vocab_size 8192
--max_subtoken_length 200 --file_byte_budget 1e8 --num_train_shards 10 --seed 1`,
DirectRunner with `--direct_num_workers` worker processes) from one checkout, measured over
its whole process tree (`process_tree.run_tree`): wall time, CPU seconds (user + sys of
every process, the fork server and the workers included), the largest process's RSS and
the RSS summed over the tree, and the vocab and encode stage seconds of the job's summary.
Runs alternate (base, new, base, new, ...) after one warm-up of each, so that both see the
same hour; the ratios are base / new of each pair, and their median. Every run's vocab
files and shards must be byte-identical (sha256 over them, compared across all runs).

    # the issue-41 A/B, full bench corpus (the coordinator's quiet rerun):
    git worktree add /tmp/base-a1458ff a1458ff
    .venv/bin/python benchmarks/bench_subword.py --base /tmp/base-a1458ff --repeat 3
    # 1 worker against 2 with this tree only (scaling):
    .venv/bin/python benchmarks/bench_subword.py --workers 1,2 --repeat 3
    # a quick look on 100k pairs:
    .venv/bin/python benchmarks/bench_subword.py --base /tmp/base-a1458ff --lines 100000

The input (`--source`/`--target`, default the bench corpus's xz files) is staged once as
plain text under `--work_dir` (`--lines N`: the first N pairs).
"""

import argparse
import hashlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
REPO_ROOT = os.path.dirname(HERE)

from process_tree import run_tree  # noqa: E402

DATA_DIR = "/work/shared/data/bench/enzh-wmt21-24"
JOB_FLAGS = ["--vocab_size", "8192", "--max_subtoken_length", "200", "--file_byte_budget",
             "1e8", "--num_train_shards", "10", "--seed", "1", "--overwrite"]
PROBLEM = "translate_enzh_wmt8k"


def stage_input(source, target, lines, work_dir):
    """Plain-text copies of the two sides (the first `lines` pairs), made once."""
    staged = []
    for side, path in (("en", source), ("zh", target)):
        out = os.path.join(work_dir, "input%s" % ("" if lines is None else "-%d" % lines),
                           "train.%s" % side)
        if not os.path.exists(out):
            os.makedirs(os.path.dirname(out), exist_ok=True)
            reader = ["xz", "-dc", path] if path.endswith(".xz") else ["cat", path]
            tmp = out + ".tmp"
            with open(tmp, "wb") as f:
                if lines is None:
                    subprocess.run(reader, stdout=f, check=True)
                else:
                    first = subprocess.Popen(reader, stdout=subprocess.PIPE)
                    subprocess.run(["head", "-n", str(lines)], stdin=first.stdout, stdout=f,
                                   check=True)
                    first.stdout.close()
                    first.wait()
            os.rename(tmp, out)
        staged.append(out)
    return staged


def output_digest(out_dir):
    """sha256 over the vocab files and the shards (names and bytes), in name order."""
    digest = hashlib.sha256()
    for name in sorted(os.listdir(out_dir)):
        if name.startswith("vocab.") or "-train-" in name or "-dev-" in name:
            digest.update(name.encode() + b"\0")
            with open(os.path.join(out_dir, name), "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()[:16]


def run_job(code_dir, python, inputs, out_dir, workers, extra, log_path):
    cmd = [python, "-m", "pipeline.datagen", "--train_source", inputs[0], "--train_target",
           inputs[1], "--output_dir", out_dir] + JOB_FLAGS + [
           "--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
           "--direct_num_workers", str(workers)] + extra
    env = dict(os.environ, PYTHONPATH=code_dir, PYTHONUNBUFFERED="1")
    with open(log_path, "wb") as log:
        run = run_tree(cmd, cwd=code_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
    run["cmd"] = cmd
    if run["returncode"] != 0:
        raise SystemExit("run failed (exit %s): %s\n%s" % (
            run["returncode"], " ".join(map(shlex.quote, cmd)), open(log_path).read()[-3000:]))
    with open(os.path.join(out_dir, "%s.datagen_summary.json" % PROBLEM)) as f:
        stages = json.load(f).get("stages", {})
    run["vocab_s"] = (stages.get("vocab") or {}).get("seconds")
    run["encode_s"] = (stages.get("encode") or {}).get("seconds")
    run["digest"] = output_digest(out_dir)
    return run


def load():
    return os.getloadavg()[0]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", default=None, help="another checkout's root (the A of the A/B)")
    p.add_argument("--new", default=REPO_ROOT, help="this tree (the B)")
    p.add_argument("--source", default=os.path.join(DATA_DIR, "train.en.xz"))
    p.add_argument("--target", default=os.path.join(DATA_DIR, "train.zh.xz"))
    p.add_argument("--lines", type=int, default=None, help="the first N pairs only")
    p.add_argument("--repeat", type=int, default=3, help="measured runs of each side")
    p.add_argument("--warmup", type=int, default=1, help="unmeasured runs of each side first")
    p.add_argument("--workers", default="2", help="--direct_num_workers; a list (1,2) "
                   "compares worker counts of one tree instead of two trees")
    p.add_argument("--work_dir", default="/tmp/bench_subword")
    p.add_argument("--python", default=os.path.join(REPO_ROOT, ".venv", "bin", "python"))
    p.add_argument("--json_out", default=None)
    p.add_argument("extra", nargs="*", help="more job flags (after --)")
    args = p.parse_args(argv)
    os.makedirs(args.work_dir, exist_ok=True)
    inputs = stage_input(args.source, args.target, args.lines, args.work_dir)
    workers = [int(w) for w in args.workers.split(",")]
    if len(workers) > 1:
        sides = [("%d worker%s" % (w, "s" if w > 1 else ""), os.path.abspath(args.new), w)
                 for w in workers]
    else:
        sides = [("new", os.path.abspath(args.new), workers[0])]
        if args.base:
            sides.insert(0, ("base", os.path.abspath(args.base), workers[0]))
    print("inputs: %s; sides: %s" % (", ".join(inputs), "; ".join(
        "%s = %s (%d workers)" % s for s in sides)), flush=True)
    runs = {label: [] for label, _, _ in sides}
    digests = set()
    total = args.warmup + args.repeat
    for i in range(total):
        for label, code_dir, w in sides:
            out_dir = os.path.join(args.work_dir, "out-%s" % label.replace(" ", "_"))
            before = load()
            run = run_job(code_dir, args.python, inputs, out_dir, w, args.extra,
                          os.path.join(args.work_dir, "log-%s-%d.txt" % (label.replace(" ", "_"), i)))
            warm = i < args.warmup
            print("%s %-10s wall %6.2f s  cpu %6.2f s  largest %5.0f MB  tree %5.0f MB  "
                  "vocab %s s  encode %s s  load %.1f  %s%s" % (
                      time.strftime("%H:%M:%S"), label, run["wall_s"], run["cpu_s"],
                      run["peak_largest_mb"], run["peak_sum_mb"], run["vocab_s"],
                      run["encode_s"], before, run["digest"], "  (warm-up)" if warm else ""),
                  flush=True)
            digests.add(run["digest"])
            if not warm:
                runs[label].append(run)
    print()
    print("| side | wall s, median (min-max) | CPU s (tree), median | largest process MB | "
          "tree sum MB | vocab s | encode s |")
    print("|---|---|---|---|---|---|---|")
    for label, _, _ in sides:
        rs = runs[label]

        def med(key):
            return statistics.median(r[key] for r in rs if r[key] is not None)
        walls = [r["wall_s"] for r in rs]
        print("| %s | %.2f (%.2f-%.2f) | %.2f | %.0f | %.0f | %.2f | %.2f |" % (
            label, med("wall_s"), min(walls), max(walls), med("cpu_s"),
            max(r["peak_largest_mb"] for r in rs), max(r["peak_sum_mb"] for r in rs),
            med("vocab_s"), med("encode_s")))
    if len(sides) == 2:
        (a, _, _), (b, _, _) = sides
        for key in ("wall_s", "cpu_s"):
            ratios = [x[key] / y[key] for x, y in zip(runs[a], runs[b])]
            print("%s / %s, %s, pair by pair: %s; median %.3f" % (
                a, b, key, ", ".join("%.3f" % r for r in ratios), statistics.median(ratios)))
    print("outputs (vocab files and shards): %s" % (
        "byte-identical in every run (%s)" % next(iter(digests)) if len(digests) == 1
        else "DIFFERENT: %s" % sorted(digests)))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({label: [{k: v for k, v in r.items() if k != "timeline"} for r in rs]
                       for label, rs in runs.items()}, f, indent=1)
    return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
