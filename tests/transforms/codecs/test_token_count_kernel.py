"""The compiled token counter (`transforms.codecs.token_count_kernel`) against the reference,
T2T's tokenizer as a regular expression (`tokenizer.count_tokens` / `tokenizer.encode`): the
same counts, in the same order of first occurrence, on real corpora and on arbitrary text
(any code point, lone surrogates, unassigned ones, combining marks, digits of other scripts),
weighted by line multiplicities, across batches and table growth, and when parts are added."""

import collections
import glob
import os
import pickle

import pytest
from hypothesis import given, settings, strategies as st

from repo_paths import DATA_DIR, SAMPLE_DATA
from transforms.codecs import token_count_kernel, tokenizer
from transforms.codecs.token_count_kernel import (TokenCounter, count_weighted,
                                                  merge_token_arrays)
from transforms.vocab.token_counts import count_counted_lines

CORPORA = sorted(path for path in glob.glob(os.path.join(DATA_DIR, "*", "*"))
                 + glob.glob(os.path.join(SAMPLE_DATA, "*", "*"))
                 + glob.glob(os.path.join(SAMPLE_DATA, "*", "*", "*"))
                 if os.path.isfile(path) and path.rsplit(".", 1)[-1] in ("en", "zh", "de", "vi"))


def reference(lines, times=None):
    """Counter of `tokenizer.encode`'s tokens of each line, `times[i]` times."""
    counts = collections.Counter()
    for i, line in enumerate(lines):
        for token in tokenizer.encode(line):
            counts[token] += 1 if times is None else times[i]
    return +counts


def kernel_counts(lines, times=None):
    counter = TokenCounter()
    counter.add(lines, times)
    return counter.result()


def test_real_corpora_count_as_the_regex_in_the_same_order():
    assert len(CORPORA) >= 10
    for path in CORPORA:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f]
        expected = tokenizer.count_tokens(lines)
        got = kernel_counts(lines)
        assert list(got.items()) == list(expected.items()), path


script_digits = st.characters(categories=["Nd"]).filter(lambda c: not c.isascii())
combining = st.characters(categories=["Mn", "Mc", "Me"])
any_char = st.characters(codec=None, exclude_categories=(), exclude_characters="\n")
line = st.lists(st.one_of(any_char, script_digits, combining,
                          st.sampled_from([" ", "  ", "a", "中", "1", "\ud800", "\udfff",
                                           "\U0001f600", "\u0378", "\U000e01ef"])),
                max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(line, max_size=20),
       times=st.lists(st.integers(min_value=0, max_value=5), min_size=20, max_size=20))
def test_any_text_counts_as_encode_each_line_times_its_count(lines, times):
    """Lines as they come (a first or last single space is a token, as in `encode`), and as
    the sample has them (stripped: `count_tokens`)."""
    times = times[:len(lines)]
    assert kernel_counts(lines, times).as_dict() == reference(lines, times)
    stripped = [text.strip() for text in lines]
    assert kernel_counts(stripped).as_dict() == dict(tokenizer.count_tokens(stripped))


@settings(max_examples=100, deadline=None)
@given(parts=st.lists(st.lists(line, max_size=8), max_size=5))
def test_parts_add_up_as_counters_and_pickle(parts):
    arrays = [pickle.loads(pickle.dumps(kernel_counts(lines))) for lines in parts]
    total = merge_token_arrays(arrays)
    assert total.as_dict() == reference([text for lines in parts for text in lines])
    assert len(total) == len(total.as_dict()) == len(set(total.tokens()))


@pytest.mark.parametrize("batch_chars", [1, 7, 1 << 22])
def test_count_weighted_equals_the_python_path(monkeypatch, batch_chars):
    """Lines, characters and counts of (line, times) pairs, as `count_counted_lines` with
    the regex gives them, in batches of any size (the table and pool grow from their
    initial size on the way: more tokens than `_INITIAL_TOKENS`)."""
    monkeypatch.setattr(token_count_kernel, "BATCH_CHARS", batch_chars)
    with open(os.path.join(SAMPLE_DATA, "enzh-mlqe-pe", "train.en"), encoding="utf-8") as f:
        lines = [text.strip() for text in f][:3000]
    pairs = [(text, i % 4) for i, text in enumerate(lines)]
    counts, n_lines, chars = count_weighted(iter(pairs))
    ref_counts, ref_lines, ref_chars = count_counted_lines(pairs, tokenizer.count_tokens)
    assert len(counts) > TokenCounter._INITIAL_TOKENS
    assert (counts.as_dict(), n_lines, chars) == (dict(ref_counts), ref_lines, ref_chars)


def test_empty():
    counts, n_lines, chars = count_weighted(iter([("", 3), ("a b", 0)]))
    assert (len(counts), counts.as_dict(), n_lines, chars) == (0, {}, 3, 0)
    assert merge_token_arrays([]).as_dict() == {}
