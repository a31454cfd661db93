"""A small job (the bundled sample, under --in_process_below_mb: its passes run in the driver),
this tree against another checkout, alternating: CPU seconds of the whole process tree.

Such a job's fixed costs are most of it: the fork server the driver starts before its own
imports (~1.8 s of CPU importing Beam and the project) is pure loss when the passes then run
in the driver (issue 51 item 3). `process_tree.run_tree` counts every process the command
started, the fork server included (the driver's own rusage misses it).

    .venv/bin/python benchmarks/bench_small_job.py --base /tmp/kbase --repeat 5
"""

import argparse
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
REPO_ROOT = os.path.dirname(HERE)

from process_tree import run_tree  # noqa: E402

SAMPLE = os.path.join(REPO_ROOT, "sample_data", "enzh-mlqe-pe")


def job(code_dir, python, out_dir):
    cmd = [python, "-m", "pipeline.datagen", "--output_dir", out_dir, "--overwrite",
           "--train_source", os.path.join(SAMPLE, "train.en"),
           "--train_target", os.path.join(SAMPLE, "train.zh"),
           "--problem", "translate_enzh_wmt8k", "--vocab_size", "2000",
           "--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
           "--direct_num_workers", "2"]
    env = dict(os.environ, PYTHONPATH=code_dir)
    with open(os.devnull, "wb") as null:
        run = run_tree(cmd, cwd=code_dir, env=env, stdout=null, stderr=null)
    assert run["returncode"] == 0, (code_dir, run)
    return run


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="another checkout's root (A)")
    parser.add_argument("--new", default=REPO_ROOT, help="this tree (B)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    cpu = {"base": [], "new": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat + 1):  # the first pair warms the caches, not counted
            for side, code in (("base", args.base), ("new", args.new)):
                run = job(code, args.python, os.path.join(tmp, side))
                if i:
                    cpu[side].append(run["cpu_s"])
                print("run %d %-4s cpu %6.2f s  wall %6.2f s  largest %5.0f MB%s" % (
                    i, side, run["cpu_s"], run["wall_s"], run["peak_largest_mb"],
                    "  (warm-up)" if not i else ""), flush=True)
    base, new = statistics.median(cpu["base"]), statistics.median(cpu["new"])
    print("median CPU s: base %.2f, new %.2f (%.2fx); load %s" % (
        base, new, base / new, os.getloadavg()))


if __name__ == "__main__":
    main()
