"""Length statistics of the encoded pairs: histograms, percentiles, characters per token and
how many pairs Tensor2Tensor's length filter would drop, per split and side, and a histogram
of each pair's targets/inputs length ratio (`RATIO_EDGES`' buckets: a misaligned corpus shows
as mass far from 1, which the per-side figures cannot show).

Users pick `max_length`, a batch size in tokens and bucket boundaries from these figures. The
encode DoFn already holds every pair's lengths, so it only counts: per chunk it keeps the
(inputs length, targets length) of each written pair in a list and, once the chunk is done,
turns it into three small histograms (`chunk_lengths`); per pair that is one tuple appended,
which keeps the hot path's cost low. `LengthReportFn` (a CombineFn, used per split with
`CombinePerKey`) adds the histograms up and computes the figures from them, so no runner ever
holds more than one histogram per length per split.

Lengths count ids with EOS, as stored in the records (`inputs`, `targets`), which is what
T2T's reader measures. With --max_length the job applies that filter itself to the train
split (`transforms.pairs.pair_encoding.PairEncoder.encode`, the same `dropped` rule), and its value
joins the candidates, so the figures before the drop predict exactly how many pairs it drops. The drop rule is T2T 1.15.7's (there is no `_example_too_big` in that
release): `utils/data_reader.input_fn` filters with `example_valid_size(example,
hparams.min_length, max_length)`, which keeps an example when `min_length <= length <=
max_length`, `length` being the longest feature (`example_length`: max over `inputs` and
`targets`), and `max_length = problem.max_length(hparams)` (`split_to_length or max_length or
batch_size`). With T2T's default `min_length` of 0, a pair is dropped exactly when
max(len(inputs), len(targets)) > max_length. Percentiles are nearest-rank: the p-th
percentile is the smallest length L with at least ceil(p% of N) lengths <= L.
"""

import bisect
import collections
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import apache_beam as beam

from transforms.contracts.elements import ChunkLengths, Histogram, JsonValue

SIDES = ("inputs", "targets")
PERCENTILES = (50, 90, 99)
CANDIDATE_MAX_LENGTHS = (64, 128, 256, 512)  # and the split's p99 pair length
# targets/inputs length: bucket i holds ratios in [RATIO_EDGES[i-1], RATIO_EDGES[i])
RATIO_EDGES = (0.5, 0.67, 0.8, 0.9, 1.1, 1.25, 1.5, 2.0)
DROP_RULE = ("T2T 1.15.7 data_reader.input_fn keeps a pair when hparams.min_length (default "
             "0) <= max(len(inputs), len(targets)) <= max_length (lengths with EOS); "
             "dropped: max(len(inputs), len(targets)) > max_length")


def chunk_lengths(pair_lengths: Iterable[Tuple[int, int]], chars: Sequence[int],
                  tokens: Sequence[int]) -> ChunkLengths:
    """One chunk's partial counts from `pair_lengths` [(inputs length, targets length)] (ids
    with EOS), `chars` and `tokens` ([inputs, targets] totals of stripped-line characters and
    ids without EOS): (inputs histogram, targets histogram, pair histogram, chars, tokens),
    histograms as {length: pairs}; the pair length is max(inputs, targets)."""
    inputs: Histogram = {}
    targets: Histogram = {}
    pair: Histogram = {}
    ratio: Histogram = {}
    for (a, b), n in collections.Counter(pair_lengths).items():
        inputs[a] = inputs.get(a, 0) + n
        targets[b] = targets.get(b, 0) + n
        m = a if a > b else b
        pair[m] = pair.get(m, 0) + n
        r = ratio_bucket(a, b)
        ratio[r] = ratio.get(r, 0) + n
    return ChunkLengths(inputs, targets, pair, list(chars), list(tokens), ratio)


def ratio_bucket(inputs: int, targets: int) -> int:
    """The `RATIO_EDGES` bucket of targets/inputs (two empty sides: ratio 1; empty inputs
    only: the last bucket)."""
    if not inputs:
        return len(RATIO_EDGES) if targets else bisect.bisect_right(RATIO_EDGES, 1.0)
    return bisect.bisect_right(RATIO_EDGES, targets / inputs)


def ratio_labels() -> List[str]:
    """The buckets' names, in order: `<0.5`, `0.5-0.67`, ..., `>=2.0`."""
    edges = [str(e) for e in RATIO_EDGES]
    return (["<" + edges[0]] + ["%s-%s" % pair for pair in zip(edges, edges[1:])]
            + [">=" + edges[-1]])


def _add_histogram(into: Histogram, histogram: Histogram) -> None:
    for length, n in histogram.items():
        into[length] = into.get(length, 0) + n


