"""Our invertible tokenizer (`transforms.codecs.tokenizer`) against Tensor2Tensor 1.15.7's.

Covers T2T's own tokenizer_test.py cases (rewritten for our module), exact equality with
`tensor2tensor.data_generators.tokenizer.encode`/`decode` on every line of the test corpora
and on generated text, and invertibility.
"""

import collections
import glob
import os
import random
import sys

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from repo_paths import DATA_DIR
import t2t_reference as t2t
from transforms.codecs import tokenizer

CORPUS_DIRS = ("enzh-mlqe-pe", "ende-opennmt", "envi-nmt-testdata")
CORPUS_FILES = sorted(
    os.path.relpath(path, DATA_DIR)
    for corpus in CORPUS_DIRS for path in glob.glob(os.path.join(DATA_DIR, corpus, "*")))
# T2T's tokenizer test data (data_generators/test_data/corpus-*.txt), renamed on copy.
T2T_TESTDATA_CORPUS = os.path.join(DATA_DIR, "t2t_vocab", "t2t_testdata_corpus-*.txt")

# Pieces worth drawing often: separators, line breaks, escapes, digits, CJK, combining
# marks, emoji (astral plane, ZWJ sequences, variation selectors), surrogates, the last code
# points.
SPECIAL_CHARS = (
    " ", "  ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\xa0", "\u2028",
    "\u2029", "\u3000", "\u200b", "\ufeff", "_", "\\", ";", "'", "-", ".", "0", "7", "²", "½",
    "Ⅻ", "٣", "中", "文", "。", "，", "〓", "ー", "가", "ñ", "e\u0301", "\u0301", "ß", "İ", "ǅ",
    "\U0001F638", "\U0001F469\u200d\U0001F4BB", "\u2764\ufe0f", "\U0001F1E9\U0001F1EA",
    "\U00020000", "\ud800", "\udfff", "\U0010FFFE", "\U0010FFFF", "\x00",
)

# One code point of any category (surrogates, unassigned and private-use included), or one of
# the special pieces above.
piece = st.one_of(st.characters(codec=None, exclude_categories=()),
                  st.sampled_from(SPECIAL_CHARS))
broad_text = st.lists(piece, max_size=50).map("".join)

HYPOTHESIS = settings(max_examples=400, deadline=None,
                      suppress_health_check=[HealthCheck.too_slow])


def read_lines(path):
    """A file's lines as T2T reads them (split on "\\n" only), without the "\\n"."""
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    return text.split("\n")


# --- T2T's tokenizer_test.py, TokenizerTest ------------------------------------------------


@pytest.mark.parametrize("text,tokens", [
    ("Dude - that's so cool.", ["Dude", " - ", "that", "'", "s", "so", "cool", "."]),
    ("Łukasz est né en 1981.", ["Łukasz", "est", "né", "en", "1981", "."]),
    (" Spaces at the ends ", [" ", "Spaces", "at", "the", "ends", " "]),
    ("802.11b", ["802", ".", "11b"]),
    ("two. \nlines", ["two", ". \n", "lines"]),
])
def test_encode(text, tokens):
    assert tokenizer.encode(text) == tokens
    assert tokenizer.decode(tokens) == text


def test_decode():
    assert tokenizer.decode(["Dude", " - ", "that", "'", "s", "so", "cool", "."]) == (
        "Dude - that's so cool.")


def test_invertibility_on_random_bmp_strings():
    rng = random.Random(1234)
    for _ in range(1000):
        s = "".join(chr(rng.randint(0, 65535)) for _ in range(10))
        assert tokenizer.decode(tokenizer.encode(s)) == s
        assert tokenizer.encode(s) == t2t.tokenizer.encode(s)


# --- more edge cases ------------------------------------------------------------------------


