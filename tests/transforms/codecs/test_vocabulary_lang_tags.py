"""Language tags (`<2xx>`) as every vocabulary kind reserves them: one entry each, right after
the kind's specials, found by `Vocabulary.token_id`, never produced by `encode`; and the
encoder's prefix puts a tag's id before every input of a pair."""

import os
import tempfile
from typing import List

import pytest

from gpt2_files import TRAIN_FILES, lines as gpt2_lines
from transforms.pairs.chunk_reading import LinePair
from transforms.codecs.byte_bpe import ENDOFTEXT, pretokenize
from transforms.codecs.byte_bpe_learner import learn_byte_bpe
from transforms.codecs.byte_bpe_vocabulary import ByteBpeVocabulary
from transforms.codecs.subword import SubwordEncoder
from transforms.codecs.subword_vocabulary import SubwordVocabulary
from transforms.codecs.varints import encode_varints
from transforms.codecs.word import SPECIALS, WordVocab
from transforms.codecs.word_vocabulary import WordVocabulary
from transforms.formats.example_proto import Int64FeaturesWriter, PairExampleWriter
from transforms.pairs.pair_encoding import PairEncoder, PairTally

TAGS = ("<2de>", "<2eng_Latn>", "<2zh>")


def test_word_vocabulary_puts_tags_after_its_specials():
    vocab = WordVocab.from_counts({"a": 5, "<2de>": 100, "b": 3, "c": 1}, 7, TAGS)
    assert vocab.words == SPECIALS + TAGS + ("a",)
    words = WordVocabulary(vocab)
    assert [words.token_id(t) for t in TAGS] == [3, 4, 5]
    assert words.token_id("<2fr>") is None
    with pytest.raises(ValueError, match="at least 6"):
        WordVocab.from_counts({}, 5, TAGS)


def test_subword_tags_are_reserved_tokens_never_produced_by_encode():
    vocab = SubwordVocabulary(SubwordEncoder(
        ["<pad>_", "<EOS>_", "<2de>_", "<2eng\\uLatn>_", "<2zh>_", "<", ">", "2", "d", "e",
         "de_", "_", "\\", "u", ";", "0", "1", "3", "4", "5", "6", "7", "8", "9", " "]))
    assert [vocab.token_id(t) for t in TAGS] == [2, 3, 4]
    assert vocab.token_id("<2fr>") is None
    assert 2 not in vocab.encode("<2de> de")
    assert vocab.decode([2]) == "<2de>" and vocab.decode([3]) == "<2eng_Latn>"


def test_byte_bpe_tags_are_special_tokens_as_tokenizers_trains_them():
    tokenizers = pytest.importorskip("tokenizers")
    lines = gpt2_lines(TRAIN_FILES[0])[:300]
    counts = {}
    for line in lines:
        for piece in pretokenize(line):
            counts[piece] = counts.get(piece, 0) + 1
    ours = learn_byte_bpe(counts, 400, (ENDOFTEXT,) + TAGS)
    theirs = tokenizers.ByteLevelBPETokenizer()
    theirs.train_from_iterator(lines, vocab_size=400, min_frequency=2,
                               special_tokens=[ENDOFTEXT, *TAGS], show_progress=False)
    with tempfile.TemporaryDirectory() as d:
        theirs.save_model(d)
        with open(os.path.join(d, "vocab.json"), encoding="utf-8", newline="") as f:
            assert ours.vocab_json_text() == f.read()
    vocab = ByteBpeVocabulary(ours, ENDOFTEXT)
    assert vocab.eos_ids() == [0]
    assert [vocab.token_id(t) for t in TAGS] == [1, 2, 3]
    assert 1 not in vocab.encode("<2de> text")


def test_sentencepiece_tags_are_user_defined_symbols():
    from transforms.codecs import sentencepiece_model
    from transforms.codecs.sentencepiece_vocabulary import SentencePieceVocabulary
    lines = gpt2_lines(TRAIN_FILES[0])[:400]
    options = sentencepiece_model.trainer_options("unigram", 300, 1.0, extra={
        "user_defined_symbols": list(TAGS)})
    vocab = SentencePieceVocabulary.from_files({"sentencepiece.model": sentencepiece_model.train(
        lines, options)})
    ids = [vocab.token_id(t) for t in TAGS]
    assert ids == [3, 4, 5]  # after pad, eos, unk (t5's layout)
    assert vocab.token_id("<2fr>") is None
    assert ids[0] in vocab.encode("x <2de>")  # a symbol of its own, never split
    assert vocab.decode([ids[1]]) == "<2eng_Latn>"


def test_the_encoder_puts_a_tags_id_before_every_input_and_keeps_pairs_apart():
    words = WordVocabulary(WordVocab(list(SPECIALS) + ["<2de>", "<2zh>", "hello", "hallo"]))
    encoder = PairEncoder(words, words, PairExampleWriter("inputs", "targets"))
    parse = Int64FeaturesWriter().parse
    pairs: List[LinePair] = [(1, "hello", "hallo"), (2, "hello", "hello")]
    results = {}
    for tag in (3, 4, None, 3):  # the same lines under another tag: not the cached entries
        by_shard, tally = {}, PairTally()
        prefix = (encode_varints([tag]), 1) if tag else (b"", 0)
        encoder.encode(pairs, lambda n: n, 0, 1, by_shard, tally, prefix=prefix)
        records = [parse(record) for *_, record in by_shard[0]]
        results.setdefault(tag, []).append([r["inputs"] for r in records])
        assert [r["targets"] for r in records] == [[6], [5]]
        assert tally.lengths == [(len(r["inputs"]), 1) for r in records]
        assert tally.ids[0] == sum(len(r["inputs"]) for r in records)
    assert results == {3: [[[3, 5], [3, 5]]] * 2, 4: [[[4, 5], [4, 5]]], None: [[[5], [5]]]}
