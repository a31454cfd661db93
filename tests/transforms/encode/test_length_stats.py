"""The length figures (`transforms.encode.length_stats`): per split and side, nearest-rank percentiles,
their combine on TestPipeline, and the encode DoFn's counts of the pairs it writes. The
summary's `lengths` of a real job and the HTML page: tests/pipeline/output/test_length_report.py."""

import collections
import random

import apache_beam as beam
import numpy as np
from apache_beam.testing.util import assert_that, equal_to

from beam_unit import TINY_SUBTOKENS, chunked_pair, encode_tiny_pairs, test_pipeline
from length_figures import expected_report as _expected_report
from pipeline.output.length_report import render_length_report
from transforms.codecs.subword import SubwordEncoder
from transforms.encode.length_stats import (CANDIDATE_MAX_LENGTHS, LengthReportFn, chunk_lengths,
                                     length_report, percentile, summary_lengths)


# -- the figures and their combine ---------------------------------------------------------

def test_percentile_is_nearest_rank_as_numpy_inverted_cdf():
    rng = random.Random(5)
    for _ in range(200):
        lengths = [rng.choice([rng.randint(1, 10), rng.randint(1, 600)])
                   for _ in range(rng.randint(1, 300))]
        histogram = collections.Counter(lengths)
        for q in (1, 50, 90, 99, 100):
            assert percentile(histogram, q) == int(
                np.percentile(lengths, q, method="inverted_cdf")), (lengths, q)
    assert percentile({}, 50) is None


def test_chunk_counts_and_report_of_a_tiny_split():
    pairs = [(3, 5), (10, 2), (3, 3), (70, 4), (3, 200)]
    counts = chunk_lengths(pairs, [30, 40], [10, 20])
    assert counts == ({3: 3, 10: 1, 70: 1}, {5: 1, 2: 1, 3: 1, 4: 1, 200: 1},
                      {5: 1, 10: 1, 3: 1, 70: 1, 200: 1}, [30, 40], [10, 20],
                      {7: 1, 0: 2, 4: 1, 8: 1})  # 5/3, 2/10 and 4/70, 3/3, 200/3
    report = length_report(counts)
    assert (report["inputs"]["p50"], report["inputs"]["p90"], report["inputs"]["p99"],
            report["inputs"]["max"]) == (3, 70, 70, 70)
    assert (report["pair"]["p50"], report["pair"]["p90"], report["pair"]["max"]) == (10, 200, 200)
    assert report["targets"]["chars_per_token"] == 2.0
    # T2T drops a pair when its longer side is longer than max_length
    assert [(d["max_length"], d["dropped"]) for d in report["drops"]] == [
        (64, 2), (128, 1), (256, 0), (512, 0), (200, 0)]
    assert report == _expected_report(pairs, [30, 40], [10, 20])


def test_ratio_buckets_are_half_open_and_exact_at_the_edges():
    # each edge, as a ratio of small lengths, falls in the bucket it opens
    pairs = [(2, 1), (100, 67), (5, 4), (10, 9), (10, 11), (4, 5), (2, 3), (1, 2), (3, 2),
             (1, 1), (0, 0), (0, 3), (7, 1), (1, 9), (100, 66), (10, 8)]
    report = length_report(chunk_lengths(pairs, [0, 0], [0, 0]))
    from length_figures import expected_ratio_histogram
    assert report["ratio_histogram"] == expected_ratio_histogram(pairs)
    assert [n for _, n in report["ratio_histogram"]] == [1, 3, 1, 2, 3, 1, 1, 1, 3]


def test_report_of_no_pairs():
    empty = summary_lengths({}, ["train"])["splits"]["train"]
    assert empty["pairs"] == 0 and empty["inputs"]["p50"] is None
    assert empty["inputs"]["chars_per_token"] is None
    assert [d["max_length"] for d in empty["drops"]] == list(CANDIDATE_MAX_LENGTHS)
    page = render_length_report({"problem": "p", "lengths": summary_lengths({}, ["train"])})
    assert page.count("<svg") == 2 and "no pairs" in page


def test_combine_per_split_on_test_pipeline():
    """Chunks of two splits, in any order, some empty: the combine (lifted by the runner, so
    accumulators are merged) gives each split's figures of all its pairs."""
    chunks = {"train": [[(3, 5), (10, 2)], [], [(3, 3), (70, 4)], [(3, 200)]],
              "dev": [[(1, 1), (600, 9)]]}
    elements = []
    for split, parts in chunks.items():
        for i, pairs in enumerate(parts):
            elements.append((split, chunk_lengths(pairs, [i + 1, 2 * i], [len(pairs), i])))
    random.Random(1).shuffle(elements)
    expected = {
        "train": _expected_report([(3, 5), (10, 2), (3, 3), (70, 4), (3, 200)],
                                  [1 + 2 + 3 + 4, 0 + 2 + 4 + 6], [2 + 0 + 2 + 1, 0 + 1 + 2 + 3]),
        "dev": _expected_report([(1, 1), (600, 9)], [1, 0], [2, 0])}
    # dev has no target tokens (chars_per_token None) and a p99 pair length of 600
    with test_pipeline() as p:
        reports = (p | beam.Create(elements) | beam.CombinePerKey(LengthReportFn()))
        assert_that(reports, equal_to(sorted(expected.items())))




def test_encode_pairs_counts_written_pairs_only(tmp_path):
    """The DoFn's per-chunk counts, combined: lengths with EOS of the pairs written (a pair
    with an empty side is rejected, not counted), characters of the stripped lines."""
    source = ["hello world", "", " hello ", "world hello", "hello world!"]
    target = ["你好世界", "世界", "你好", "世界你好", "世界你好"]
    vocab, chunks = chunked_pair(tmp_path, source, target)
    assert len(chunks) == 2
    encoder = SubwordEncoder(TINY_SUBTOKENS)
    written = [(s.strip(), t.strip()) for s, t in zip(source, target) if s.strip() and t.strip()]
    ids = [(encoder.encode(s), encoder.encode(t)) for s, t in written]
    expected = _expected_report(
        [(len(a) + 1, len(b) + 1) for a, b in ids],
        [sum(len(s) for s, _ in written), sum(len(t) for _, t in written)],
        [sum(len(a) for a, _ in ids), sum(len(b) for _, b in ids)])
    with test_pipeline() as p:
        out = p | beam.Create(chunks) | encode_tiny_pairs(vocab, tmp_path, {"train": 2})
        assert_that(out.lengths | beam.CombinePerKey(LengthReportFn()),
                    equal_to([("train", expected)]))
