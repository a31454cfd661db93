"""The vocab sample's counting alone: T2T's tokenizer as a regular expression + Counter
(`token_counts.count_counted_lines` with `tokenizer.count_tokens`, the reference) against the
compiled counter (`token_count_kernel.count_weighted`), on the bench corpus's lines counted
by distinct line (each with its number of occurrences, as the plan gives them), in one
process, alternating, CPU seconds (process time: the load spoils it less than wall time).
The two must give the same counts; the script says so.

    .venv/bin/python benchmarks/count_ab.py --lines 300000 --repeat 3
"""

import argparse
import collections
import lzma
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from transforms.codecs import token_count_kernel, tokenizer  # noqa: E402
from transforms.vocab.token_counts import count_counted_lines  # noqa: E402

DATA_DIR = "/work/shared/data/bench/enzh-wmt21-24"


def counted_lines(path, lines):
    with lzma.open(path, "rt", encoding="utf-8") as f:
        counts = collections.Counter(line.strip() for _, line in zip(range(lines), f))
    return list(counts.items())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=300000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    token_count_kernel.warm_up()
    for side in ("en", "zh"):
        pairs = counted_lines(os.path.join(DATA_DIR, "train.%s.xz" % side), args.lines)
        cpu = {"regex": [], "kernel": []}
        results = {}
        for _ in range(args.repeat):
            for name, count in (("regex", lambda: count_counted_lines(
                    pairs, tokenizer.count_tokens)),
                                ("kernel", lambda: token_count_kernel.count_weighted(pairs))):
                t0 = time.process_time()
                counts, n, chars = count()
                cpu[name].append(time.process_time() - t0)
                results[name] = (dict(counts.items()), n, chars)
        same = results["regex"] == results["kernel"]
        regex, kernel = statistics.median(cpu["regex"]), statistics.median(cpu["kernel"])
        print("%s: %d distinct lines, %d tokens: regex %.3f s, kernel %.3f s (%.2fx), "
              "same counts: %s; load %.1f" % (side, len(pairs), len(results["kernel"][0]),
                                               regex, kernel, regex / kernel, same,
                                               os.getloadavg()[0]))


if __name__ == "__main__":
    main()
