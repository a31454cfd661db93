"""`transforms.storage.vocab_files`: each kind's `Vocabulary` round trip through its files on
disk (contents in, contents out, encode, decode, EOS)."""

import os

import pytest

from repo_paths import DATA_DIR
from transforms.codecs.byte_bpe_vocabulary import BPE_FILES, HF_TOKENIZER_FILE, ByteBpeVocabulary
from transforms.codecs.subword_vocabulary import SubwordVocabulary
from transforms.codecs.kinds import codec_kind
from transforms.codecs.vocabulary import SINGLE_FILE, VocabularyLoader
from transforms.codecs.word_vocabulary import WordVocabulary
from transforms.storage.vocab_files import VocabularyFiles

DATA = DATA_DIR
SUBWORDS = os.path.join(DATA, "t2t_vocab", "vocab.translate_ende_wmt8k.8192.subwords")
GPT2 = os.path.join(DATA, "gpt2")
WORDS = os.path.join(DATA, "nmt_vocab", "vocab.en")
TEXT = "Hello world, the vocabulary kinds"


@pytest.mark.parametrize("vocabulary,path,eos", [
    (SubwordVocabulary, SUBWORDS, [1]), (ByteBpeVocabulary, GPT2, [50256]),
    (WordVocabulary, WORDS, [])])
def test_vocabulary_round_trips_through_its_files(tmp_path, vocabulary, path, eos):
    files = VocabularyFiles(VocabularyLoader(vocabulary))
    loaded = files.load(path)
    assert files.missing(path) is None
    ids = loaded.encode(TEXT)
    decoded = loaded.decode(ids)
    assert decoded == TEXT if eos else len(decoded.split()) == len(TEXT.split())
    assert loaded.eos_ids() == eos
    copy = str(tmp_path / "copy")
    assert not files.exists(copy)
    assert files.missing(copy) == vocabulary.missing_reason
    files.write(copy, loaded.to_files())
    assert files.exists(copy)
    again = files.load(copy, for_encoding=True)
    assert again.to_files() == loaded.to_files()
    assert again.vocab_size == loaded.vocab_size
    assert again.encode(TEXT) == ids
    # the encode pass's form: varints, id count, OOV words
    (data, count, oov), = again.encode_varints_many([TEXT])
    assert count == len(ids) and oov >= 0 and isinstance(data, bytes)


def test_byte_bpe_is_written_as_hugging_face_files_and_lacks_an_unknown_eos(tmp_path):
    kind = codec_kind("byte_bpe")
    bpe = VocabularyFiles(kind.loader({})).load(GPT2)  # read from GPT-2's names
    assert sorted(bpe.to_files()) == sorted(BPE_FILES + (HF_TOKENIZER_FILE,))
    # tokenizer.json is derived: written first, never read back, not needed to load
    copy = str(tmp_path / "copy")
    VocabularyFiles(kind.loader({})).write(copy, bpe.to_files())
    assert sorted(os.listdir(copy)) == sorted(BPE_FILES + (HF_TOKENIZER_FILE,))
    assert sorted(VocabularyFiles(kind.loader({})).read(copy)) == sorted(BPE_FILES)
    # the EOS token is an option the vocabulary is built with: --bpe_eos_token's value
    eos = VocabularyFiles(kind.loader({"bpe_eos_token": "!"})).load(GPT2)
    assert eos.eos_ids() == [0] and eos.encode("!") == [0]
    with pytest.raises(ValueError, match="no '<eos>' token"):
        VocabularyFiles(kind.loader({"bpe_eos_token": "<eos>"})).load(GPT2)


def test_word_vocabulary_notes_its_moved_specials():
    fixed = WordVocabulary.from_files({SINGLE_FILE: "</s>\n<unk>\n<s>\nhello\n"})
    assert fixed.load_note and fixed.to_files() == {SINGLE_FILE: "<unk>\n<s>\n</s>\nhello\n"}
    assert fixed.encode_with_oov("hello there") == ([3, 0], 1)
    assert WordVocabulary.from_files({SINGLE_FILE: "<unk>\n<s>\n</s>\n"}).load_note is None
