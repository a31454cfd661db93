"""transforms/codecs/byte_bpe.py: GPT-2 byte-level BPE, checked against tiktoken and Hugging Face
`tokenizers` built from the local GPT-2 files in tests/data/gpt2 (nothing is downloaded). The
learner: test_byte_bpe_learner.py."""

import json
import os
import pickle
import random

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpt2_files import (ENCODER_JSON, EVAL_FILES, GPT2_DIR, VOCAB_BPE, hf_byte_level as _hf_byte_level,
                        lines as _lines)
from transforms.codecs import byte_bpe
from transforms.codecs.byte_bpe import (ENDOFTEXT, PRETOKENIZE_PATTERN, ByteBPE, bytes_to_unicode,
                                        pretokenize)

tiktoken = pytest.importorskip("tiktoken")
tokenizers = pytest.importorskip("tokenizers")
from tiktoken.load import data_gym_to_mergeable_bpe_ranks  # noqa: E402

# The pattern as the issue (and GPT-2's encoder.py) writes it.
ISSUE_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

HYPOTHESIS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

SPECIAL_CASES = [
    "",
    "Hello world",
    "Hello, world! How's it going?",
    # contractions GPT-2 splits off, and upper-case ones it does not special-case
    "it's don't we're I've I'm we'll he'd",
    "IT'S DON'T WE'RE I'VE I'M WE'LL HE'D",
    "'s 't 're 've 'm 'll 'd 'S 'T 'x ''s '''",
    "rock'n'roll y'all ma'am o'clock 's's's",
    # whitespace runs
    "a  b   c    d",
    "  leading spaces",
    "trailing spaces   ",
    "tabs\tand\t\ttabs\t",
    "line\nbreaks\n\n\nand\r\nCRLF\r\n",
    " \n \n\t \n  ",
    "   ",
    "\n",
    "\u3000ideographic\u3000space\u00a0nbsp\u2009thin\u2028ls\u2029ps\x85nel",
    # digits and numbers
    "0 1 12 123 1234 12345 1234567890123456789",
    "3.14159 1,000,000 -42 +7 1e-9 0x1F 2024-01-01 12:30",
    "\u0663\u0664\u0665 \u2460\u2461 \u00bd \uff11\uff12\uff13 \u0967\u0968",
    # emoji: ZWJ sequences, skin tones, flags, keycaps, variation selectors
    "\U0001F600\U0001F601 \U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466",
    "\U0001F44D\U0001F3FD \U0001F1E8\U0001F1F3\U0001F1FA\U0001F1F8 1\ufe0f\u20e3 \u2764\ufe0f",
    "I \u2764\ufe0f \U0001F355!!! \U0001F680\U0001F680\U0001F680",
    # scripts, combining marks, punctuation runs
    "\u4e2d\u6587\u6d4b\u8bd5\uff0c\u8fd9\u662f\u4e00\u4e2a\u53e5\u5b50\u3002",
    "Ti\u1ebfng Vi\u1ec7t c\u00f3 d\u1ea5u, Gr\u00fc\u00dfe aus M\u00fcnchen",
    "e\u0301 a\u0308 n\u0303 \u0915\u094d\u0937 \u0627\u0644\u0639\u0631\u0628\u064a\u0629",
    "\u65e5\u672c\u8a9e\u3068\u30ab\u30bf\u30ab\u30ca \ud55c\uad6d\uc5b4 \u0420\u0443\u0441\u0441\u043a\u0438\u0439",
    "...!!!??? --- *** ((( ))) <<>> \u2014\u2014 \u2026",
    "<html><body>x=1;</body></html>",
    "\x00\x01\x1f\x7f control \x1b[0m",
]


# ---------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def gpt2():
    return ByteBPE.from_openai_files(ENCODER_JSON, VOCAB_BPE)


