"""The job with --filters, --dedup and --drop_dev_overlap, end to end.

The pairs it drops are, by line number, those OpusFilter 3.3.1 drops (tests/opusfilter_reference);
the books balance with every drop under its reason; the vocabulary is the one learnt from
the kept lines alone (a job without cleaning on a file of just those lines); the output is
the same on every runner; a bad --filters file is exit 2 before anything runs.
"""

import json
import os

import pytest

from datagen_helpers import (DIRECT_MP2, assert_books_balance, assert_no_output,
                             one_line_error, output_bytes, run_datagen)
from opusfilter_reference import FILTER_CHAIN, opusfilter_drops
from repo_paths import DATA_DIR

pytestmark = pytest.mark.slow

NOISY = os.path.join(DATA_DIR, "noisy-enzh")
FILTERS = FILTER_CHAIN
TRAIN = [os.path.join(NOISY, "train-a"), os.path.join(NOISY, "train-b")]
DEV = os.path.join(NOISY, "dev")


def _config(tmp_path):
    import yaml
    path = tmp_path / "filters.yaml"
    path.write_text(yaml.safe_dump({"filters": FILTERS}))
    return path


def _flags(tmp_path):
    return ["--dev_source", DEV + ".en", "--dev_target", DEV + ".zh", "--filters",
            _config(tmp_path), "--dedup", "pairs", "--drop_dev_overlap", "--problem", "p",
            "--vocab_size", "1000"]


def _run(tmp_path, name, *extra, runner=None):
    out = tmp_path / name
    kwargs = {} if runner is None else {"runner": runner}
    summary = run_datagen(out, ",".join(t + ".en" for t in TRAIN),
                          ",".join(t + ".zh" for t in TRAIN), *_flags(tmp_path), *extra,
                          **kwargs)
    return out, summary