@pytest.mark.parametrize("text,tokens", [
    ("", []),
    (" ", [" "]),
    ("  ", ["  "]),
    ("a", ["a"]),
    ("a b", ["a", "b"]),
    ("a  b", ["a", "  ", "b"]),
    (" a", [" ", "a"]),
    ("a ", ["a", " "]),
    (" a ", [" ", "a", " "]),
    ("a b ", ["a", "b", " "]),
    (" . ", [" . "]),
    ("a . b", ["a", " . ", "b"]),
    ("a\tb", ["a", "\t", "b"]),
    ("a_b", ["a", "_", "b"]),
    ("中文，测试。", ["中文", "，", "测试", "。"]),
    ("x² ½", ["x²", "½"]),
    ("e\u0301", ["e", "\u0301"]),  # a combining mark (Mn) is not alphanumeric
    ("\U0001F638\U0001F638 ok", ["\U0001F638\U0001F638 ", "ok"]),
    ("a\u3000b", ["a", "\u3000", "b"]),
])
def test_encode_edge_cases(text, tokens):
    assert tokenizer.encode(text) == tokens
    assert t2t.tokenizer.encode(text) == tokens
    assert tokenizer.decode(tokens) == text


@pytest.mark.slow
def test_alphanumeric_set_is_t2t_set():
    """Every code point is classified as T2T classifies it (its set is built the same way)."""
    ours = {chr(cp) for cp in range(sys.maxunicode + 1) if tokenizer.is_alnum_char(chr(cp))}
    assert ours == t2t.tokenizer._ALPHANUMERIC_CHAR_SET
    assert not tokenizer.is_alnum_char(chr(sys.maxunicode))


# --- T2T's tokenizer_test.py, TestTokenCounts (corpus_token_counts), with our tokenizer -----


def our_corpus_token_counts(filepattern, corpus_max_lines, split_on_newlines=True):
    """`tokenizer.corpus_token_counts` over our `encode` (T2T's file reading semantics)."""
    counts = collections.Counter()
    lines_read = 0
    for path in sorted(glob.glob(filepattern)):
        with open(path, encoding="utf-8", newline="") as f:
            lines = f.read().split("\n")
        lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
        if split_on_newlines:
            for line in lines:
                counts.update(tokenizer.encode(line.strip()))
                lines_read += 1
                if corpus_max_lines and lines_read >= corpus_max_lines:
                    return counts
        elif corpus_max_lines:
            doc = []
            for line in lines:
                doc.append(line)
                lines_read += 1
                if lines_read >= corpus_max_lines:
                    counts.update(tokenizer.encode("".join(doc)))
                    return counts
            counts.update(tokenizer.encode("".join(doc)))
        else:
            counts.update(tokenizer.encode("".join(lines)))
    return counts


def assert_contains(counts, expected):
    assert {k: counts.get(k) for k in expected} == expected


@pytest.mark.parametrize("max_lines,split", [(0, True), (0, False), (5, True), (5, False),
                                             (3, True), (3, False)])
def test_corpus_token_counts_equal_t2t(max_lines, split):
    ours = our_corpus_token_counts(T2T_TESTDATA_CORPUS, max_lines, split)
    expected = t2t.tokenizer.corpus_token_counts(T2T_TESTDATA_CORPUS, max_lines, split)
    assert dict(ours) == dict(expected)


def test_corpus_token_counts_split_on_newlines():
    counts = our_corpus_token_counts(T2T_TESTDATA_CORPUS, 0, split_on_newlines=True)
    assert_contains(counts, {
        "'": 2, ".": 2, ". ": 1, "... ": 1, "Groucho": 1, "Marx": 1, "Mitch": 1,
        "Hedberg": 1, "I": 3, "in": 2, "my": 2, "pajamas": 2,
    })
    assert ".\n\n" not in counts
    assert "\n" not in counts


def test_corpus_token_counts_no_split_on_newlines():
    counts = our_corpus_token_counts(T2T_TESTDATA_CORPUS, 0, split_on_newlines=False)
    assert_contains(counts, {".\n\n": 2, "\n": 3})


def test_corpus_token_counts_split_with_max_lines():
    counts = our_corpus_token_counts(T2T_TESTDATA_CORPUS, 5, split_on_newlines=True)
    assert "slept" in counts
    assert "Mitch" not in counts


