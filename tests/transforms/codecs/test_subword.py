"""Our SubwordEncoder (`transforms.codecs.subword`) against Tensor2Tensor 1.15.7's
SubwordTextEncoder: escaping, the vocab file format, encode/decode, and the
SubwordTextEncoder cases of T2T's text_encoder_test.py (rewritten for our modules; the
vocabularies they build come from our learner and are also compared with T2T's).
"""

import collections
import os
import random
import string

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import t2t_reference as t2t
from repo_paths import DATA_DIR
from subword_cases import HYPOTHESIS, REAL_VOCABS, VOCAB_DIR, broad_text, piece
from transforms.codecs import subword, subword_learner
from transforms.codecs import tokenizer as our_tokenizer
from transforms.codecs.subword import (
    EOS_ID, ESCAPE_CHARS, PAD_ID, RESERVED_TOKENS, SubwordEncoder, escape_token,
    parse_vocab_lines, unescape_token, vocab_file_text)


def read_text(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def t2t_from_text(text, tmp_path, name="vocab.subwords"):
    """A T2T SubwordTextEncoder loaded (with tf.gfile) from a file holding `text`."""
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return t2t.t2t_encoder_from_file(path)


def learn(token_counts, target_size, min_val=1, max_val=1000, **kwargs):
    return subword_learner.learn_vocab(dict(token_counts), target_size, min_val=min_val,
                                       max_val=max_val, **kwargs)


def t2t_learn(token_counts, target_size, min_val=1, max_val=1000, **kwargs):
    return t2t.SubwordTextEncoder.build_to_target_size(target_size, token_counts, min_val,
                                                       max_val, **kwargs)


# --- escaping (EscapeUnescapeTokenTest) -----------------------------------------------------


def test_escape_token():
    alphabet = set("abcdefghijklmnopqrstuvwxyz .\n") | ESCAPE_CHARS
    escaped = escape_token("Foo! Bar.\nunder_score back\\slash", alphabet)
    assert escaped == "\\70;oo\\33; \\66;ar.\\10;under\\uscore back\\\\slash_"


def test_unescape_token():
    assert unescape_token("\\70;oo\\33; \\66;ar.\\10;under\\uscore back\\\\slash_") == (
        "Foo! Bar.\nunder_score back\\slash")


@pytest.mark.parametrize("escaped", [
    "\\1114112;_",  # beyond the last code point: T2T's "undefined character" U+3013
    "\\99999999999999999999;_",
    "\\0;x_", "\\55296;_", "\\;_", "\\u\\u_", "a\\_", "\\", "_", "", "__", "\\\\u_", "x\\uy",
    "\\12", "\\12;", "no_underscore_at_end",
])
def test_unescape_token_edge_cases_equal_t2t(escaped):
    assert unescape_token(escaped) == t2t.text_encoder._unescape_token(escaped)


@HYPOTHESIS
@given(broad_text, st.frozensets(piece.filter(lambda p: len(p) == 1), max_size=30))
def test_escape_unescape_equal_t2t(token, extra_alphabet):
    alphabet = set(extra_alphabet) | set(ESCAPE_CHARS)
    escaped = escape_token(token, alphabet)
    assert escaped == t2t.text_encoder._escape_token(token, alphabet)
    assert escaped.endswith("_") and "_" not in escaped[:-1]
    assert unescape_token(escaped) == token
    assert t2t.text_encoder._unescape_token(escaped) == token


def test_escape_chars_equal_t2t():
    assert set(ESCAPE_CHARS) == t2t.text_encoder._ESCAPE_CHARS
    assert list(RESERVED_TOKENS) == t2t.text_encoder.RESERVED_TOKENS
    assert (PAD_ID, EOS_ID) == (t2t.text_encoder.PAD_ID, t2t.text_encoder.EOS_ID)


# --- SubwordTextEncoderTest -----------------------------------------------------------------


@pytest.mark.slow
def test_encode_decode():
    corpus = (
        "This is a corpus of text that provides a bunch of tokens from which "
        "to build a vocabulary. It will be used when strings are encoded "
        "with a TextEncoder subclass. The encoder was coded by a coder.")
    token_counts = collections.Counter(corpus.split(" "))
    alphabet = set(corpus) - {" "}
    original = "This is a coded sentence encoded by the SubwordTextEncoder."
    token_counts.update(original.split(" "))

    vocab = learn(token_counts, 100, 2, 10)
    assert vocab == list(t2t_learn(token_counts, 100, 2, 10).all_subtoken_strings)
    encoder = SubwordEncoder(vocab)

    encoded = encoder.encode(original)
    assert encoder.decode(encoded) == original
    subtoken_strings = {encoder.subtoken_strings[i] for i in encoded}
    assert "encoded_" in subtoken_strings
    assert "coded_" in subtoken_strings
    assert "TextEncoder" in encoder.subtoken_strings
    assert "coder" in encoder.subtoken_strings
    assert alphabet <= encoder.alphabet
    for char in alphabet:
        assert char in encoder.subtoken_strings


def test_unicode():
    corpus = "Cat emoticons. \U0001F638 \U0001F639 \U0001F63A \U0001F63B"
    token_counts = collections.Counter(corpus.split(" "))
    vocab = learn(token_counts, 100, 2, 10)
    assert vocab == list(t2t_learn(token_counts, 100, 2, 10).all_subtoken_strings)
    encoder = SubwordEncoder(vocab)
    assert "\U0001F638" in encoder.alphabet
    assert "\U0001F63B" in encoder.subtoken_strings


def test_small_vocab():
    corpus = "The quick brown fox jumps over the lazy dog"
    token_counts = collections.Counter(corpus.split(" "))
    alphabet = set(corpus) - {" "}
    vocab = learn(token_counts, 10, 2, 10)
    assert vocab == list(t2t_learn(token_counts, 10, 2, 10).all_subtoken_strings)
    encoder = SubwordEncoder(vocab)
    # Every character stays encodable even though the target is smaller than the alphabet.
    assert alphabet <= encoder.alphabet
    for char in alphabet:
        assert char in encoder.subtoken_strings


def test_long_tokens():
    """With max_subtoken_length set, learning copes with very long tokens."""
    rng = random.Random(0)
    long_tokens = ["".join(rng.choice(string.ascii_uppercase) for _ in range(4000))
                   for _ in range(50)]
    corpus = " ".join(long_tokens)
    token_counts = collections.Counter(corpus.split(" "))
    alphabet = set(corpus) - {" "}
    vocab = learn(token_counts, 600, 1, 500, num_iterations=1, max_subtoken_length=10)
    encoder = SubwordEncoder(vocab)
    assert alphabet <= encoder.alphabet
    for char in alphabet:
        assert char in encoder.subtoken_strings
    assert max(len(s) for s in vocab) <= 10
    assert encoder.decode(encoder.encode(corpus)) == corpus


@pytest.mark.slow
def test_long_tokens_equal_t2t():
    rng = random.Random(1)
    tokens = ["".join(rng.choice("ABCDEFGH") for _ in range(rng.randint(1, 1500)))
              for _ in range(40)]
    token_counts = collections.Counter(tokens + tokens[:10])
    for max_subtoken_length in (4, 10):
        ours = learn(token_counts, 300, 1, 50, num_iterations=2,
                     max_subtoken_length=max_subtoken_length)
        expected = t2t_learn(token_counts, 300, 1, 50, num_iterations=2,
                             max_subtoken_length=max_subtoken_length)
        assert ours == list(expected.all_subtoken_strings)


def test_custom_reserved_tokens():
    corpus = "The quick brown fox jumps over the lazy dog"
    token_counts = collections.Counter(corpus.split(" "))
    reserved = list(RESERVED_TOKENS) + ["<S>", "<E>"]
    vocab = learn(token_counts, 10, 2, 10, reserved_tokens=reserved)
    expected = t2t_learn(token_counts, 10, 2, 10, reserved_tokens=reserved)
    assert vocab == list(expected.all_subtoken_strings)
    encoder = SubwordEncoder(vocab)
    assert encoder.decode([2]) == "<S>"
    assert encoder.decode([3]) == "<E>"
    assert encoder.decode(encoder.encode(corpus)) == corpus


def test_encodable_when_not_in_alphabet():
    corpus = "the quick brown fox jumps over the lazy dog"
    token_counts = collections.Counter(corpus.split(" "))
    vocab = learn(token_counts, 100, 2, 10)
    encoder = SubwordEncoder(vocab)
    original = "This has UPPER CASE letters that are out of alphabet"
    encoded = encoder.encode(original)
    assert encoder.decode(encoded) == original
    assert "\\84;" in "".join(encoder.subtoken_strings[i] for i in encoded)
    t2t_encoder = t2t_learn(token_counts, 100, 2, 10)
    assert encoded == t2t_encoder.encode(original)


def test_raises_exception_when_not_encodable(monkeypatch):
    """Escape characters missing from the alphabet: an error, not an endless loop."""
    narrow = frozenset("\\_;13579")
    monkeypatch.setattr(subword, "ESCAPE_CHARS", narrow)
    monkeypatch.setattr(subword_learner, "ESCAPE_CHARS", narrow)
    corpus = "the quick brown fox jumps over the lazy dog"
    token_counts = collections.Counter(corpus.split(" "))
    encoder = SubwordEncoder(learn(token_counts, 100, 2, 10))
    assert "8" not in encoder.alphabet
    with pytest.raises(ValueError):
        encoder.encode("This has UPPER CASE letters that are out of alphabet")


def test_load_from_file():
    correct_vocab = ["the", "and", "of"]
    # Words not wrapped in quotes.
    assert parse_vocab_lines(["the\n", "and\n", "of\n"]) == correct_vocab
    assert SubwordEncoder.from_text("the\nand\nof\n").subtoken_strings == correct_vocab
    # Words wrapped in double quotes.
    assert SubwordEncoder.from_text('"the"\n"and"\n"of"\n').subtoken_strings == correct_vocab
    # Words wrapped in single quotes.
    assert SubwordEncoder.from_text("'the'\n'and'\n'of'\n").subtoken_strings == correct_vocab


def test_reserved_token_chars_not_in_alphabet(tmp_path):
    token_counts = collections.Counter("dog".split(" "))
    vocab = learn(token_counts, 100, 2, 100)
    t2t_encoder1 = t2t_learn(token_counts, 100, 2, 100)
    assert vocab == list(t2t_encoder1.all_subtoken_strings)
    encoder1 = SubwordEncoder(vocab)
    encoder2 = SubwordEncoder.from_text(vocab_file_text(vocab))
    t2t_encoder2 = t2t_from_text(vocab_file_text(vocab), tmp_path)
    assert encoder1.alphabet == encoder2.alphabet == t2t_encoder2._alphabet
    assert encoder1.alphabet == t2t_encoder1._alphabet
    for token in RESERVED_TOKENS:
        for char in token:
            assert encoder1.encode(char) == encoder2.encode(char) == t2t_encoder2.encode(char)


@pytest.mark.parametrize("add_single_quotes", [True, False])
def test_save_and_reload(add_single_quotes, tmp_path):
    corpus = "the quick brown fox jumps over the lazy dog"
    token_counts = collections.Counter(corpus.split(" "))
    t2t_encoder = t2t_learn(token_counts, 100, 2, 10)
    vocab = learn(token_counts, 100, 2, 10)
    assert vocab == list(t2t_encoder.all_subtoken_strings)
    encoder = SubwordEncoder(vocab)
    if add_single_quotes:
        text = encoder.to_text()
        assert text.encode("utf-8") == t2t.t2t_vocab_bytes(t2t_encoder)
    else:
        text = "".join(s + "\n" for s in vocab)
        assert text.encode("utf-8") == t2t.t2t_vocab_bytes(t2t_encoder, add_single_quotes=False)
    reloaded = SubwordEncoder.from_text(text)
    t2t_reloaded = t2t_from_text(text, tmp_path)
    assert reloaded.subtoken_strings == encoder.subtoken_strings
    assert reloaded.subtoken_strings == list(t2t_reloaded.all_subtoken_strings)
    assert reloaded.alphabet == encoder.alphabet == t2t_reloaded._alphabet
    assert reloaded.max_subtoken_length == t2t_reloaded._max_subtoken_len
    assert reloaded._ids == t2t_reloaded._subtoken_string_to_id


def test_build_from_generator():
    corpus = "The quick brown fox jumps over the lazy dog"
    reserved = list(RESERVED_TOKENS) + ["<S>", "<E>"]
    token_counts = collections.Counter()
    for line in [corpus] * 3:
        token_counts.update(our_tokenizer.encode(line))
    vocab = learn(token_counts, 10, reserved_tokens=reserved)
    expected = t2t.t2t_build_vocab_from_lines([corpus] * 3, 10, reserved_tokens=reserved)
    assert vocab == list(expected.all_subtoken_strings)
    encoder = SubwordEncoder(vocab)
    assert encoder.decode([2]) == "<S>"
    assert encoder.decode([3]) == "<E>"
    assert encoder.decode(encoder.encode("hi") + [2]) == "hi<S>"
    assert encoder.decode(encoder.encode(corpus)) == corpus


# --- the vocab file format ------------------------------------------------------------------


@pytest.mark.parametrize("lines", [
    ["'a'", "'b'"],
    ["a", "b", "c d"],
    ['"a"', "'b'", "c"],
    ["'", '"', "''", '""', "'a", "a'", "'a\"", "\"a'", "'''", "x"],
    ["  'x'  ", "'x'   ", "'y'\r", "'z'\t", " ", "", "\t"],
    ["'<pad>'", "'<EOS>'", "'<pad>_'", "'<EOS>_'"],
    ["'c\x85d'", "'e\u2028f'", "'g\x0bh'", "'i\x1cj'", "'k\x0cl'"],
    pytest.param(["'a\rb'", "'x\r'", "'\ry'", "'z'"], id="carriage-returns"),
    ["'it''s'", "'\\\\'", "'\\u_'", "'\\10;_'"],
])
def test_parse_vocab_lines_equals_t2t(lines, tmp_path):
    text = "".join(line + "\n" for line in lines)
    ours = SubwordEncoder.from_text(text)
    expected = t2t_from_text(text, tmp_path)
    # parse_vocab_lines takes lines as tf.gfile yields them: split at "\n", every "\r" dropped
    lines_read = text.replace("\r", "").split("\n")[:-1]
    assert parse_vocab_lines(lines_read) == list(expected.all_subtoken_strings)
    assert ours.subtoken_strings == list(expected.all_subtoken_strings)
    assert ours.alphabet == expected._alphabet


def test_vocab_file_text_equals_store_to_file():
    strings = ["<pad>_", "<EOS>_", "a_", "'", "\\\\", "中文_", " ", "\r", "\x85"]
    encoder = t2t.SubwordTextEncoder()
    encoder._init_subtokens_from_list(list(strings))
    assert vocab_file_text(strings).encode("utf-8") == t2t.t2t_vocab_bytes(encoder)


# --- the real T2T vocab files ---------------------------------------------------------------


@pytest.fixture(scope="module", params=REAL_VOCABS)
def real_vocab(request):
    path = os.path.join(VOCAB_DIR, request.param)
    return SubwordEncoder.from_file(path), t2t.t2t_encoder_from_file(path), path


def test_real_vocab_loads_like_t2t(real_vocab):
    ours, expected, path = real_vocab
    assert ours.subtoken_strings == list(expected.all_subtoken_strings)
    assert ours.vocab_size == expected.vocab_size > 8000
    assert ours.alphabet == expected._alphabet
    assert ours.max_subtoken_length == expected._max_subtoken_len
    assert ours._ids == expected._subtoken_string_to_id
    with open(path, "rb") as f:
        raw = f.read()
    assert ours.to_text().encode("utf-8") == raw == t2t.t2t_vocab_bytes(expected)
    assert SubwordEncoder.from_text(raw.decode("utf-8")).subtoken_strings == ours.subtoken_strings


@pytest.mark.slow
def test_real_vocab_encode_decode_corpus_lines(real_vocab, corpus_lines):
    """Every line of every test corpus, with every vocabulary (many characters unknown)."""
    ours, expected, _ = real_vocab
    assert len(corpus_lines) > 10000
    for line in corpus_lines:
        ids = ours.encode(line)
        assert ids == expected.encode(line), line
        decoded = ours.decode(ids)
        assert decoded == line
        assert decoded == expected.decode(ids)


def test_real_vocab_decode_list_and_odd_ids(real_vocab):
    ours, expected, _ = real_vocab
    n = ours.vocab_size
    for ids in ([], [0], [1], [0, 1], [n - 1, n, n + 7, -1, -5], list(range(60)),
                list(range(n - 40, n + 3)), [5, 0, 0, 1]):
        assert ours.decode(ids) == expected.decode(ids), ids
        assert ours.decode_list(ids) == expected.decode_list(ids), ids


@pytest.mark.parametrize("ids_from_text,tail", [
    ("Hello world", [1]),
    ("Hello world", [1, 0, 0]),
    ("Hello world", []),
    ("", [1, 0]),
])
def test_decode_strip_extraneous_trailing(real_vocab, ids_from_text, tail):
    ours, expected, _ = real_vocab
    ids = ours.encode(ids_from_text) + tail
    assert ours.decode(ids, strip_extraneous=True) == expected.decode(ids, strip_extraneous=True)
    assert ours.decode(ids, strip_extraneous=True) == ids_from_text


def test_decode_strip_extraneous_inner_ids_equal_t2t(real_vocab):
    ours, expected, _ = real_vocab
    ids = ours.encode("Hello") + [1] + ours.encode("world") + [0, 1, 0]
    assert ours.decode(ids, strip_extraneous=True) == expected.decode(ids, strip_extraneous=True)


@pytest.mark.slow
@HYPOTHESIS
@given(text=broad_text)
@example(text="a_b\\c;12;\\u 中文 \U0001F638 \t\n x")
@example(text="<pad>_<EOS>")
def test_real_vocab_encode_equals_t2t_on_any_text(real_vocab, text):
    ours, expected, _ = real_vocab
    ids = ours.encode(text)
    assert ids == expected.encode(text)
    assert ours.decode(ids) == text


@HYPOTHESIS
@given(ids=st.lists(st.integers(min_value=-3, max_value=8300), max_size=30))
def test_real_vocab_decode_any_ids_equals_t2t(real_vocab, ids):
    ours, expected, _ = real_vocab
    assert ours.decode(ids) == expected.decode(ids)


# --- a vocabulary learnt on a corpus: invertible on any text --------------------------------


@pytest.fixture(scope="module")
def learnt():
    lines = read_text(os.path.join(DATA_DIR, "envi-nmt-testdata",
                                   "iwslt15.tst2013.100.en")).split("\n")
    counts = collections.Counter()
    for line in lines:
        counts.update(our_tokenizer.encode(line.strip()))
    vocab = subword_learner.learn_vocab(dict(counts), 400, 200)
    return SubwordEncoder(vocab), t2t.t2t_build_vocab_from_lines(
        [line.strip() for line in lines], 400, 200)


def test_learnt_vocab_equals_t2t(learnt):
    ours, expected = learnt
    assert ours.subtoken_strings == list(expected.all_subtoken_strings)


@HYPOTHESIS
@given(text=broad_text)
@example(text="__init__ \\\\server\\share C:\\x;1;2 3;")
@example(text="\\95;_ \\u_ _u 0123456789;")
def test_learnt_vocab_roundtrip_any_text(learnt, text):
    ours, expected = learnt
    ids = ours.encode(text)
    assert ours.decode(ids) == text
    assert ids == expected.encode(text)
    assert all(0 <= i < ours.vocab_size for i in ids)
