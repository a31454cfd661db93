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
from transforms.pairs.pair_encoding import BlockPlan, PairEncoder

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


def test_sentencepiece_tags_are_control_symbols_never_matched_in_text():
    """Issue 50, item 7: as user-defined symbols (before), a `<2de>` inside a sentence
    became the tag's id; a control symbol is an entry of its own that text never gives."""
    from transforms.codecs import sentencepiece_model
    from transforms.codecs.sentencepiece_vocabulary import SentencePieceVocabulary
    from pipeline.driver.options import default_config
    from transforms.vocab.sentencepiece_learning import trainer_options
    lines = gpt2_lines(TRAIN_FILES[0])[:400]
    config = default_config(vocab_type="sentencepiece", vocab_size=300,
                            spm_trainer_options="user_defined_symbols=<x>,<2de>")
    options = trainer_options(config.vocab, TAGS)
    assert options["control_symbols"] == list(TAGS)
    assert options["user_defined_symbols"] == ["<x>"]
    vocab = SentencePieceVocabulary.from_files({"sentencepiece.model": sentencepiece_model.train(
        lines, options)})
    ids = [vocab.token_id(t) for t in TAGS]
    assert ids == [3, 4, 5]  # after pad, eos, unk (t5's layout)
    assert vocab.token_id("<2fr>") is None
    for text in ("x <2de>", "<2de>", "a<2zh>b <2eng_Latn>"):
        assert not set(ids) & set(vocab.encode(text)), text
    assert vocab.reserving(ids) is vocab


def test_a_word_tag_in_the_text_is_text_not_the_tag():
    """Issue 50, item 7: a text token equal to a tag encoded as the tag's id; with the tags
    reserved it encodes as it would without that entry (unknown, counted OOV)."""
    vocab = WordVocabulary(WordVocab.from_counts({"a": 5, "<2de>": 100, "b": 3}, 8, TAGS))
    tag = vocab.token_id("<2de>")
    assert vocab.encode("a <2de> b") == [6, tag, 7]  # the vocabulary alone: an entry
    reserved = vocab.reserving([vocab.token_id(t) for t in TAGS])
    assert reserved.encode("a <2de> b") == [6, 0, 7]
    assert reserved.encode_with_oov("a <2de> <2zh>") == ([6, 0, 0], 2)
    assert reserved.token_id("<2de>") == tag and reserved.decode([tag]) == "<2de>"
    assert reserved.encode_varints_many(["<2de>"]) == [(encode_varints([0]), 1, 1)]


def test_the_encoder_puts_a_tags_id_before_every_input_and_keeps_pairs_apart():
    words = WordVocabulary(WordVocab(list(SPECIALS) + ["<2de>", "<2zh>", "hello", "hallo"]))
    encoder = PairEncoder(words, words, PairExampleWriter("inputs", "targets"))
    parse = Int64FeaturesWriter().parse
    pairs: List[LinePair] = [(1, "hello", "hallo"), (2, "hello", "hello")]
    results = {}
    for tag in (3, 4, None, 3):  # the same lines under another tag: not the cached entries
        prefix = (encode_varints([tag]), 1) if tag else (b"", 0)
        by_shard, tally, _, _ = encoder.encode(pairs, BlockPlan(lambda n: n, 0, 1, prefix=prefix))
        records = [parse(record) for *_, record in by_shard[0]]
        results.setdefault(tag, []).append([r["inputs"] for r in records])
        assert [r["targets"] for r in records] == [[6], [5]]
        assert tally.lengths == [(len(r["inputs"]), 1) for r in records]
        assert tally.ids[0] == sum(len(r["inputs"]) for r in records)
    assert results == {3: [[[3, 5], [3, 5]]] * 2, 4: [[[4, 5], [4, 5]]], None: [[[5], [5]]]}
