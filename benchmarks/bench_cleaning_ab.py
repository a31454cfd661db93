"""Cleaning, two versions of the code side by side: this tree against another checkout (say
the commit before a change, `git worktree add /tmp/base <commit>`), alternating runs.

`--mode stage`: the cleaning stage alone (bench_cleaning.py's `--_stage`, each tree's own),
OpusFilter once first unless `--no_opusfilter`. `--mode job`: the whole job with and without
cleaning (`--filters` with bench_cleaning's typical config, `--dedup pairs`), old and new
in turns. Every row: wall, the tree's summed peak RSS, the largest process, kept pairs,
the load average at start and end.

    .venv/bin/python benchmarks/bench_cleaning_ab.py --old_tree /tmp/base --lines 150000 --rounds 2
    .venv/bin/python benchmarks/bench_cleaning_ab.py --old_tree /tmp/base --lines 300000 --mode job
"""

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, os.path.join(REPO_ROOT, "tests")]

from bench_cleaning import DEFAULT_DATA_DIR, TYPICAL, prepare_input, run_opusfilter  # noqa: E402
from bench_runs import DEFAULT_RUNNER_ARGS, run_measured  # noqa: E402


def _row(tag, run, kept, extra=""):
    print("%-12s wall %7.1f s  tree %6.0f MB  largest %5.0f MB  kept %d  load %.1f->%.1f %s" % (
        tag, run["wall_seconds"], run["tree_peak_rss_mb"], run["max_single_process_rss_mb"],
        kept, run["load"], os.getloadavg()[0], extra), flush=True)


def _measured(cmd, log, tree):
    load = os.getloadavg()[0]
    run = run_measured(cmd, log, cwd=tree, env=dict(os.environ, PYTHONPATH=tree))
    assert run["returncode"] == 0, open(run["stderr_path"]).read()[-3000:]
    run["load"] = load
    return run


def stage(tree, tag, work, source, target, runner_args):
    d = tempfile.mkdtemp(prefix=tag + "-", dir=work)
    spec = os.path.join(d, "spec.json")
    with open(spec, "w") as f:
        json.dump({"source": source, "target": target, "work_dir": d,
                   "runner_args": runner_args}, f)
    run = _measured([sys.executable, os.path.join(tree, "benchmarks", "bench_cleaning.py"),
                     "--_stage", spec], os.path.join(d, "log"), tree)
    result = json.loads(open(run["stdout_path"]).read().strip().splitlines()[-1])
    _row(tag, run, result["pairs"] - result["dropped"], result["reasons"])


def job(tree, tag, work, source, target, runner_args, cleaning):
    import yaml
    d = tempfile.mkdtemp(prefix=tag + "-", dir=work)
    cmd = [sys.executable, "-m", "pipeline.datagen", "--train_source", source,
           "--train_target", target, "--output_dir", os.path.join(d, "out")] + runner_args.split()
    if cleaning:
        config = os.path.join(d, "filters.yaml")
        with open(config, "w") as f:
            yaml.safe_dump({"filters": TYPICAL}, f)
        cmd += ["--filters", config, "--dedup", "pairs"]
    run = _measured(cmd, os.path.join(d, "log"), tree)
    with open(os.path.join(d, "out", "translate_enzh_wmt8k.datagen_summary.json")) as f:
        summary = json.load(f)
    stages = {k: round(v["seconds"], 1) for k, v in summary["stages"].items()
              if isinstance(v, dict) and "seconds" in v}
    _row(tag + (" clean" if cleaning else " plain"), run,
         summary["splits"]["train"]["pairs_written"], stages)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--old_tree", required=True, help="the other checkout's root")
    p.add_argument("--data_dir", default=DEFAULT_DATA_DIR)
    p.add_argument("--lines", type=int, default=150000)
    p.add_argument("--mode", choices=("stage", "job"), default="stage")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--no_opusfilter", action="store_true")
    p.add_argument("--runner_args", default=DEFAULT_RUNNER_ARGS)
    p.add_argument("--work_dir", default=None)
    args = p.parse_args(argv)
    work = args.work_dir or tempfile.mkdtemp(prefix="bench_cleaning_ab_")
    os.makedirs(work, exist_ok=True)
    source, target = prepare_input(args, work)
    trees = ((os.path.abspath(args.old_tree), "old"), (REPO_ROOT, "new"))
    if args.mode == "stage":
        if not args.no_opusfilter:
            load = os.getloadavg()[0]
            run, deduped, kept = run_opusfilter(args, work, source, target)
            run["load"] = load
            _row("opusfilter", run, kept, "(%d after dedup)" % deduped)
        for _ in range(args.rounds):
            for tree, tag in trees:
                stage(tree, tag, work, source, target, args.runner_args)
    else:
        for _ in range(args.rounds):
            for cleaning in (True, False):
                for tree, tag in trees:
                    job(tree, tag, work, source, target, args.runner_args, cleaning)
    return 0


if __name__ == "__main__":
    sys.exit(main())