@pytest.fixture(scope="module")
def tiktoken_gpt2():
    """tiktoken's GPT-2 encoding from the local files. An empty DATA_GYM_CACHE_DIR makes
    tiktoken read the paths directly (no cache, no network)."""
    saved = os.environ.get("DATA_GYM_CACHE_DIR")
    os.environ["DATA_GYM_CACHE_DIR"] = ""
    try:
        ranks = data_gym_to_mergeable_bpe_ranks(VOCAB_BPE, ENCODER_JSON)
    finally:
        if saved is None:
            del os.environ["DATA_GYM_CACHE_DIR"]
        else:
            os.environ["DATA_GYM_CACHE_DIR"] = saved
    try:  # tiktoken's own spelling of the GPT-2 pattern: an independent oracle for it too
        from tiktoken_ext.openai_public import r50k_pat_str as pat_str
    except ImportError:  # pragma: no cover
        pat_str = ISSUE_PATTERN
    return tiktoken.Encoding(
        name="gpt2_local",
        pat_str=pat_str,
        mergeable_ranks=ranks,
        special_tokens={ENDOFTEXT: 50256},
        explicit_n_vocab=50257,
    )


@pytest.fixture(scope="module")
def hf_gpt2():
    return _hf_byte_level(ENCODER_JSON, VOCAB_BPE)


def _tiktoken_ids(enc, text, allow_special=True):
    if allow_special:
        return enc.encode(text, allowed_special="all")
    return enc.encode(text, allowed_special=set(), disallowed_special=())


# ---------------------------------------------------------------------------- basics


def test_pattern_is_gpt2s():
    assert PRETOKENIZE_PATTERN == ISSUE_PATTERN
    assert pretokenize("I'm here  now, it's 2024!\n") == [
        "I", "'m", " here", " ", " now", ",", " it", "'s", " 2024", "!", "\n",
    ]
    assert pretokenize("IT'S") == ["IT", "'", "S"]
    assert pretokenize("a   \n\tb  ") == ["a", "   \n", "\t", "b", "  "]


def test_bytes_to_unicode_is_gpt2s_table():
    table = bytes_to_unicode()
    assert sorted(table) == list(range(256))
    assert len(set(table.values())) == 256
    # Independent construction (tiktoken's data_gym rule): printable Latin-1 other than
    # space keeps its code point; the others get 256, 257, ... in byte order.
    expected, n = {}, 0
    for b in range(256):
        if chr(b).isprintable() and chr(b) != " ":
            expected[b] = chr(b)
        else:
            expected[b] = chr(256 + n)
            n += 1
    assert table == expected
    assert table[ord(" ")] == "\u0120" and table[ord("\n")] == "\u010a"
    # GPT-2's vocabulary starts with the 256 byte symbols in code point order.
    with open(ENCODER_JSON, encoding="utf-8") as f:
        encoder = json.load(f)
    assert [encoder[c] for c in sorted(table.values())] == list(range(256))


def test_gpt2_properties(gpt2):
    assert gpt2.vocab_size == 50257
    assert gpt2.eos_id == 50256
    assert gpt2.special_tokens == {ENDOFTEXT: 50256}
    assert gpt2.token_to_id("\u0120the") == 262
    assert gpt2.id_to_token(262) == "\u0120the"
    assert gpt2.token_to_id(ENDOFTEXT) == 50256 and gpt2.id_to_token(50256) == ENDOFTEXT
    assert gpt2.token_to_id("no such token") is None and gpt2.id_to_token(10**6) is None
    assert gpt2.encode("Hello world") == [15496, 995]
    assert gpt2.decode([15496, 995]) == "Hello world"


# ---------------------------------------------------------------------------- GPT-2 parity


