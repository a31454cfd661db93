"""The length report: figures per split and side (`transforms.length_stats`), their combine,
the encode DoFn's counts, the summary's `lengths` against the written records, and the HTML
page (`pipeline.output.length_report`), also rendered by headless Chromium when it is installed."""

import collections
import json
import os
import random
import shutil
import subprocess

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from beam_unit import TINY_SUBTOKENS, chunked_pair, test_pipeline
from datagen_helpers import DATA_DIR, read_examples, run_datagen, shard_files
from pipeline.output.length_report import SIDE_COLORS, render_length_report
from pipeline.driver.options import default_config
from transforms.codecs.subword import SubwordEncoder
from transforms.encode_pairs import EncodePairs
from transforms.length_stats import (CANDIDATE_MAX_LENGTHS, LengthReportFn, chunk_lengths,
                                     length_report, percentile, summary_lengths)


def _hist(lengths):
    return [[k, v] for k, v in sorted(collections.Counter(lengths).items())]


def _expected_report(pairs, chars, tokens):
    """The figures of `pairs` [(inputs length, targets length)] computed directly, with
    numpy's nearest-rank percentiles ("inverted_cdf")."""
    report = {"pairs": len(pairs)}
    columns = {"inputs": [a for a, _ in pairs], "targets": [b for _, b in pairs],
               "pair": [max(a, b) for a, b in pairs]}
    for side, lengths in columns.items():
        figures = {"histogram": _hist(lengths), "max": max(lengths)}
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
    return report


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
                      {5: 1, 10: 1, 3: 1, 70: 1, 200: 1}, [30, 40], [10, 20])
    report = length_report(counts)
    assert (report["inputs"]["p50"], report["inputs"]["p90"], report["inputs"]["p99"],
            report["inputs"]["max"]) == (3, 70, 70, 70)
    assert (report["pair"]["p50"], report["pair"]["p90"], report["pair"]["max"]) == (10, 200, 200)
    assert report["targets"]["chars_per_token"] == 2.0
    # T2T drops a pair when its longer side is longer than max_length
    assert [(d["max_length"], d["dropped"]) for d in report["drops"]] == [
        (64, 2), (128, 1), (256, 0), (512, 0), (200, 0)]
    assert report == _expected_report(pairs, [30, 40], [10, 20])


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
    os.makedirs(tmp_path / "fragments")
    with test_pipeline() as p:
        out = (p | beam.Create(chunks)
               | EncodePairs(vocab, vocab, 7, {"train": 2}, str(tmp_path / "fragments"),
                             default_config()))
        assert_that(out.lengths | beam.CombinePerKey(LengthReportFn()),
                    equal_to([("train", expected)]))


# -- a real job: the summary against the records ------------------------------------------

def _first_lines(name, n):
    with open(os.path.join(DATA_DIR, "enzh-mlqe-pe", name), encoding="utf-8") as f:
        return [next(f).rstrip("\n") for _ in range(n)]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """400 train pairs (one with an empty target: rejected) and 60 dev pairs of the sample
    corpus, several encode chunks per split."""
    d = tmp_path_factory.mktemp("lengths")
    lines = {}
    for split, name, n in (("train", "train", 400), ("dev", "dev", 60)):
        for lang in ("en", "zh"):
            lines[(split, lang)] = _first_lines("%s.%s" % (name, lang), n)
    lines[("train", "zh")][7] = "  "
    paths = {}
    for key, text in lines.items():
        paths[key] = d / ("%s.%s" % key)
        paths[key].write_text("".join(line + "\n" for line in text), encoding="utf-8")
    out = d / "out"
    summary = run_datagen(out, paths[("train", "en")], paths[("train", "zh")],
                          "--problem", "p", "--vocab_size", 400, "--num_train_shards", 3,
                          "--dev_source", paths[("dev", "en")], "--dev_target",
                          paths[("dev", "zh")], "--encode_chunk_lines", 64)
    return out, summary, lines


