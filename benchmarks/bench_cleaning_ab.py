"""Cleaning, two versions of the code side by side: this tree against another checkout (say
the commit before a change, `git worktree add /tmp/base <commit>`), alternating runs.

`--mode stage`: the cleaning stage alone (bench_cleaning.py's `--_stage`, each tree's own),
OpusFilter once first unless `--no_opusfilter`. `--mode job`: the whole job with and without
cleaning (`--filters` with bench_cleaning's typical config, `--dedup pairs`), old and new
in turns. Every row: wall, the tree's summed peak RSS, the largest process, kept pairs,
the load average at start and end.

    .venv/bin/python benchmarks/bench_cleaning_ab.py --old_tree /tmp/base --lines 150000 --rounds 2
    .venv/bin/python benchmarks/bench_cleaning_ab.py --old_tree /tmp/base --lines 300000 --mode job
    .venv/bin/python benchmarks/bench_cleaning_ab.py --old_tree /tmp/base --lines 0 --id_method cld2

`--id_method cld2|fasttext|lingua`: the language filter is `LanguageIDFilter` with that method
(bench_cleaning's `typical`). CPU is user + system over each command's whole tree
(`process_tree.run_tree`, as bench_cleaning measures). `--lines 0`: the whole corpus.
"""

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, os.path.join(REPO_ROOT, "tests")]

from bench_cleaning import (DEFAULT_DATA_DIR, TYPICAL, prepare_input, run_measured,  # noqa: E402
                            run_opusfilter, train_fasttext, typical)
from bench_runs import DEFAULT_RUNNER_ARGS  # noqa: E402


def _row(tag, run, kept, extra=""):
    print("%-12s wall %7.1f s  cpu %6.1f s  tree %6.0f MB  largest %5.0f MB  kept %d  "
          "load %.1f->%.1f %s" % (
        tag, run["wall_seconds"], run["cpu_seconds"], run["tree_peak_rss_mb"],
        run["max_single_process_rss_mb"],
        kept, run["load"], os.getloadavg()[0], extra), flush=True)


def _measured(cmd, log, tree):
    load = os.getloadavg()[0]
    run = run_measured(cmd, log, cwd=tree, env=dict(os.environ, PYTHONPATH=tree))
    assert run["returncode"] == 0, open(run["stderr_path"]).read()[-3000:]
    run["load"] = load
    return run


def stage(tree, tag, work, source, target, runner_args, filters=TYPICAL):
    d = tempfile.mkdtemp(prefix=tag + "-", dir=work)
    spec = os.path.join(d, "spec.json")
    with open(spec, "w") as f:
        json.dump({"source": source, "target": target, "work_dir": d, "filters": filters,
                   "dedup": "pairs", "no_filters": False, "decontaminate": [],
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
    p.add_argument("--id_method", default="langid",
                   help="the language filter: langid (LangidFilter) or LanguageIDFilter's "
                        "cld2, fasttext, lingua")
    p.add_argument("--fasttext_model", default=None,
                   help="fasttext: the model (default: one trained on the first 20,000 pairs)")
    args = p.parse_args(argv)
    work = args.work_dir or tempfile.mkdtemp(prefix="bench_cleaning_ab_")
    os.makedirs(work, exist_ok=True)
    source, target = prepare_input(args, work)
    trees = ((os.path.abspath(args.old_tree), "old"), (REPO_ROOT, "new"))
    model = args.fasttext_model
    if args.id_method == "fasttext" and not model:
        model = train_fasttext(work, source, target)
    filters = typical(args.id_method, model)
    if args.mode == "stage":
        if not args.no_opusfilter:
            if args.id_method != "langid":
                from opusfilter_reference import install_lid_extras
                install_lid_extras()
            load = os.getloadavg()[0]
            run, deduped, kept = run_opusfilter(args, work, source, target, filters)
            run["load"] = load
            _row("opusfilter", run, kept, "(%d after dedup)" % deduped)
        for _ in range(args.rounds):
            for tree, tag in trees:
                stage(tree, tag, work, source, target, args.runner_args, filters)
    else:
        for _ in range(args.rounds):
            for cleaning in (True, False):
                for tree, tag in trees:
                    job(tree, tag, work, source, target, args.runner_args, cleaning)
    return 0


if __name__ == "__main__":
    sys.exit(main())