@pytest.mark.parametrize("path", EVAL_FILES, ids=os.path.basename)
def test_corpus_ids_match_tiktoken(gpt2, tiktoken_gpt2, hf_gpt2, path):
    lines = _lines(path)
    assert lines
    for line in lines:
        ids = gpt2.encode(line)
        assert ids == _tiktoken_ids(tiktoken_gpt2, line), line
        assert gpt2.decode(ids) == line
    whole = "".join(lines)
    assert gpt2.encode(whole) == _tiktoken_ids(tiktoken_gpt2, whole)
    # Hugging Face tokenizers' ByteLevel BPE from the same files agrees too.
    assert [e.ids for e in hf_gpt2.encode_batch(lines)] == [gpt2.encode(x) for x in lines]


@pytest.mark.parametrize("text", SPECIAL_CASES)
def test_special_cases_match_tiktoken(gpt2, tiktoken_gpt2, hf_gpt2, text):
    ids = gpt2.encode(text)
    assert ids == _tiktoken_ids(tiktoken_gpt2, text)
    assert ids == hf_gpt2.encode(text).ids
    assert gpt2.encode_ordinary(text) == ids
    assert gpt2.decode(ids) == text


def test_long_pieces_match_tiktoken(gpt2, tiktoken_gpt2):
    """Pieces longer than the rank-scan limit are merged with a heap: same ids."""
    rng = random.Random(7)
    zh = "".join(c for c in open(EVAL_FILES[1], encoding="utf-8").read() if "\u4e00" <= c <= "\u9fff")
    texts = [
        "a" * 301,
        "ab" * 150,
        "Supercalifragilisticexpialidocious" * 7,
        "\u4e2d" * 200,
        zh[:2000],
        " " * 1000 + "x",
        "\n" * 500,
        "9" * 257,
        "!?" * 120,
        "\U0001F600" * 90,
        "".join(rng.choice("abcde\u00e9\u4e2d") for _ in range(3000)),
    ]
    for text in texts:
        ids = gpt2.encode(text)
        assert ids == _tiktoken_ids(tiktoken_gpt2, text)
        assert gpt2.decode(ids) == text
    # Both merge paths agree on every cut of real Chinese text.
    for n in range(2, 200, 7):
        data = zh[n : 2 * n].encode("utf-8")
        parts = [gpt2._byte_ids[b] for b in data]
        assert tuple(gpt2._merge_long(list(parts))) == gpt2._merge_bytes(data)


def test_endoftext_allowed_and_disallowed(gpt2, tiktoken_gpt2, hf_gpt2):
    texts = [
        ENDOFTEXT,
        "Hello<|endoftext|>World",
        "end. <|endoftext|> Start again <|endoftext|><|endoftext|>\n",
        " <|endoftext|>x<|endoftext |<|endoftext|",
        "<|endoftext|>\u4e2d\u6587<|endoftext|>",
    ]
    for text in texts:
        allowed = gpt2.encode(text)
        assert allowed == _tiktoken_ids(tiktoken_gpt2, text, allow_special=True)
        assert allowed == hf_gpt2.encode(text).ids
        assert allowed.count(50256) == text.count(ENDOFTEXT)
        assert gpt2.decode(allowed) == text

        ordinary = gpt2.encode(text, allow_special=False)
        assert ordinary == _tiktoken_ids(tiktoken_gpt2, text, allow_special=False)
        assert ordinary == gpt2.encode_ordinary(text)
        assert 50256 not in ordinary
        assert gpt2.decode(ordinary) == text
    assert gpt2.encode(ENDOFTEXT, allow_special=False) == [27, 91, 437, 1659, 5239, 91, 29]


def test_every_gpt2_token_merges_to_itself(gpt2):
    """Justifies the whole-piece vocabulary lookup: BPE of any token's bytes is that token."""
    bad = [(data, idx) for data, idx in gpt2._piece_ids.items() if gpt2._merge_bytes(data) != (idx,)]
    assert not bad
    assert len(gpt2._piece_ids) == 50256


