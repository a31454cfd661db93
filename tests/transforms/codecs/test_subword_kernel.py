"""KernelSubwordEncoder.encode_entries_many (a block's lines split, looked up, segmented and
framed in one compiled call) gives exactly the Python path's entries: the plain
SubwordEncoder's varints between a head and EOS, framed by `PairExampleWriter.
entry_from_varints`. On real vocabularies and corpora, on any text (hypothesis: all of
Unicode, astral planes, combining marks, other scripts' digits, `_` and `\\`), with a token
table and output buffer that must grow and a cache that empties, and with tokens over the
length limit (left to the Python path, as are tokens a vocabulary cannot segment)."""

import functools
import os

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from repo_paths import SAMPLE_DATA
from subword_cases import HYPOTHESIS, REAL_VOCABS, VOCAB_DIR, broad_text, piece
from transforms.codecs import subword_batch, tokenizer
from transforms.codecs.subword import SubwordEncoder
from transforms.codecs.subword_kernel import KernelSubwordEncoder, alnum_table
from transforms.codecs.varints import count_varints
from transforms.formats.example_proto import PairExampleWriter

WRITER = PairExampleWriter("inputs", "targets")
HEADS = ((b"", b"\x01"), (b"\x85\x40", b"\x01"), (b"", b""))  # (head, eos) varints


def python_path(plain, texts, side=0, head=b"", eos=b"\x01"):
    """What the encode pass wrote before the kernel: each line's entry and its id count."""
    out = []
    for text in texts:
        packed = plain.encode_varints(text)
        out.append((WRITER.entry_from_varints(side, head + packed + eos), count_varints(packed)))
    return out


def entries_of(kernel, texts, side=0, head=b"", eos=b"\x01"):
    """(entry, id count) of each line from the kernel, None for a line it leaves to the
    Python path."""
    entries, counts = kernel.encode_entries_many(texts, WRITER.entry_frame(side), head, eos)
    assert len(entries) == len(counts) == len(texts)
    return [None if entry is None else (entry, count) for entry, count in zip(entries, counts)]


def kernel_path(kernel, texts, block, side=0, head=b"", eos=b"\x01"):
    """`entries_of` in blocks of `block` lines."""
    out = []
    for i in range(0, len(texts), block):
        out.extend(entries_of(kernel, texts[i:i + block], side, head, eos))
    return out


@pytest.fixture(scope="module", params=REAL_VOCABS)
def vocab_path(request):
    return os.path.join(VOCAB_DIR, request.param)


def test_the_alphanumeric_table_is_the_tokenizers():
    table = alnum_table()
    for lo, hi in tokenizer.alnum_ranges():
        assert table[lo:hi + 1].all()
    assert int(table.sum()) == sum(hi - lo + 1 for lo, hi in tokenizer.alnum_ranges())
    for char in "a5中\u0660\U00020000\u00e9":
        assert table[ord(char)] == tokenizer.is_alnum_char(char)
    for char in " _\\\u0301.\U0001F638\U0010FFFF":
        assert table[ord(char)] == tokenizer.is_alnum_char(char)


@pytest.mark.slow
@pytest.mark.parametrize("block,cache_size,every", [(4096, 1 << 18, 1), (97, 500, 5)])
def test_real_vocab_corpus_lines_equal_the_python_path(vocab_path, corpus_lines, block,
                                                       cache_size, every):
    plain = SubwordEncoder.from_file(vocab_path)
    kernel = KernelSubwordEncoder(plain.subtoken_strings, cache_size=cache_size)
    lines = corpus_lines[::every]
    assert len(lines) > 2000
    for side, (head, eos) in enumerate(HEADS[:2]):
        expected = python_path(plain, lines, side, head, eos)
        assert kernel_path(kernel, lines, block, side, head, eos) == expected
        # a second time: the tokens come from the table (or are segmented again after
        # the small cache was emptied)
        assert kernel_path(kernel, lines, block, side, head, eos) == expected


def test_sample_corpus_lines_equal_the_python_path():
    """The en-zh sample the README's examples run (sample_data/), each side with the real
    vocabulary of its language (tests/data)."""
    for suffix, name in (("en", REAL_VOCABS[0]), ("zh", REAL_VOCABS[1])):
        plain = SubwordEncoder.from_file(os.path.join(VOCAB_DIR, name))
        kernel = KernelSubwordEncoder(plain.subtoken_strings)
        path = os.path.join(SAMPLE_DATA, "enzh-mlqe-pe", "dev." + suffix)
        with open(path, encoding="utf-8") as f:
            lines = [line.strip() for line in f]
        assert kernel_path(kernel, lines, 4096, 1) == python_path(plain, lines, 1)


