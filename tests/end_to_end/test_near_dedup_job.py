"""The job with --dedup minhash / normalized and --decontaminate, end to end, on the bundled
sample with planted near duplicates and test lines: the books balance with the drops under
their reasons (test_overlap per test file), rejects name the kept pair, the output is the
same on Prism as on the in-process runner, and a test file pattern that matches nothing is
exit 2 before anything runs."""

import json
import os
import random

import pytest

import clusters
from datagen_helpers import (DIRECT_MP2, assert_books_balance, assert_no_output,
                             one_line_error, output_bytes, run_datagen)
from prism_binary import prism_binary
from repo_paths import SAMPLE_DATA

pytestmark = pytest.mark.slow
SAMPLE = os.path.join(SAMPLE_DATA, "enzh-mlqe-pe")


def _lines(name, n):
    with open(os.path.join(SAMPLE, name), encoding="utf-8") as f:
        return f.read().splitlines()[:n]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """600 sample pairs, 30 near duplicates (a word changed, case, punctuation) of some of
    them and 10 pairs whose source is a line of the test file, shuffled; the test file."""
    root = tmp_path_factory.mktemp("near")
    rng = random.Random(1)
    pairs = list(zip(_lines("train.en", 600), _lines("train.zh", 600)))
    for s, t in rng.sample(pairs, 30):
        words = s.split()
        words[rng.randrange(len(words))] = "zzz"
        pairs.append((" ".join(words).upper(), t + " 。"))
    test = _lines("dev.en", 10)
    pairs += [(line.lower() + " !", "测试") for line in test]
    rng.shuffle(pairs)
    (root / "test.en").write_text("\n".join(test) + "\n", encoding="utf-8")
    for side, ext in ((0, "en"), (1, "zh")):
        (root / ("train." + ext)).write_text("".join(p[side] + "\n" for p in pairs),
                                             encoding="utf-8")
    return root


def _flags(root):
    return ["--dedup", "minhash", "--minhash_threshold", "0.6", "--decontaminate",
            str(root / "test.en"), "--problem", "p", "--vocab_size", "500"]


def _run(root, out, runner=None):
    kwargs = {} if runner is None else {"runner": runner}
    return run_datagen(out, root / "train.en", root / "train.zh", *_flags(root), **kwargs)


@pytest.fixture(scope="module")
def baseline(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("near-out") / "out"
    return out, _run(corpus, out)


def test_drops_counted_per_reason_and_named(baseline):
    out, summary = baseline
    assert_books_balance(summary)
    train = summary["splits"]["train"]
    assert train["rejected_by_reason"]["test_overlap:test.en"] == 10
    assert 25 <= train["rejected_by_reason"]["near_duplicate"] <= 35
    assert summary["cleaning"]["dropped"]["train"] == train["rejected_by_reason"]
    assert summary["cleaning"]["minhash"]["bands"] * summary["cleaning"]["minhash"]["rows"] \
        <= 128
    with open(os.path.join(out, "rejects", "p-train.jsonl"), encoding="utf-8") as f:
        rejects = [json.loads(line) for line in f]
    near = [r for r in rejects if r["reason"] == "near_duplicate"]
    assert near and all(r["duplicate_of"]["line"] < r["ordinal"] for r in near)
    assert {r["target"] for r in rejects if r["reason"].startswith("test_overlap")} == {"测试"}


def test_same_output_on_worker_processes(corpus, baseline, tmp_path):
    out = tmp_path / "mp"
    _run(corpus, out, DIRECT_MP2)
    assert output_bytes(out) == output_bytes(baseline[0])


def test_same_output_on_prism(corpus, baseline, tmp_path):
    try:
        prism = prism_binary()
    except clusters.Unavailable as e:
        clusters.unavailable(str(e))
    out = tmp_path / "prism"
    _run(corpus, out, ["--runner", "PrismRunner", "--prism_location", prism])
    assert output_bytes(out) == output_bytes(baseline[0])


def test_a_test_file_pattern_matching_nothing_is_exit_2(corpus, tmp_path, capsys):
    out = tmp_path / "out"
    one_line_error(capsys, ["--train_source", corpus / "train.en", "--train_target",
                            corpus / "train.zh", "--output_dir", out, "--decontaminate",
                            tmp_path / "missing*.en", "--runner", "FnApiRunner"],
                   "--decontaminate", "missing*.en")
    assert_no_output(out)
