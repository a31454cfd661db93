"""SentencePieceVocabulary: a model's files through `transforms.storage.vocab_files` (the model kept as
bytes), a given `.model` file or a directory, ids and EOS as SentencePiece gives them."""

import os

import pytest
import sentencepiece

from repo_paths import DATA_DIR
from transforms.codecs.vocabulary import VocabularyLoader
from transforms.storage.vocab_files import VocabularyFiles
from transforms.codecs.sentencepiece_vocabulary import (MODEL_FILE, VOCAB_FILE,
                                                        SentencePieceVocabulary)

TEXT = "Hello world, the vocabulary kinds"
SPM_FILES = VocabularyFiles(VocabularyLoader(SentencePieceVocabulary))


@pytest.fixture(scope="module")
def team_model(tmp_path_factory):
    """A model trained outside the job, as spm_train writes it (`.model` and `.vocab`)."""
    prefix = str(tmp_path_factory.mktemp("spm") / "team")
    sentencepiece.SentencePieceTrainer.train(
        input=os.path.join(DATA_DIR, "ende-opennmt", "train.en"), model_prefix=prefix,
        vocab_size=500, model_type="bpe", minloglevel=2)
    return prefix


def test_a_given_model_file_round_trips_through_a_vocab_directory(tmp_path, team_model):
    given = team_model + ".model"
    assert SPM_FILES.missing(given) is None
    loaded = SPM_FILES.load(given)
    processor = sentencepiece.SentencePieceProcessor(model_file=given)
    ids = loaded.encode(TEXT)
    assert ids == processor.encode(TEXT) and loaded.decode(ids) == TEXT
    assert loaded.eos_ids() == [2]  # SentencePiece's own default layout: unk 0, bos 1, eos 2
    assert loaded.vocab_size == 500
    copy = str(tmp_path / "vocab.p.500.spm")
    assert SPM_FILES.missing(copy) == (
        SentencePieceVocabulary.missing_reason)
    SPM_FILES.write(copy, loaded.to_files())
    assert SPM_FILES.exists(copy)
    assert sorted(os.listdir(copy)) == [MODEL_FILE, VOCAB_FILE]
    with open(given, "rb") as f, open(os.path.join(copy, MODEL_FILE), "rb") as g:
        assert f.read() == g.read()
    with open(team_model + ".vocab", encoding="utf-8") as f, \
            open(os.path.join(copy, VOCAB_FILE), encoding="utf-8") as g:
        assert f.read() == g.read()  # spm_train's own .vocab
    again = SPM_FILES.load(copy, for_encoding=True)
    (data, count, oov), = again.encode_varints_many([TEXT])
    assert count == len(ids) and oov == 0 and isinstance(data, bytes)


def test_not_a_model_and_ids_outside(tmp_path, team_model):
    bad = tmp_path / "bad.model"
    bad.write_bytes(b"not a model")
    with pytest.raises(ValueError, match="not a SentencePiece model"):
        SPM_FILES.load(str(bad))
    loaded = SPM_FILES.load(team_model + ".model")
    with pytest.raises(ValueError, match="outside"):
        loaded.decode([500])
