"""The SentencePiece kind's parity on a corpus it was not developed on: the enzh-aichallenger
subtitles (tests/data/README.md). Same checks as tests/end_to_end/test_sentencepiece_datagen.py: models
byte-identical to SentencePiece's trainer on the job's sample with the options the models
record, ids equal to `SentencePieceProcessor.encode(line)` + EOS."""

import os

import pytest

import spm_parity
from datagen_helpers import run_datagen
from repo_paths import DATA_DIR

pytestmark = pytest.mark.slow

EN = os.path.join(DATA_DIR, "enzh-aichallenger", "train.en")
ZH = os.path.join(DATA_DIR, "enzh-aichallenger", "train.zh")


@pytest.mark.parametrize("model_type, shared, size", [
    ("unigram", False, 1900), ("bpe", False, 2500), ("unigram", True, 4000),
    ("bpe", True, 4000)])
def test_untuned_corpus_models_and_ids(tmp_path, model_type, shared, size):
    out = tmp_path / "out"
    run_datagen(out, EN, ZH, "--problem", "p", "--vocab_type", "sentencepiece",
                "--spm_model_type", model_type, "--vocab_size", size,
                *(["--shared_vocab"] if shared else []))
    models = spm_parity.check_output(out, "p", EN, ZH)
    assert sorted(models) == (["shared"] if shared else ["source", "target"])
