"""The length report: the summary's `lengths` of a real job against the records it wrote, and
the HTML page (`pipeline.output.length_report`), also rendered by headless Chromium when it is
installed. The figures themselves (`transforms.encode.length_stats`): tests/transforms/encode/test_length_stats.py."""

import collections
import json
import os
import random
import shutil
import subprocess

import pytest

from datagen_helpers import DATA_DIR, read_examples, run_datagen, shard_files
from length_figures import expected_report as _expected_report
from pipeline.output.length_report import SIDE_COLORS, render_length_report
from transforms.encode.length_stats import chunk_lengths, length_report, summary_lengths


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


def test_page_says_what_max_length_and_packing_did():
    pairs = _some_pairs(500, 3)
    kept = [p for p in pairs if max(p) <= 40]
    reports = {"train": length_report(chunk_lengths(kept, [1, 1], [1, 1]), (40, 64)),
               "train before max_length": length_report(chunk_lengths(pairs, [1, 1], [1, 1]),
                                                        (40, 64))}
    packing = {"packed_length": 64, "records": 200, "pairs": len(kept), "pairs_per_record": 1.5,
               "ids": {"inputs": 9000, "targets": 9100}, "fill": {"inputs": 0.7, "targets": 0.71},
               "over_length": 0, "histogram": [[1, 80], [2, 120]]}
    summary = {"problem": "p", "lengths": summary_lengths(reports, list(reports), 40),
               "splits": {"train": {"rejected_by_reason": {
                   "over_max_length": len(pairs) - len(kept)}, "packing": packing}}}
    assert summary["lengths"]["candidate_max_lengths"] == [40, 64, 128, 256, 512, "p99"]
    before = summary["lengths"]["splits"]["train before max_length"]["drops"]
    assert before[0] == {"max_length": 40, "dropped": len(pairs) - len(kept),
                         "dropped_fraction": round((len(pairs) - len(kept)) / len(pairs), 6)}
    page = render_length_report(summary)
    assert "--max_length 40 dropped %d train pairs" % (len(pairs) - len(kept)) in page
    assert "--packed_length 64" in page and "pairs in a record" in page
    assert page.index("<h2>train: %d pairs" % len(kept)) < page.index("<h2>train before max_length")


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