def test_decode_partial_utf8_replaces(gpt2, tiktoken_gpt2):
    ids = gpt2.encode("\u4e2d\U0001F600")
    for cut in range(len(ids) + 1):
        part = ids[:cut]
        assert gpt2.decode(part) == tiktoken_gpt2.decode(part, errors="replace")
        assert gpt2.decode_bytes(part) == tiktoken_gpt2.decode_bytes(part)
    emoji = gpt2.encode("\U0001F600")
    assert len(emoji) == 2 and gpt2.decode(emoji[:1]) == "\ufffd"
    with pytest.raises(ValueError):
        gpt2.decode([50257])
    with pytest.raises(ValueError):
        gpt2.decode([-1])


def test_lone_surrogates_are_rejected(gpt2):
    with pytest.raises(UnicodeEncodeError):
        gpt2.encode("abc \ud800 def")


def test_cache_is_bounded():
    bpe = ByteBPE.from_openai_files(ENCODER_JSON, VOCAB_BPE)
    bpe._cache_size = 50
    rng = random.Random(3)
    for n in list(range(100)) + [200]:
        text = " ".join("".join(rng.choice("abcdefgh") for _ in range(5)) for _ in range(n % 20 or n))
        ids = bpe.encode(text)
        assert len(bpe._cache) <= 50
        assert bpe.decode(ids) == text


# ---------------------------------------------------------------------------- hypothesis


@pytest.mark.slow
@HYPOTHESIS
@given(st.text())
@example("\U0010FFFF\u0378 \ufffe")
def test_roundtrip_and_tiktoken_parity_any_text(gpt2, tiktoken_gpt2, text):
    ids = gpt2.encode(text, allow_special=False)
    assert gpt2.decode(ids) == text
    assert ids == _tiktoken_ids(tiktoken_gpt2, text, allow_special=False)
    assert gpt2.encode(text) == _tiktoken_ids(tiktoken_gpt2, text)


TRICKY_PIECES = st.sampled_from(
    list(" \t\n\r\x0b\x0c\xa0\u3000'sStTmdlrveL1\u0663a\u00e9\u4e2d\u0301\U0001F600\u200d<|>!.")
    + [ENDOFTEXT, "<|endoftext", "'ll", "'re", "  ", "\n\n"]
)
TRICKY = st.lists(TRICKY_PIECES, max_size=60).map("".join)


@HYPOTHESIS
@given(st.lists(TRICKY, max_size=4).map("".join))
def test_roundtrip_and_tiktoken_parity_tricky_text(gpt2, tiktoken_gpt2, text):
    for allow in (True, False):
        ids = gpt2.encode(text, allow_special=allow)
        assert ids == _tiktoken_ids(tiktoken_gpt2, text, allow_special=allow)
        assert gpt2.decode(ids) == text


# ---------------------------------------------------------------------------- files


@pytest.mark.slow
def test_hf_format_round_trip(gpt2, tmp_path):
    vocab_path, merges_path = gpt2.save(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["merges.txt", "vocab.json"]
    with open(ENCODER_JSON, encoding="utf-8") as f:
        assert json.load(open(vocab_path, encoding="utf-8")) == json.load(f)
    with open(VOCAB_BPE, encoding="utf-8") as f:
        original = f.read()
    with open(merges_path, encoding="utf-8", newline="") as f:
        written = f.read()
    assert written.startswith("#version: 0.2\n")
    assert written.split("\n")[1:] == original.rstrip("\n").split("\n")[1:] + [""]
    assert written == gpt2.merges_text() and len(gpt2.merges) == 50000

    # Loads in tokenizers (ByteLevelBPETokenizer and a plain Tokenizer) with identical ids.
    hf = _hf_byte_level(vocab_path, merges_path)
    plain = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(vocab_path, merges_path))
    plain.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    plain.decoder = tokenizers.decoders.ByteLevel()
    lines = _lines(EVAL_FILES[0])[:200] + _lines(EVAL_FILES[1])[:200] + SPECIAL_CASES
    for line in lines:
        ids = gpt2.encode(line)
        assert hf.encode(line).ids == ids
        assert plain.encode(line).ids == gpt2.encode_ordinary(line)
        assert plain.decode(ids) == line

    # And back: the saved pair (and a directory of either kind) give the same model.
    for again in (
        ByteBPE.from_hf_files(vocab_path, merges_path),
        ByteBPE.from_dir(str(tmp_path)),
        ByteBPE.from_dir(GPT2_DIR),
        ByteBPE.from_texts(gpt2.vocab_json_text(), gpt2.merges_text()),
        pickle.loads(pickle.dumps(gpt2)),
    ):
        assert again.vocab_json_text() == gpt2.vocab_json_text()
        assert again.merges_text() == gpt2.merges_text()
        assert again.special_tokens == gpt2.special_tokens
        assert again.encode(SPECIAL_CASES[2] + ENDOFTEXT) == gpt2.encode(SPECIAL_CASES[2] + ENDOFTEXT)


