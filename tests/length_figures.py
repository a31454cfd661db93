"""The length figures computed directly, the oracle of the length tests
(tests/transforms/encode/test_length_stats.py for `transforms.encode.length_stats`, and
tests/pipeline/output/test_length_report.py for a job's summary): histograms, numpy's
nearest-rank percentiles ("inverted_cdf"), chars per token and the drops at every candidate
`max_length`."""

import collections
from fractions import Fraction

import numpy as np

from transforms.encode.length_stats import CANDIDATE_MAX_LENGTHS


def hist(lengths):
    return [[k, v] for k, v in sorted(collections.Counter(lengths).items())]


def expected_report(pairs, chars, tokens):
    """The figures of `pairs` [(inputs length, targets length)] computed directly, with
    numpy's nearest-rank percentiles ("inverted_cdf")."""
    report = {"pairs": len(pairs)}
    columns = {"inputs": [a for a, _ in pairs], "targets": [b for _, b in pairs],
               "pair": [max(a, b) for a, b in pairs]}
    for side, lengths in columns.items():
        figures = {"histogram": hist(lengths), "max": max(lengths)}
        for q in (50, 90, 99):
            figures["p%d" % q] = int(np.percentile(lengths, q, method="inverted_cdf"))
        report[side] = figures
    for i, side in enumerate(("inputs", "targets")):
        report[side].update({"chars": chars[i], "tokens": tokens[i], "chars_per_token": (
            round(chars[i] / tokens[i], 4) if tokens[i] else None)})
    pair = columns["pair"]
    report["drops"] = [
        {"max_length": m, "dropped": sum(n > m for n in pair),
         "dropped_fraction": round(sum(n > m for n in pair) / len(pair), 6)}
        for m in CANDIDATE_MAX_LENGTHS] + [
        {"max_length": report["pair"]["p99"], "p99": True,
         "dropped": sum(n > report["pair"]["p99"] for n in pair),
         "dropped_fraction": round(sum(n > report["pair"]["p99"] for n in pair) / len(pair), 6)}]
    report["ratio_histogram"] = expected_ratio_histogram(pairs)
    return report


RATIO_BUCKETS = [("<0.5", None, "0.5"), ("0.5-0.67", "0.5", "0.67"), ("0.67-0.8", "0.67", "0.8"),
                 ("0.8-0.9", "0.8", "0.9"), ("0.9-1.1", "0.9", "1.1"),
                 ("1.1-1.25", "1.1", "1.25"), ("1.25-1.5", "1.25", "1.5"),
                 ("1.5-2.0", "1.5", "2.0"), (">=2.0", "2.0", None)]


def expected_ratio_histogram(pairs):
    """[[bucket, pairs]] of targets/inputs, exactly (fractions), lo <= ratio < hi."""
    out = []
    for label, lo, hi in RATIO_BUCKETS:
        def inside(a, b):
            r = Fraction(b, a) if a else (Fraction(1) if not b else None)
            if r is None:  # empty inputs, some targets: infinitely long
                return hi is None
            return (lo is None or r >= Fraction(lo)) and (hi is None or r < Fraction(hi))
        out.append([label, sum(inside(a, b) for a, b in pairs)])
    return out
