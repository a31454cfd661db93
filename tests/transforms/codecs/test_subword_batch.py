"""BatchSubwordEncoder (the encode pass's subword encoder, new tokens segmented in one
compiled call) gives exactly the plain SubwordEncoder's varints: on real vocabularies and
corpora, on any text (hypothesis), with caches that overflow and output buffers that must
grow, and it fails as the plain encoder does on a token the vocabulary cannot segment."""

import functools
import os

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import t2t_reference as t2t
from subword_cases import HYPOTHESIS, REAL_VOCABS, VOCAB_DIR, broad_text, piece
from transforms.codecs import subword_batch
from transforms.codecs.subword import SubwordEncoder
from transforms.codecs.subword_batch import BatchSubwordEncoder
from transforms.codecs.varints import encode_varints


def in_blocks(encoder, lines, size):
    out = []
    for i in range(0, len(lines), size):
        out.extend(encoder.encode_varints_many(lines[i:i + size]))
    return out


@pytest.fixture(scope="module", params=REAL_VOCABS)
def vocab_path(request):
    return os.path.join(VOCAB_DIR, request.param)


@pytest.mark.slow
@pytest.mark.parametrize("block,cache_size,every", [(4096, 1 << 18, 1), (97, 500, 5)])
def test_real_vocab_corpus_lines_equal_the_plain_encoder(vocab_path, corpus_lines, block,
                                                         cache_size, every):
    plain = SubwordEncoder.from_file(vocab_path)
    batch = BatchSubwordEncoder(plain.subtoken_strings, cache_size=cache_size)
    lines = corpus_lines[::every]
    assert len(lines) > 2000
    expected = [plain.encode_varints(line) for line in lines]
    assert in_blocks(batch, lines, block) == expected
    # a second time: every token now comes from the cache (or is segmented again after
    # the small cache was emptied)
    assert in_blocks(batch, lines, block) == expected


def test_real_vocab_equals_t2t_on_corpus_lines(vocab_path, corpus_lines):
    batch = BatchSubwordEncoder.from_file(vocab_path)
    expected = t2t.t2t_encoder_from_file(vocab_path)
    lines = corpus_lines[::7]
    assert [encode_varints(expected.encode(line)) for line in lines] == \
        batch.encode_varints_many(lines)


@functools.lru_cache(maxsize=1)
def zh_encoders():
    """The plain and the batch encoder of a real vocabulary, the batch one with a tiny
    cache (emptied every few examples), shared by the examples."""
    plain = SubwordEncoder.from_file(os.path.join(VOCAB_DIR, REAL_VOCABS[1]))
    return plain, BatchSubwordEncoder(plain.subtoken_strings, cache_size=8)


@HYPOTHESIS
@given(texts=st.lists(broad_text, max_size=12))
@example(texts=["a_b\\c;12;\\u 中文 \U0001F638 \t\n x", "<pad>_<EOS>", "", " ", "  a  "])
@example(texts=["\U0010FFFF" * 40])  # every character escaped: the output buffer grows
def test_real_vocab_any_text_equals_the_plain_encoder(texts):
    plain, batch = zh_encoders()
    assert batch.encode_varints_many(texts) == [plain.encode_varints(t) for t in texts]


def outcome(encode, texts):
    try:
        return encode(texts)
    except ValueError as e:
        return "ValueError: %s" % e


@HYPOTHESIS
@given(subtokens=st.lists(st.lists(piece, min_size=1, max_size=4).map("".join), max_size=30),
       single=st.sets(st.sampled_from("ab_\\u;0123456789 x中"), max_size=16),
       texts=st.lists(st.lists(st.sampled_from(["a", "b", "ab", "_", "\\", " ", "x", "中",
                                                  "1", ";", "\n", "\U0001F638", "é"]),
                               max_size=12).map("".join), max_size=6))
@example(subtokens=[], single=set("ab"), texts=["ab ba", "c"])  # "c" cannot be segmented
def test_any_vocabulary_equals_the_plain_encoder_or_fails_as_it_does(subtokens, single, texts):
    strings = ["<pad>", "<EOS>"] + subtokens + sorted(single)
    plain = SubwordEncoder(strings)
    batch = BatchSubwordEncoder(strings, cache_size=4)
    assert outcome(batch.encode_varints_many, texts) == outcome(
        lambda ts: [plain.encode_varints(t) for t in ts], texts)


@pytest.mark.parametrize("cap", [1, 5, None])
def test_tokens_longer_than_the_batch_cap_agree_through_the_python_path(
        vocab_path, corpus_lines, monkeypatch, cap):
    """Tokens longer than BATCH_TOKEN_CHARS are segmented in Python; the results are the
    same whichever path a token takes (also for a 30,000-character token, over the cap)."""
    if cap is not None:
        monkeypatch.setattr(subword_batch, "BATCH_TOKEN_CHARS", cap)
    plain = SubwordEncoder.from_file(vocab_path)
    batch = BatchSubwordEncoder(plain.subtoken_strings)
    lines = corpus_lines[::11] + ["中文" * 15000 + " " + "x_\\" * 10000]
    assert in_blocks(batch, lines, 256) == [plain.encode_varints(line) for line in lines]
