"""transforms.codecs.varints: protobuf's base-128 varints, and the subword encoder's varint
path (`SubwordEncoder.encode_varints`, what the encode pass writes) against its ids."""

import functools
import glob
import os

import pytest
from hypothesis import given, settings, strategies as st

from repo_paths import DATA_DIR
from transforms.codecs.subword import SubwordEncoder
from transforms.codecs.varints import count_varints, decode_varints, encode_varints, varint

VOCABS = ("vocab.translate_enzh_wmt8k.8192.subwords.en",
          "vocab.translate_enzh_wmt8k.8192.subwords.zh")


def test_known_encodings():  # protobuf's documented examples
    assert varint(0) == b"\x00" and varint(1) == b"\x01" and varint(127) == b"\x7f"
    assert varint(150) == b"\x96\x01" and varint(300) == b"\xac\x02"
    assert encode_varints([1, 300, 0]) == b"\x01\xac\x02\x00"
    with pytest.raises(ValueError):
        encode_varints([-1])
    with pytest.raises(ValueError):
        decode_varints(b"\x96")


@settings(max_examples=500, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2 ** 64 - 1), max_size=200))
def test_round_trip_and_count(values):
    data = encode_varints(values)
    assert decode_varints(data) == values
    assert count_varints(data) == len(values)


@functools.lru_cache(maxsize=None)
def _encoder(name):
    return SubwordEncoder.from_file(os.path.join(DATA_DIR, "t2t_vocab", name))


@pytest.fixture(params=VOCABS)
def encoder(request):
    return _encoder(request.param)


@pytest.mark.slow
def test_encode_varints_is_encode_on_real_lines(encoder):
    """Every line of the sample corpora (both languages, so many characters are unknown to
    one of the vocabularies), twice: the second time from the token caches."""
    lines = []
    for path in sorted(glob.glob(os.path.join(DATA_DIR, "enzh-mlqe-pe", "*"))):
        with open(path, encoding="utf-8") as f:
            lines.extend(f.read().split("\n"))
    assert len(lines) > 2000
    for _ in range(2):
        for line in lines + [" ", "  a ", " a", "a ", ""]:
            ids = encoder.encode(line)
            assert encoder.encode_varints(line) == encode_varints(ids), line


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab _\\;1中文。 \t\U0001F638é"), max_size=30))
def test_encode_varints_is_encode_on_any_text(text):
    enc = _encoder(VOCABS[0])
    assert enc.encode_varints(text) == encode_varints(enc.encode(text))