def _rejects(out, split):
    with open(os.path.join(out, "rejects", "p-%s.jsonl" % split), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def cleaned(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cleaned")
    return tmp, _run(tmp, "out")


def test_job_drops_what_opusfilter_drops(cleaned, tmp_path):
    (tmp, (out, summary)) = cleaned
    joined = []
    for ext in ("en", "zh"):
        path = tmp_path / ("train." + ext)
        path.write_bytes(b"".join(open(t + "." + ext, "rb").read() for t in TRAIN))
        joined.append(str(path))
    theirs = opusfilter_drops(tmp_path / "opus", *joined, {"f": FILTERS}, {"dedup": {}},
                              overlap=[DEV + ".en", DEV + ".zh"])
    theirs_dev = opusfilter_drops(tmp_path / "opus-dev", DEV + ".en", DEV + ".zh",
                                  {"f": FILTERS}, {"dedup": {}})
    offset = {"train-a.en": 0, "train-b.en": 700}
    train = _rejects(out, "train")
    ours = {offset[r["dataset"]] + r["ordinal"]: r["reason"] for r in train}
    assert set(ours) == set(theirs["dedup"]) | set(theirs["overlap"]) | set(theirs["f"])
    assert {n for n, reason in ours.items() if reason == "dev_overlap"} == set(theirs["overlap"])
    assert {n for n, reason in ours.items() if reason == "duplicate"} == (
        set(theirs["dedup"]) - set(theirs["overlap"]))
    dev = {r["ordinal"] for r in _rejects(out, "dev")}
    assert dev == set(theirs_dev["dedup"]) | set(theirs_dev["f"])
    # books: every drop under its reason, in the summary and per dataset
    assert_books_balance(summary)
    reasons = summary["splits"]["train"]["rejected_by_reason"]
    assert reasons["dev_overlap"] == len(theirs["overlap"]) and reasons["duplicate"] > 0
    assert summary["cleaning"]["dropped"]["train"] == reasons
    assert summary["stages"]["clean"]["seconds"] > 0
    # the lengths before cleaning: every pair a run without cleaning writes (not those
    # with an empty side, here dropped by LengthFilter)
    lengths = summary["lengths"]["splits"]
    empty = sum(1 for t in TRAIN for s, g in zip(open(t + ".en", encoding="utf-8"),
                                                  open(t + ".zh", encoding="utf-8"))
                if not s.strip() or not g.strip())
    assert lengths["train before cleaning"]["pairs"] == 1100 - empty and empty
    assert lengths["train"]["pairs"] == summary["splits"]["train"]["pairs_written"]
    first = next(r for r in train if r["reason"] == "duplicate")
    assert set(first["duplicate_of"]) == {"split", "dataset", "line"}


def test_vocabulary_is_learnt_from_the_kept_lines(cleaned, tmp_path):
    """The same vocabulary as a job without cleaning on files of only the kept train
    lines (the vocab sample skips the dropped lines and is sized by what is left)."""
    (tmp, (out, summary)) = cleaned
    dropped = {(r["dataset"], r["ordinal"]) for r in _rejects(out, "train")}
    kept = {}
    for ext in ("en", "zh"):
        lines = []
        for t in TRAIN:
            with open(t + "." + ext, "rb") as f:
                for number, line in enumerate(f, 1):
                    if (os.path.basename(t) + ".en", number) not in dropped:
                        lines.append(line)
        kept[ext] = tmp_path / ("kept." + ext)
        kept[ext].write_bytes(b"".join(lines))
    plain = run_datagen(tmp_path / "plain", kept["en"], kept["zh"], "--problem", "p",
                        "--vocab_size", "1000")
    for name in ("vocab.p.1000.subwords.en", "vocab.p.1000.subwords.zh"):
        assert (out / name).read_bytes() == (tmp_path / "plain" / name).read_bytes()
    assert plain["splits"]["train"]["pairs_written"] == \
        summary["splits"]["train"]["pairs_written"]


def test_same_output_on_worker_processes(cleaned, tmp_path):
    (tmp, (out, _)) = cleaned
    again, _ = _run(tmp_path, "mp", runner=DIRECT_MP2)
    assert output_bytes(again) == output_bytes(out)


def test_cleaning_off_changes_nothing(tmp_path):
    """--dedup none and no --filters: the very bytes of a run without the flags, and the
    same fingerprint (a rerun of an older output is still a no-op)."""
    src, tgt = TRAIN[0] + ".en", TRAIN[0] + ".zh"
    plain = run_datagen(tmp_path / "a", src, tgt, "--problem", "p", "--vocab_size", "1000")
    off = run_datagen(tmp_path / "b", src, tgt, "--problem", "p", "--vocab_size", "1000",
                      "--dedup", "none")
    assert output_bytes(tmp_path / "a") == output_bytes(tmp_path / "b")
    assert plain["fingerprint"]["flags"] == off["fingerprint"]["flags"]
    assert "dedup" not in plain["fingerprint"]["flags"] and "cleaning" not in plain


@pytest.mark.parametrize("text, names", [
    ("filters:\n  - LengthFiltr: {}\n", ["filters.yaml", "unknown filter LengthFiltr"]),
    ("filters:\n  - LengthFilter: {max_len: 3}\n", ["filters.yaml", "unknown parameter max_len"]),
])
def test_a_bad_filters_file_stops_the_job_before_it_starts(tmp_path, capsys, text, names):
    config = tmp_path / "filters.yaml"
    config.write_text(text)
    out = tmp_path / "out"
    one_line_error(capsys, ["--train_source", TRAIN[0] + ".en", "--train_target",
                            TRAIN[0] + ".zh", "--output_dir", out, "--filters", config,
                            "--runner", "FnApiRunner"], *names)
    assert not out.exists()
    assert_no_output(out)


def test_a_vocabulary_learnt_without_cleaning_is_not_reused(tmp_path):
    """The vocabulary's fingerprint holds the cleaning flags and the --filters file: one
    learnt from the uncleaned corpus is not taken for a cleaned run (an error naming the
    change, relearnt with --overwrite), and one learnt with the same cleaning is reused
    (each run after the first finds the vocab files of an output whose marker is gone)."""
    from pipeline.runtime.errors import DatagenError
    src, tgt = TRAIN[0] + ".en", TRAIN[0] + ".zh"
    common = ["--problem", "p", "--vocab_size", "1000"]
    cleaning = ["--filters", _config(tmp_path), "--dedup", "pairs"]
    out = tmp_path / "out"

    def run(*flags):
        for name in ("p.DATAGEN_COMPLETE", "p.datagen_summary.json"):
            if (out / name).exists():
                (out / name).unlink()
        return run_datagen(out, src, tgt, *common, *flags)

    assert not run()["vocab"]["source"]["reused"]
    with pytest.raises(DatagenError, match="--dedup none -> pairs.*--filters"):
        run(*cleaning)
    assert not run(*cleaning, "--overwrite")["vocab"]["source"]["reused"]
    assert run(*cleaning)["vocab"]["source"]["reused"]


def test_drop_dev_overlap_alone_drops_the_train_pairs_found_in_dev(tmp_path):
    """--drop_dev_overlap without --filters or --dedup still runs the cleaning pass: every
    train pair that also occurs in dev is dropped as dev_overlap, nothing else."""
    src, tgt = TRAIN[0] + ".en", TRAIN[0] + ".zh"
    with open(src, encoding="utf-8") as f, open(tgt, encoding="utf-8") as g:
        pairs = list(zip(f, g))[:40]
    dev_src, dev_tgt = tmp_path / "dev.en", tmp_path / "dev.zh"
    dev_src.write_text("".join(s for s, _ in pairs[10:15]), encoding="utf-8")
    dev_tgt.write_text("".join(t for _, t in pairs[10:15]), encoding="utf-8")
    in_dev = {pair for pair in pairs[10:15]}
    expected = sorted(n for n, pair in enumerate(pairs, 1) if pair in in_dev)
    train_src, train_tgt = tmp_path / "train.en", tmp_path / "train.zh"
    train_src.write_text("".join(s for s, _ in pairs), encoding="utf-8")
    train_tgt.write_text("".join(t for _, t in pairs), encoding="utf-8")
    out = tmp_path / "out"
    summary = run_datagen(out, str(train_src), str(train_tgt), "--dev_source", str(dev_src),
                          "--dev_target", str(dev_tgt), "--drop_dev_overlap", "--problem", "p",
                          "--vocab_size", "300")
    dropped = _rejects(out, "train")
    assert [r["ordinal"] for r in dropped] == expected
    assert {r["reason"] for r in dropped} == {"dev_overlap"}
    assert_books_balance(summary)
