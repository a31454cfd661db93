"""`--dedup minhash` at 1x and 10x pairs: does the largest process stay within 1.2x (issue 53)?

The 1x input is the bench corpus' first `--lines` pairs; the 10x input is ten copies of it,
copy c with every Latin letter rotated by c places and every CJK ideograph moved by c * 7919
places in its block: a bijection on the letters, so each copy holds the same near duplicates
as the first (the same work, 10 times) and no line of one copy is a near duplicate of
another's (numbering lines would not do: the MinHash compares letters only, digits never
count). Each run is the cleaning stage alone (`bench_cleaning.py --_stage`: `CleanPairs` with
`--dedup minhash` and no filters, the job's worker pool, 2 workers), measured over its process
tree (`process_tree.run_tree`: CPU user + sys of every process, peak RSS of the tree and of its
largest process). With `--code_dir` (a checkout of the code before, e.g. a `git worktree` of
main) the two codes run alternating, before then after, at each scale, and the rejects file's
sha256 must be equal: the same drops, byte for byte.

    git worktree add --detach /tmp/minhash-base main
    .venv/bin/python benchmarks/bench_minhash_memory.py --lines 20000 --code_dir /tmp/minhash-base
"""

import argparse
import hashlib
import json
import lzma
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE]

from bench_cleaning import DEFAULT_DATA_DIR, run_measured  # noqa: E402
from bench_runs import DEFAULT_RUNNER_ARGS  # noqa: E402

CJK = (0x4E00, 0x9FFF)


def permutation(copy):
    """A str.translate table moving copy `copy`'s letters (identity for copy 0)."""
    table = {}
    for first in (ord("a"), ord("A")):
        table.update({first + i: first + (i + copy) % 26 for i in range(26)})
    size = CJK[1] - CJK[0] + 1
    table.update({CJK[0] + i: CJK[0] + (i + copy * 7919) % size for i in range(size)})
    return table


def stage_inputs(data_dir, lines, scale, work_dir):
    """(source, target) plain files: `scale` permuted copies of the first `lines` pairs."""
    base = os.path.join(work_dir, "x%d" % scale)
    out = [os.path.join(base, "train.en"), os.path.join(base, "train.zh")]
    if all(os.path.exists(path) for path in out):
        return out
    os.makedirs(base, exist_ok=True)
    for side, dest in zip(("en", "zh"), out):
        with lzma.open(os.path.join(data_dir, "train.%s.xz" % side), "rt",
                       encoding="utf-8", newline="\n") as f:
            first = [line for _, line in zip(range(lines), f)]
        with open(dest + ".tmp", "w", encoding="utf-8", newline="\n") as g:
            for copy in range(scale):
                table = permutation(copy)
                g.writelines(line.translate(table) for line in first)
        os.replace(dest + ".tmp", dest)
    return out


def run_stage(code_dir, source, target, run_dir, runner_args):
    """One measured run of the cleaning stage of `code_dir` with --dedup minhash."""
    os.makedirs(run_dir)
    spec = os.path.join(run_dir, "spec.json")
    with open(spec, "w") as f:
        json.dump({"source": source, "target": target, "work_dir": run_dir,
                   "runner_args": runner_args, "dedup": "minhash", "no_filters": True,
                   "decontaminate": []}, f)
    env = dict(os.environ, PYTHONPATH=code_dir, PYTHONUNBUFFERED="1")
    load = os.getloadavg()[0]
    script = os.path.join(code_dir, "benchmarks", "bench_cleaning.py")
    run = run_measured([sys.executable, script, "--_stage", spec],
                       os.path.join(run_dir, "log"), cwd=code_dir, env=env)
    assert run["returncode"] == 0, open(run["stderr_path"]).read()[-3000:]
    result = json.loads(open(run["stdout_path"]).read().strip().splitlines()[-1])
    with open(os.path.join(run_dir, "train-0.rejects.jsonl"), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    return {"pairs": result["pairs"], "dropped": result["dropped"], "rejects_sha256": digest,
            "wall_s": round(run["wall_seconds"], 1), "cpu_s": round(run["cpu_seconds"], 1),
            "tree_peak_mb": round(run["tree_peak_rss_mb"]),
            "largest_process_mb": round(run["max_single_process_rss_mb"]),
            "load": [round(load, 1), round(os.getloadavg()[0], 1)]}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data_dir", default=DEFAULT_DATA_DIR)
    p.add_argument("--lines", type=int, default=20000, help="pairs at 1x")
    p.add_argument("--scales", default="1,10")
    p.add_argument("--code_dir", default=None, help="the code before, run alternating")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--runner_args", default=DEFAULT_RUNNER_ARGS)
    p.add_argument("--work_dir", default=None)
    p.add_argument("--json_out", default=None)
    args = p.parse_args(argv)
    work_dir = args.work_dir or tempfile.mkdtemp(prefix="bench_minhash_")
    scales = [int(s) for s in args.scales.split(",")]
    codes = ([("before", os.path.abspath(args.code_dir))] if args.code_dir else []) + [
        ("after", REPO_ROOT)]
    rows = []
    for repeat in range(args.repeats):
        for scale in scales:
            source, target = stage_inputs(args.data_dir, args.lines, scale, work_dir)
            for name, code_dir in codes:
                run_dir = os.path.join(work_dir, "run-%s-x%d-%d" % (name, scale, repeat))
                shutil.rmtree(run_dir, ignore_errors=True)
                row = dict(code=name, scale=scale, **run_stage(
                    code_dir, source, target, run_dir, args.runner_args))
                rows.append(row)
                print(json.dumps(row), flush=True)
    print("%-7s %5s %9s %8s %8s %7s %10s %9s  %s" % (
        "code", "scale", "pairs", "dropped", "wall s", "cpu s", "largest MB", "tree MB",
        "load"))
    for row in rows:
        print("%-7s %5d %9d %8d %8.1f %7.1f %10d %9d  %s" % (
            row["code"], row["scale"], row["pairs"], row["dropped"], row["wall_s"],
            row["cpu_s"], row["largest_process_mb"], row["tree_peak_mb"],
            "->".join(map(str, row["load"]))))
    for name, _ in codes:
        mine = [r for r in rows if r["code"] == name]
        one = max(r["largest_process_mb"] for r in mine if r["scale"] == scales[0])
        for scale in scales[1:]:
            peak = max(r["largest_process_mb"] for r in mine if r["scale"] == scale)
            print("%s: largest process at %dx / at %dx: %.2fx (goal <= 1.2x)"
                  % (name, scale, scales[0], peak / one))
    same = {(r["scale"], r["rejects_sha256"]) for r in rows}
    print("rejects identical across codes: %s" % (len(same) == len(scales)))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"lines": args.lines, "rows": rows}, f, indent=1)
    if not args.work_dir:
        shutil.rmtree(work_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
