"""A language pair with nothing to write, end to end (issue 50, items 5 and 12).

A pair whose train files are empty is refused as a single pair's would be (exit 2, one line
naming the corpora file, the entry and the split, before any directory is made). A pair of
which --max_length rejects every pair, and --packed_length below every pair, are written but
said (a WARNING naming the pair), and the mixture says it leaves such a pair out; a mixture
whose every record the t2t batching drops raises instead of reading forever.
"""

import logging

import pytest

from many_pairs_corpora import corpora_of_texts
from pipeline import datagen
from pipeline.runtime.errors import DatagenError

pytestmark = pytest.mark.slow


def _corpora(directory, empty_vi=False):
    """en-de of short lines; en-vi of long lines (or empty files): a corpora file."""
    words = " ".join("w%d" % i for i in range(40))
    vi = "" if empty_vi else "".join("%s %d\n" % (words, i) for i in range(30))
    return corpora_of_texts(directory, {
        "de": ("".join("a b %d\n" % i for i in range(40)),
               "".join("x y %d\n" % i for i in range(40))),
        "vi": (vi, vi)})


FLAGS = ["--problem", "p", "--vocab_size", "300", "--runner", "FnApiRunner"]


def test_an_entry_with_empty_train_files_is_refused_before_any_directory(tmp_path):
    corpora = _corpora(str(tmp_path / "data"), empty_vi=True)
    out = tmp_path / "out"
    with pytest.raises(DatagenError) as e:
        datagen.run(["--corpora", corpora, "--output_dir", str(out)] + FLAGS)
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith("--corpora %s: corpora[1] (vi): train: no pairs to write "
                              "(every file is empty" % corpora)
    assert not out.exists()


def test_a_pair_all_rejected_or_over_the_packed_length_is_said(tmp_path, caplog):
    from pipeline.tools import batches, mixture
    corpora = _corpora(str(tmp_path / "data"))
    caplog.set_level(logging.WARNING, logger="datagen")
    out = tmp_path / "max_length"
    summary = datagen.run(["--corpora", corpora, "--output_dir", str(out), "--max_length",
                           "30"] + FLAGS)
    books = summary["splits"]["train"]["language_pairs"]
    assert books["en-vi"]["pairs_written"] == 0 and books["en-de"]["pairs_written"] == 40
    assert ("train: language pair en-vi: all 30 pairs read were rejected (over_max_length: "
            "30)") in caplog.text
    with pytest.warns(UserWarning, match="language pair en-vi has no records"):
        mixed = mixture.Mixture(str(out), temperature=5)
    assert mixed.pairs == ["en-de"]
    with pytest.raises(ValueError, match="language pair en-vi has no records"):
        mixture.Mixture(str(out), rates={"en-de": 1, "en-vi": 1})

    caplog.clear()
    out = tmp_path / "packed"
    datagen.run(["--corpora", corpora, "--output_dir", str(out), "--packed_length", "2",
                 "--output_format", "parquet"] + FLAGS)
    assert ("train: every one of its 70 pairs is longer than --packed_length 2") in caplog.text
    mixed = mixture.Mixture(str(out), temperature=5)
    with pytest.raises(ValueError, match="no record of the mixture .* max_length 2"):
        next(batches.parquet_batches(mixed, 4096, mode="t2t"))
