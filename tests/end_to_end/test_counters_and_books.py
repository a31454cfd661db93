"""The job's Beam counters agree with its books when a TSV, TMX or SGM input has units
rejected while it is converted (before the encode pass): no "the counters say ..., the
books ..." warning, and the summary's `train.pairs_read` counter is the books' figure."""

import json
import os

import pytest

from datagen_helpers import DATA_DIR, FNAPI
from pipeline import datagen

pytestmark = pytest.mark.slow

FORMATS = os.path.join(DATA_DIR, "formats")


def _tsv(tmp_path):
    path = tmp_path / "rows.tsv"
    with open(os.path.join(FORMATS, "cmn.head3000.txt"), "rb") as f:
        rows = f.read().splitlines(keepends=True)[:300]
    path.write_bytes(b"".join(rows) + b"a row with one column\n\tempty source\n")
    return ["--train_tsv", str(path), "--source_lang", "en", "--target_lang", "zh",
            "--on_misaligned", "reject"]


def _tmx(tmp_path):
    return ["--train_tmx", os.path.join(FORMATS, "en-es.head800.tmx"), "--source_lang", "en",
            "--target_lang", "es"]


def _sgm(tmp_path):
    with open(os.path.join(FORMATS, "valid.en-zh.head3000.zh.sgm"), encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    missing = tmp_path / "missing.zh.sgm"
    missing.write_text("".join(l for l in lines if not l.startswith('<seg id="7">')),
                       encoding="utf-8")
    return ["--train_source", os.path.join(FORMATS, "valid.en-zh.head3000.en.sgm"),
            "--train_target", str(missing), "--on_misaligned", "reject"]


@pytest.mark.parametrize("inputs", [_tsv, _tmx, _sgm], ids=["tsv", "tmx", "sgm"])
def test_conversion_rejects_are_counted(tmp_path, capsys, inputs):
    out = tmp_path / "out"
    argv = ["--output_dir", str(out), "--problem", "p", "--vocab_size", 300,
            "--num_train_shards", 1] + inputs(tmp_path) + FNAPI
    assert datagen.main([str(a) for a in argv]) == 0
    err = capsys.readouterr().err
    with open(out / "p.datagen_summary.json") as f:
        summary = json.load(f)
    books = summary["splits"]["train"]
    assert books["pairs_rejected"] > 0, books
    assert "the counters say" not in err, err
    assert summary["metrics"]["train.pairs_read"] == books["pairs_read"]
    assert summary["metrics"]["train.records_written"] == books["pairs_written"]
