"""The encode DoFn of two checkouts, alternating: `encode_cpu.py` in a fresh process per run.

The machine is shared and its speed drifts within minutes, so the two versions are run in
turns (A B A B ...) and compared by medians of CPU seconds (user + sys, which load moves less
than wall time): of the whole process (imports, vocabulary loading, numba's compile or cache
load, the chunk) and of the encode step alone (`encode_cpu.py`'s figure), with each process's
peak RSS (`ru_maxrss`) beside them. Every run must print the same fragments hash.

    python benchmarks/encode_ab.py --base /tmp/base-main --pairs 3 --source S --target T \\
        --source_vocab VS --target_vocab VT
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
_LINE = re.compile(r"cpu ([\d.]+) s .* encode step ([\d.]+) s  fragments sha256 (\w+)")


def run(repo, args):
    """One `encode_cpu.py --repeat 1` of `repo`'s code in a new process: its figures, the
    process's own CPU and peak RSS from `wait4`."""
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "encode_cpu.py"), "--repo", repo,
             "--repeat", "1", "--source", args.source, "--target", args.target,
             "--source_vocab", args.source_vocab, "--target_vocab", args.target_vocab],
            stdout=out)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            raise SystemExit("encode_cpu.py failed for %s" % repo)
        out.seek(0)
        chunk, step, digest = _LINE.search(out.read()).groups()
    return {"process": usage.ru_utime + usage.ru_stime, "chunk": float(chunk),
            "step": float(step), "hash": digest, "rss_mb": usage.ru_maxrss / 1024}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True, help="checkout A (before)")
    parser.add_argument("--new", default=os.path.dirname(HERE), help="checkout B (after)")
    parser.add_argument("--pairs", type=int, default=3, help="A/B pairs of runs")
    for name in ("source", "target", "source_vocab", "target_vocab"):
        parser.add_argument("--" + name, required=True)
    args = parser.parse_args(argv)
    runs = {"A": [], "B": []}
    for i in range(args.pairs):
        for label, repo in (("A", args.base), ("B", args.new)):
            figures = run(repo, args)
            runs[label].append(figures)
            print("%d %s process %.2f s  chunk %.2f s  encode step %.2f s  peak %.0f MB  %s"
                  % (i, label, figures["process"], figures["chunk"], figures["step"],
                     figures["rss_mb"], figures["hash"]), flush=True)
    hashes = {f["hash"] for label in runs for f in runs[label]}
    for key in ("process", "chunk", "step"):
        a = statistics.median(f[key] for f in runs["A"])
        b = statistics.median(f[key] for f in runs["B"])
        print("median %-8s A %.2f s  B %.2f s  B/A %.3f" % (key, a, b, b / a))
    print("fragments hashes:", " ".join(sorted(hashes)),
          "(equal)" if len(hashes) == 1 else "(DIFFERENT)")
    return 0 if len(hashes) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