@functools.lru_cache(maxsize=1)
def zh_encoders():
    """The plain and the kernel encoder of a real vocabulary, the kernel with a tiny cache
    (its table emptied every few examples), shared by the examples."""
    plain = SubwordEncoder.from_file(os.path.join(VOCAB_DIR, REAL_VOCABS[1]))
    return plain, KernelSubwordEncoder(plain.subtoken_strings, cache_size=8)


script_digits = st.characters(categories=["Nd"]).filter(lambda c: not c.isascii())
combining = st.characters(categories=["Mn", "Mc", "Me"])
astral = st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF, codec=None,
                       exclude_categories=())
unicode_text = st.lists(st.one_of(piece, script_digits, combining, astral,
                                  st.sampled_from(["_", "\\", " ", "__", "\\u"])),
                        max_size=40).map("".join)


@HYPOTHESIS
@given(texts=st.lists(st.one_of(broad_text, unicode_text), max_size=12),
       heads=st.sampled_from(HEADS))
@example(texts=["a_b\\c;12;\\u 中文 \U0001F638 \t\n x", "<pad>_<EOS>", "", " ", "  a  "],
         heads=HEADS[0])
@example(texts=["\U0010FFFF" * 400], heads=HEADS[1])  # every character escaped: buffers grow
@example(texts=["e\u0301\u0663\u0664 \U00020000x_\\"], heads=HEADS[2])
def test_real_vocab_any_text_equals_the_python_path(texts, heads):
    plain, kernel = zh_encoders()
    head, eos = heads
    assert entries_of(kernel, texts, 1, head, eos) == python_path(plain, texts, 1, head, eos)


@HYPOTHESIS
@given(subtokens=st.lists(st.lists(piece, min_size=1, max_size=4).map("".join), max_size=30),
       single=st.sets(st.sampled_from("ab_\\u;0123456789 x中"), max_size=16),
       texts=st.lists(st.lists(st.sampled_from(["a", "b", "ab", "_", "\\", " ", "x", "中",
                                                  "1", ";", "\n", "\U0001F638", "é"]),
                               max_size=12).map("".join), max_size=6))
@example(subtokens=[], single=set("ab"), texts=["ab ba", "c"])  # "c" cannot be segmented
def test_any_vocabulary_equals_the_python_path_or_leaves_the_line_to_it(subtokens, single,
                                                                         texts):
    """A line the kernel does not take comes back None; the Python path then encodes it
    or raises, as it always did."""
    strings = ["<pad>", "<EOS>"] + subtokens + sorted(single)
    plain = SubwordEncoder(strings)
    kernel = KernelSubwordEncoder(strings, cache_size=4)
    got = entries_of(kernel, texts)
    for text, entry in zip(texts, got):
        try:
            expected = python_path(plain, [text])[0]
        except ValueError:
            assert entry is None
        else:
            assert entry in (expected, None)
            assert entry is not None or not all(
                subword_batch.BATCH_TOKEN_CHARS >= len(run) for run in tokenizer.split_runs(text))


@pytest.mark.parametrize("cap", [1, 5, None])
def test_tokens_over_the_length_limit_are_left_to_the_python_path(vocab_path, corpus_lines,
                                                                  monkeypatch, cap):
    """A line with a run longer than BATCH_TOKEN_CHARS comes back None (the Python path
    encodes it); every other line's entry is the Python path's (a 30,000-character token
    too, over the default cap)."""
    if cap is not None:
        monkeypatch.setattr(subword_batch, "BATCH_TOKEN_CHARS", cap)
    limit = subword_batch.BATCH_TOKEN_CHARS
    plain = SubwordEncoder.from_file(vocab_path)
    kernel = KernelSubwordEncoder(plain.subtoken_strings)
    lines = corpus_lines[::11] + ["中文" * 15000 + " " + "x_\\" * 10000, "ab " + "c" * 10001]
    got = kernel_path(kernel, lines, 256)
    expected = python_path(plain, lines)
    for line, entry, wanted in zip(lines, got, expected):
        over = any(len(run) > limit for run in tokenizer.split_runs(line))
        assert entry == (None if over else wanted)
    assert sum(entry is None for entry in got) >= 2