def percentile(histogram: Histogram, q: int) -> Optional[int]:
    """Nearest-rank `q`-th percentile (an integer 0 < q <= 100) of {length: count}; None when
    empty."""
    total = sum(histogram.values())
    if not total:
        return None
    rank = max(1, (q * total + 99) // 100)
    seen = 0
    for length in sorted(histogram):
        seen += histogram[length]
        if seen >= rank:
            return length
    raise AssertionError("unreachable")


def dropped(pair_histogram: Histogram, max_length: int) -> int:
    """Pairs T2T drops at `max_length`: those whose longer side is longer."""
    return sum(n for length, n in pair_histogram.items() if length > max_length)


def _distribution(histogram: Histogram) -> Dict[str, Any]:
    figures: Dict[str, Any] = {
        "histogram": [[length, histogram[length]] for length in sorted(histogram)]}
    for q in PERCENTILES:
        figures["p%d" % q] = percentile(histogram, q)
    figures["max"] = max(histogram) if histogram else None
    return figures


def candidate_max_lengths(max_length: int = 0) -> Tuple[int, ...]:
    """The `max_length`s the drops are counted at: `CANDIDATE_MAX_LENGTHS` and the run's
    --max_length (0: none), in order (and each split's p99)."""
    return tuple(sorted(set(CANDIDATE_MAX_LENGTHS) | ({max_length} if max_length else set())))


def length_report(accumulator: ChunkLengths,
                  max_lengths: Sequence[int] = CANDIDATE_MAX_LENGTHS) -> Dict[str, JsonValue]:
    """The figures of one split from its summed counts (see `chunk_lengths`), with the drops
    at `max_lengths` (`candidate_max_lengths`) and the p99: JSON-able."""
    inputs, targets, pair, chars, tokens = accumulator[:5]
    pairs = sum(pair.values())
    report: Dict[str, Any] = {"pairs": pairs}
    for i, (side, histogram) in enumerate(zip(SIDES, (inputs, targets))):
        figures = _distribution(histogram)
        figures.update({"chars": chars[i], "tokens": tokens[i],
                        "chars_per_token": round(chars[i] / tokens[i], 4) if tokens[i] else None})
        report[side] = figures
    report["pair"] = _distribution(pair)
    ratio = accumulator.ratio
    report["ratio_histogram"] = [[label, ratio.get(i, 0)]
                                 for i, label in enumerate(ratio_labels())]
    candidates: List[Dict[str, Any]] = [{"max_length": m} for m in max_lengths]
    if pairs:
        candidates.append({"max_length": report["pair"]["p99"], "p99": True})
    for c in candidates:
        n = dropped(pair, c["max_length"])
        c.update({"dropped": n, "dropped_fraction": round(n / pairs, 6) if pairs else 0.0})
    report["drops"] = candidates
    return report


class LengthReportFn(beam.CombineFn):
    """Per-chunk counts (`chunk_lengths`) -> the split's `length_report` (drops at
    `max_lengths`: `candidate_max_lengths`)."""

    def __init__(self, max_lengths: Sequence[int] = CANDIDATE_MAX_LENGTHS) -> None:
        super().__init__()
        self._max_lengths = tuple(max_lengths)

    def create_accumulator(self) -> ChunkLengths:
        return ChunkLengths({}, {}, {}, [0, 0], [0, 0], {})

    def add_input(self, accumulator: ChunkLengths, counts: ChunkLengths) -> ChunkLengths:
        for into, histogram in zip(accumulator[:3] + accumulator[5:], counts[:3] + counts[5:]):
            _add_histogram(into, histogram)
        for sums, totals in zip(accumulator[3:5], counts[3:5]):
            sums[0] += totals[0]
            sums[1] += totals[1]
        return accumulator

    def merge_accumulators(self, accumulators: Iterable[ChunkLengths]) -> ChunkLengths:
        merged = self.create_accumulator()
        for accumulator in accumulators:
            self.add_input(merged, accumulator)
        return merged

    def extract_output(self, accumulator: ChunkLengths) -> Dict[str, JsonValue]:
        return length_report(accumulator, self._max_lengths)


def summary_lengths(reports: Dict[str, Dict[str, JsonValue]], splits: Iterable[str],
                    max_length: int = 0) -> Dict[str, JsonValue]:
    """The summary's `lengths`: the rule and candidates, and `reports` ({split:
    length_report}) for every split in `splits` (a split whose encode pass reported no counts,
    e.g. an empty one, gets the report of no pairs); `max_length`: the run's --max_length;
    with several language pairs also `pairs` ({pair: {split: length_report}}, from the
    reports keyed "{split}\t{pair}")."""
    empty = LengthReportFn().create_accumulator()
    candidates = candidate_max_lengths(max_length)
    lengths: Dict[str, JsonValue] = {
        "drop_rule": DROP_RULE, "percentiles": "nearest-rank",
        "candidate_max_lengths": list(candidates) + ["p99"],
        "splits": {split: reports.get(split) or length_report(empty, candidates)
                   for split in sorted(splits)}}
    if max_length:
        lengths["max_length"] = max_length
    pairs: Dict[str, Dict[str, JsonValue]] = {}
    for key in sorted(reports):
        if "\t" in key:
            split, pair = key.split("\t", 1)
            pairs.setdefault(pair, {})[split] = reports[key]
    if pairs:
        lengths["pairs"] = pairs
    return lengths