@pytest.mark.slow
def test_summary_lengths_equal_the_written_records(job):
    out, summary, lines = job
    with open(out / "p.datagen_summary.json", encoding="utf-8") as f:
        on_disk = json.load(f)
    assert on_disk["lengths"] == summary["lengths"]
    lengths = on_disk["lengths"]
    assert "max(len(inputs), len(targets)) > max_length" in lengths["drop_rule"]
    assert set(lengths["splits"]) == {"train", "dev"}
    for split, n in (("train", 399), ("dev", 60)):
        examples = [e for path in shard_files(out, "p", split) for e in read_examples(path)]
        assert len(examples) == n == lengths["splits"][split]["pairs"]
        assert all(i[-1] == 1 and t[-1] == 1 for i, t in examples)
        written = [(s.strip(), t.strip()) for s, t in zip(lines[(split, "en")],
                                                          lines[(split, "zh")]) if t.strip()]
        expected = _expected_report(
            [(len(i), len(t)) for i, t in examples],
            [sum(len(s) for s, _ in written), sum(len(t) for _, t in written)],
            [sum(len(i) - 1 for i, _ in examples), sum(len(t) - 1 for _, t in examples)])
        assert lengths["splits"][split] == expected, split
    drops = {d["max_length"]: d["dropped"] for d in lengths["splits"]["train"]["drops"]}
    assert drops[64] > 0 and drops[512] == 0  # the sample corpus has a few long pairs


@pytest.mark.slow
def test_html_report_is_written_with_the_outputs(job):
    out, summary, _ = job
    with open(out / "p.lengths.html", encoding="utf-8") as f:
        page = f.read()
    assert page == render_length_report(summary)
    assert not os.path.exists(out / ".datagen-work")


# -- the page ------------------------------------------------------------------------------

def _summary_of(pairs_by_split):
    reports = {split: length_report(chunk_lengths(pairs, [5 * len(pairs)] * 2,
                                                  [2 * len(pairs)] * 2))
               for split, pairs in pairs_by_split.items()}
    return {"problem": "demo<&>", "lengths": summary_lengths(reports, pairs_by_split)}


def _some_pairs(n, seed):
    rng = random.Random(seed)
    return [(int(rng.lognormvariate(3.2, 0.4)) + 1, int(rng.lognormvariate(3.4, 0.5)) + 1)
            for _ in range(n)]


def test_page_is_self_contained_with_a_chart_per_split_and_side():
    page = render_length_report(_summary_of({"train": _some_pairs(3000, 1),
                                             "dev": _some_pairs(200, 2)}))
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 4
    assert "demo&lt;&amp;&gt;" in page and "demo<&>" not in page
    assert "<script" not in page and "src=" not in page and "href=" not in page
    assert "@import" not in page and "url(" not in page
    assert page.replace('xmlns="http://www.w3.org/2000/svg"', "").count("http") == 0
    assert page.index("train: 3,000 pairs") < page.index("dev: 200 pairs")
    for color in SIDE_COLORS.values():
        assert page.count('fill="%s"' % color) > 10
    assert "(p99)" in page and "p99 " in page
    # a long tail: at most MAX_BINS bars per chart
    tail = render_length_report(_summary_of({"train": [(1, 1), (5000, 3)]}))
    assert tail.count("<rect") <= 2 * 60


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="no chromium/chromium-browser on PATH "
                    "(run_tests.sh installs the Debian package when it can): the HTML render "
                    "check needs a headless browser")
def test_page_renders_in_headless_chromium(tmp_path):
    from PIL import Image
    page = tmp_path / "report.html"
    page.write_text(render_length_report(_summary_of({"train": _some_pairs(3000, 1),
                                                      "dev": _some_pairs(200, 2)})),
                    encoding="utf-8")
    shot = tmp_path / "shot.png"
    subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", "--screenshot=%s" % shot, "--window-size=1000,1400",
                    page.as_uri()], check=True, capture_output=True, timeout=120)
    image = Image.open(shot).convert("RGB")
    assert image.size == (1000, 1400)
    pixels = collections.Counter(image.getdata())
    assert len(pixels) > 50  # text, tables, bars: not a blank page

    def near(color):
        want = tuple(int(color[i:i + 2], 16) for i in (1, 3, 5))
        return sum(n for rgb, n in pixels.items()
                   if all(abs(a - b) <= 8 for a, b in zip(rgb, want)))

    for side, color in SIDE_COLORS.items():  # each side's bars were drawn, both splits
        assert near(color) > 5000, side