def test_tokenizer_json_gives_the_records_ids_eos_included_and_in_the_text(gpt2, tmp_path):
    """`tokenizer.json` (ByteBpeVocabulary.to_files) loaded with `Tokenizer.from_file`:
    `encode(line).ids` is what the job writes for the line, the records' ids: GPT-2's ids
    with the EOS token's text as text, then the EOS id; also with another --bpe_eos_token.
    Real corpus lines and the special cases, each also with the EOS token inside."""
    from transforms.codecs.byte_bpe_vocabulary import HF_TOKENIZER_FILE, ByteBpeVocabulary
    lines = [line.strip() for path in EVAL_FILES[:3] for line in _lines(path)[:300]]
    lines += SPECIAL_CASES + ["a %s b" % ENDOFTEXT, ENDOFTEXT, ENDOFTEXT + ENDOFTEXT + "x",
                              "<|endoftext", "!!! %s!" % ENDOFTEXT]
    for eos_token in (ENDOFTEXT, "!"):
        vocabulary = ByteBpeVocabulary(gpt2, eos_token)
        path = tmp_path / eos_token.strip("<|>") / HF_TOKENIZER_FILE
        path.parent.mkdir()
        path.write_text(vocabulary.to_files()[HF_TOKENIZER_FILE], encoding="utf-8")
        hf = tokenizers.Tokenizer.from_file(str(path))
        assert hf.get_vocab_size() == gpt2.vocab_size
        eos = vocabulary.eos_ids()
        for line in lines:
            ids = vocabulary.encode(line) + eos  # what the encode pass writes
            assert hf.encode(line).ids == ids, line
            assert hf.decode(ids[:-1]) == line
        pair = hf.encode("one", "two").ids  # the pair template ends each side in EOS too
        assert pair == vocabulary.encode("one") + eos + vocabulary.encode("two") + eos


def test_from_dir_without_files(tmp_path):
    with pytest.raises(FileNotFoundError):
        ByteBPE.from_dir(str(tmp_path))


def test_bad_files_are_rejected():
    vocab = {c: i for i, c in enumerate(sorted(bytes_to_unicode().values()))}
    with pytest.raises(ValueError, match="not in the vocabulary"):
        ByteBPE(vocab, [("a", "b")])
    with pytest.raises(ValueError, match="byte symbols"):
        ByteBPE({"a": 0}, [])
    with pytest.raises(ValueError, match="left right"):
        ByteBPE.from_texts(json.dumps(vocab), "#version: 0.2\na b c\n")
    with pytest.raises(ValueError, match="not made of byte symbols"):
        ByteBPE(dict(vocab, **{"\u4e2d": 300, "\u4e2d!": 301}), [("\u4e2d", "!")])
    with pytest.raises(ValueError, match="is used by"):
        ByteBPE(dict(vocab, extra=0), [])


def test_module_has_no_heavy_imports():
    src = open(byte_bpe.__file__, encoding="utf-8").read()
    assert "apache_beam" not in src and "tensorflow" not in src
