"""The token index's text made from `TokenArrays` without a string per token
(`transforms.codecs.index_text`) against the reference, each token escaped on its own: the
same code points, lengths and counts, so the index built from either is the same array
for array, on real corpora and on arbitrary tokens (the escaped characters "\\", "_" and
newline among them, NUL, lone surrogates, characters beyond the BMP)."""

import glob
import os

import numpy as np
from hypothesis import given, settings, strategies as st

from repo_paths import DATA_DIR
from transforms.codecs import tokenizer
from transforms.codecs.index_text import escaped_tokens
from transforms.codecs.subword_index import TokenIndex
from transforms.codecs.token_arrays import TokenArrays
from transforms.codecs.token_count_kernel import TokenCounter


def arrays_of(counts):
    """`TokenArrays` of a {token: count} dict, in its order."""
    tokens = list(counts)
    ends = np.cumsum([len(t) for t in tokens], dtype=np.int64)
    return TokenArrays("".join(tokens), ends, np.array(list(counts.values()), np.int64))


def assert_same_text(arrays):
    points, lengths, counts = escaped_tokens(arrays)
    ref_points, ref_lengths, ref_counts = escaped_tokens(list(arrays.items()))
    assert points.dtype == ref_points.dtype and np.array_equal(points, ref_points)
    assert np.array_equal(lengths, ref_lengths)
    assert list(counts) == list(ref_counts)


def assert_same_index(arrays, max_len):
    got = TokenIndex.build(arrays, max_len)
    expected = TokenIndex.build(list(arrays.items()), max_len)
    assert got.chars == expected.chars
    for name in TokenIndex.ARRAYS:
        a, b = getattr(got, name), getattr(expected, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name


token = st.text(st.one_of(
    st.characters(codec=None, exclude_categories=()),
    st.sampled_from(["\\", "_", "\n", "\0", "u", "\ud800", "\U0001f600", "中"])),
    min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(token, st.integers(1, 2 ** 40), max_size=30))
def test_arbitrary_tokens_give_the_same_text_as_each_escaped(counts):
    arrays = arrays_of(counts)
    assert_same_text(arrays)
    if counts:
        assert_same_index(arrays, 5)


def test_no_tokens():
    assert_same_text(TokenArrays("", np.zeros(0, np.int64), np.zeros(0, np.int64)))
    assert_same_index(TokenArrays("", np.zeros(0, np.int64), np.zeros(0, np.int64)), 200)


def test_real_corpora_give_the_same_index():
    paths = sorted(glob.glob(os.path.join(DATA_DIR, "enzh-*", "*.zh"))
                   + glob.glob(os.path.join(DATA_DIR, "ende-*", "*.de")))
    assert paths
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f]
        counter = TokenCounter()
        counter.add(lines)
        arrays = counter.result()
        assert list(arrays.items()) == list(tokenizer.count_tokens(lines).items())
        assert_same_text(arrays)
        assert_same_index(arrays, 200)
