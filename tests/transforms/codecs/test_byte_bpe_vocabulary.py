"""transforms/codecs/byte_bpe_vocabulary.py: the pad id and the EOS id of a byte_bpe
vocabulary (issue 50, item 2: a learnt vocabulary's EOS was id 0, the id the readers pad with
and T2T's `weights_nonzero` masks, so a model never learnt to stop; GPT-2's id 0 is `!`).

A learnt vocabulary keeps `<pad>` = 0 and its EOS 1, as T2T reserves `<pad>` = 0 and `<EOS>` =
1, and its files are still what Hugging Face `tokenizers`' trainer writes given the same
special tokens; GPT-2's own files pad with the first id past the vocabulary. tokenizer.json
says the same pad id, and its ids are still the records'.
"""

import collections
import json
import os
import tempfile

import pytest

from gpt2_files import GPT2_DIR, TRAIN_FILES, lines as gpt2_lines
from transforms.codecs.byte_bpe import ENDOFTEXT, pretokenize
from transforms.codecs.byte_bpe_vocabulary import PAD_TOKEN, ByteBpeVocabulary
from transforms.vocab.byte_bpe_learning import _learn_bpe

tokenizers = pytest.importorskip("tokenizers")

TAGS = ("<2de>", "<2vi>")


def _lines():
    return [line for line in gpt2_lines(TRAIN_FILES[0])[:400] if line.strip()]


def _learnt(reserved=()):
    """The job's learner on the lines' pre-token counts: ({file name: contents}, its
    ByteBpeVocabulary)."""
    counts = collections.Counter(piece for line in _lines() for piece in pretokenize(line))
    _, files = _learn_bpe((None, sorted(counts.items())), 500, 2, ENDOFTEXT, reserved)
    return files, ByteBpeVocabulary.from_files(files)


@pytest.mark.parametrize("reserved", [(), TAGS], ids=["plain", "tags"])
def test_a_learnt_vocabulary_pads_with_0_and_ends_in_1_as_tokenizers_trains_it(reserved):
    files, vocab = _learnt(reserved)
    assert vocab.pad_id() == 0 and vocab.eos_ids() == [1]
    assert vocab.token_id(PAD_TOKEN) == 0 and vocab.token_id(ENDOFTEXT) == 1
    assert [vocab.token_id(t) for t in reserved] == list(range(2, 2 + len(reserved)))
    ids = [vocab.encode(line.strip()) for line in _lines()]
    assert not any(0 in line or 1 in line for line in ids)  # no record holds pad or EOS
    assert 0 not in vocab.encode("<pad> stays text, <|endoftext|> too")
    # the files are what tokenizers' trainer writes given the same special tokens
    theirs = tokenizers.ByteLevelBPETokenizer()
    theirs.train_from_iterator(_lines(), vocab_size=500, min_frequency=2,
                               special_tokens=[PAD_TOKEN, ENDOFTEXT, *reserved],
                               show_progress=False)
    with tempfile.TemporaryDirectory() as d:
        theirs.save_model(d)
        for name in ("vocab.json", "merges.txt"):
            with open(os.path.join(d, name), encoding="utf-8", newline="") as f:
                assert files[name] == f.read(), name


def _tokenizer(files):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "tokenizer.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(files["tokenizer.json"])
        return tokenizers.Tokenizer.from_file(path)


def test_tokenizer_json_pads_with_the_vocabularys_pad_id_and_gives_the_records_ids():
    files, vocab = _learnt()
    tok = _tokenizer(files)
    assert tok.padding["pad_id"] == vocab.pad_id() == 0
    assert tok.padding["pad_token"] == PAD_TOKEN
    lines = [line.strip() for line in _lines()[:50]]
    assert [tok.encode(line).ids for line in lines] == [
        vocab.encode(line) + vocab.eos_ids() for line in lines]
    batch = tok.encode_batch(lines[:2] + ["a"])
    assert batch[2].ids[:2] == vocab.encode("a") + [1]
    assert set(batch[2].ids[2:]) == {0}


def test_gpt2s_own_files_pad_with_an_id_no_record_holds():
    with open(os.path.join(GPT2_DIR, "encoder.json"), encoding="utf-8") as f:
        encoder = f.read()
    with open(os.path.join(GPT2_DIR, "vocab.bpe"), encoding="utf-8") as f:
        merges = f.read()
    vocab = ByteBpeVocabulary.from_files({"encoder.json": encoder, "vocab.bpe": merges})
    assert json.loads(encoder)["!"] == 0
    assert vocab.eos_ids() == [50256]
    assert vocab.pad_id() == vocab.vocab_size == 50257  # past every id: no record holds it
    assert vocab.encode("Hi!") == [17250, 0]
    tok = _tokenizer(vocab.to_files())
    assert tok.padding["pad_id"] == 50257
    assert tok.encode("Hi!").ids == [17250, 0, 50256]
    assert tok.encode_batch(["Hi!", "Hi"])[1].ids == [17250, 50256, 50257]
