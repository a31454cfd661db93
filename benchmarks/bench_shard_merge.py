#!/usr/bin/env python
"""Benchmark: one shard's merge (`transforms.shards.shard_fragments.merge_fragments`) of N
fragment files, this tree against another checkout, alternating (A B A B ...).

Each run is a fresh subprocess that merges the same fragments and hashes the merged entries;
the table gives each version's median CPU seconds (user + system, from wait4's rusage) and
peak RSS (ru_maxrss), and the hashes, which must be equal. The fragments are written once
(random keys, records of 100-300 bytes), local disk. The old code opens every fragment at
once: the runs raise their own open-file limit to the hard limit.

  .venv/bin/python benchmarks/bench_shard_merge.py --other /tmp/old-checkout \
      --fragments 100 3500 --entries 60 --runs 3
"""

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile

_MERGE = r"""
import hashlib, resource, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
from transforms.shards.shard_fragments import merge_fragments
paths = [line.rstrip("\n") for line in open(sys.argv[1])]
digest = hashlib.sha256()
for key, record in merge_fragments(paths):
    digest.update(record)
print(digest.hexdigest())
"""


def _write_fragments(directory, count, entries, seed=0):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from transforms.shards.shard_fragments import write_fragment
    rng = random.Random(seed)
    paths = []
    for i in range(count):
        path = os.path.join(directory, "train-00000-d0-l%d.frag" % i)
        write_fragment(path, [(rng.getrandbits(64), 0, i * entries + j,
                               rng.randbytes(rng.randint(100, 300))) for j in range(entries)])
        paths.append(path)
    listing = os.path.join(directory, "paths.txt")
    with open(listing, "w") as f:
        f.write("\n".join(paths) + "\n")
    return listing


def _run(tree, listing):
    """(cpu seconds, peak RSS MB, hash) of one merge with `tree`'s code."""
    proc = subprocess.Popen([sys.executable, "-c", _MERGE, listing], cwd=tree,
                            env=dict(os.environ, PYTHONPATH=tree), stdout=subprocess.PIPE)
    out = proc.stdout.read().decode().strip()
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        raise SystemExit("the merge of %s failed" % tree)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--other", required=True, help="the other checkout (A)")
    p.add_argument("--fragments", type=int, nargs="+", default=[100, 3500])
    p.add_argument("--entries", type=int, default=60, help="entries per fragment")
    p.add_argument("--runs", type=int, default=3, help="runs of each version")
    args = p.parse_args()
    print("| fragments | version | CPU s (median) | peak RSS MB (median) | hash |")
    print("|---|---|---|---|---|")
    for count in args.fragments:
        with tempfile.TemporaryDirectory() as directory:
            listing = _write_fragments(directory, count, args.entries)
            results = {"A (other)": [], "B (this)": []}
            for _ in range(args.runs):
                for name, tree in (("A (other)", args.other), ("B (this)", here)):
                    results[name].append(_run(tree, listing))
            for name, runs in results.items():
                print("| %d | %s | %.2f | %.0f | %s |" % (
                    count, name, statistics.median(r[0] for r in runs),
                    statistics.median(r[1] for r in runs), runs[0][2][:12]))


if __name__ == "__main__":
    main()