def test_corpus_token_counts_no_split_with_max_lines():
    counts = our_corpus_token_counts(T2T_TESTDATA_CORPUS, 5, split_on_newlines=False)
    assert "slept" in counts
    assert "Mitch" not in counts
    assert_contains(counts, {".\n\n": 1, "\n": 2, ".\n": 1})


# --- every line of the real corpora ---------------------------------------------------------


@pytest.mark.parametrize("relpath", CORPUS_FILES)
def test_encode_equals_t2t_on_corpus_lines(relpath):
    path = os.path.join(DATA_DIR, relpath)
    lines = read_lines(path)
    assert len(lines) > 1
    for line in lines:
        for text in (line, line.strip()):
            tokens = tokenizer.encode(text)
            assert tokens == t2t.tokenizer.encode(text), text
            assert tokenizer.decode(tokens) == text
    # The whole file as one document (newlines inside tokens).
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    tokens = tokenizer.encode(text)
    assert tokens == t2t.tokenizer.encode(text)
    assert tokenizer.decode(tokens) == text


# --- properties on generated text -----------------------------------------------------------


@pytest.mark.slow
@HYPOTHESIS
@given(broad_text)
@example(" ")
@example("a _ b\\c;1")
@example("\U0010FFFF\U0010FFFE x")
def test_decode_encode_roundtrip(text):
    assert tokenizer.decode(tokenizer.encode(text)) == text


@pytest.mark.slow
@HYPOTHESIS
@given(broad_text)
@example("  a  b ")
@example("\ud800a\udfff")
def test_encode_equals_t2t(text):
    assert tokenizer.encode(text) == t2t.tokenizer.encode(text)


@pytest.mark.slow
@HYPOTHESIS
@given(st.lists(st.lists(piece, min_size=1, max_size=8).map("".join), max_size=12))
def test_decode_equals_t2t_on_any_token_list(tokens):
    assert tokenizer.decode(tokens) == t2t.tokenizer.decode(tokens)


def test_stored_alnum_table_is_what_unicodedata_says(monkeypatch, tmp_path):
    """The stored table is used only for its own Unicode version, and then equals a fresh
    computation; for another version (or no file) the ranges are computed."""
    import json
    import unicodedata
    with open(tokenizer._TABLE_PATH, encoding="utf-8") as f:
        table = json.load(f)
    computed = tokenizer.compute_alnum_ranges()
    if table["unidata_version"] == unicodedata.unidata_version:
        assert tuple(tuple(r) for r in table["ranges"]) == computed
    stale = tmp_path / "alnum_ranges.json"
    stale.write_text(json.dumps({"unidata_version": "0.0", "ranges": [[65, 65]]}))
    monkeypatch.setattr(tokenizer, "_TABLE_PATH", str(stale))
    tokenizer._alnum_ranges.cache_clear()
    try:
        assert tokenizer._alnum_ranges() == computed
    finally:
        tokenizer._alnum_ranges.cache_clear()


_line_chars = st.sampled_from(list("ab Z9 \t\r\u3000\u00a0.,!-") + ["中", "文", "é", "\U0001F600",
                                                                    "\U00020000", "\x1c", "\u2028"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(_line_chars, max_size=30), max_size=8))
def test_count_tokens_of_stripped_lines_is_encode_line_by_line(lines):
    """The vocabulary sample's one-pass counting (lines joined, one regex) counts exactly
    what `encode` yields line by line, for stripped lines: spaces, tabs, \\r, characters
    above the BMP, and whitespace that `str.strip` removes but the tokenizer does not split on."""
    stripped = [line.strip() for line in lines]
    expected = collections.Counter()
    for line in stripped:
        expected.update(tokenizer.encode(line))
    assert tokenizer.count_tokens(stripped) == expected


def test_count_tokens_on_real_lines():
    path = os.path.join(DATA_DIR, "enzh-mlqe-pe", "train.zh")
    with open(path, encoding="utf-8") as f:
        lines = [line.strip() for _, line in zip(range(2000), f)]
    expected = collections.Counter()
    for line in lines:
        expected.update(tokenizer.encode(line))
    assert tokenizer.count_tokens(lines) == expected
