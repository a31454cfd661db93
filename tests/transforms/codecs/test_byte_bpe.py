"""transforms/codecs/byte_bpe.py: GPT-2 byte-level BPE, checked against tiktoken and Hugging Face
`tokenizers` built from the local GPT-2 files in tests/data/gpt2 (nothing is downloaded)."""

import collections
import glob
import json
import os
import pickle
import random
import tempfile

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from repo_paths import DATA_DIR as DATA
from transforms.codecs import byte_bpe
from transforms.codecs.byte_bpe import (
    ENDOFTEXT,
    PRETOKENIZE_PATTERN,
    ByteBPE,
    bytes_to_unicode,
    learn_byte_bpe,
    pretokenize,
)

tiktoken = pytest.importorskip("tiktoken")
tokenizers = pytest.importorskip("tokenizers")
from tiktoken.load import data_gym_to_mergeable_bpe_ranks  # noqa: E402
from tokenizers import ByteLevelBPETokenizer  # noqa: E402

GPT2_DIR = os.path.join(DATA, "gpt2")
ENCODER_JSON = os.path.join(GPT2_DIR, "encoder.json")
VOCAB_BPE = os.path.join(GPT2_DIR, "vocab.bpe")

# The pattern as the issue (and GPT-2's encoder.py) writes it.
ISSUE_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

EVAL_FILES = [
    os.path.join(DATA, "enzh-mlqe-pe", "dev.en"),
    os.path.join(DATA, "enzh-mlqe-pe", "dev.zh"),
    os.path.join(DATA, "ende-opennmt", "dev.de"),
] + sorted(glob.glob(os.path.join(DATA, "envi-nmt-testdata", "*.vi")))
TRAIN_FILES = [
    os.path.join(DATA, "enzh-mlqe-pe", "train.en"),
    os.path.join(DATA, "enzh-mlqe-pe", "train.zh"),
]

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


def _hf_byte_level(vocab_path, merges_path, special=(ENDOFTEXT,)):
    tok = ByteLevelBPETokenizer(vocab_path, merges_path)
    if special:
        tok.add_special_tokens(list(special))
    return tok


@pytest.fixture(scope="module")
def hf_gpt2():
    return _hf_byte_level(ENCODER_JSON, VOCAB_BPE)


def _lines(path):
    with open(path, encoding="utf-8", newline="") as f:
        return f.read().splitlines(keepends=True)


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


# ---------------------------------------------------------------------------- learner


def _train_lines():
    lines = []
    for path in TRAIN_FILES:
        with open(path, encoding="utf-8", newline="") as f:
            lines += [line for line in f.read().split("\n") if line]
    return lines


def _word_counts(lines):
    counts = collections.Counter()
    for line in lines:
        counts.update(pretokenize(line))
    return counts


def _hf_train(lines, vocab_size, min_frequency=2, special_tokens=(ENDOFTEXT,)):
    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(
        lines,
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(special_tokens),
        show_progress=False,
    )
    return tok


@pytest.fixture(scope="module")
def learned(tmp_path_factory):
    lines = _train_lines()
    counts = _word_counts(lines)
    ours = learn_byte_bpe(counts, 2000)
    ours_dir = str(tmp_path_factory.mktemp("ours"))
    ours.save(ours_dir)
    hf = _hf_train(lines, 2000)
    hf_dir = str(tmp_path_factory.mktemp("hf"))
    hf.save_model(hf_dir)
    return {"lines": lines, "counts": counts, "ours": ours, "ours_dir": ours_dir, "hf": hf, "hf_dir": hf_dir}


def test_learned_layout(learned):
    ours = learned["ours"]
    assert ours.vocab_size == 2000
    assert ours.eos_id == 0 and ours.special_tokens == {ENDOFTEXT: 0}
    vocab = json.loads(ours.vocab_json_text())
    assert list(vocab.values()) == list(range(2000))
    assert list(vocab)[1:257] == sorted(bytes_to_unicode().values())
    assert len(ours.merges) >= 2000 - 257
    bad = [(d, i) for d, i in ours._piece_ids.items() if ours._merge_bytes(d) != (i,)]
    assert not bad


def test_learned_files_load_in_tokenizers(learned):
    ours = learned["ours"]
    vocab_path = os.path.join(learned["ours_dir"], "vocab.json")
    merges_path = os.path.join(learned["ours_dir"], "merges.txt")
    hf = _hf_byte_level(vocab_path, merges_path)
    assert hf.get_vocab_size() == 2000
    reloaded = ByteBPE.from_dir(learned["ours_dir"])
    assert reloaded.special_tokens == {ENDOFTEXT: 0}
    for path in EVAL_FILES:
        lines = _lines(path)
        ids = [ours.encode(line) for line in lines]
        assert [e.ids for e in hf.encode_batch(lines)] == ids
        assert [reloaded.encode(line) for line in lines] == ids
        assert [ours.decode(x) for x in ids] == lines
    assert ours.encode("a<|endoftext|>b") == hf.encode("a<|endoftext|>b").ids


def test_learned_files_load_in_transformers(learned):
    """Optional (transformers is not a test requirement): GPT2Tokenizer (pure Python, still in
    transformers 4.x) and GPT2TokenizerFast read the learned files and agree with us."""
    transformers = pytest.importorskip("transformers")
    vocab_path = os.path.join(learned["ours_dir"], "vocab.json")
    merges_path = os.path.join(learned["ours_dir"], "merges.txt")
    loaded = [transformers.GPT2TokenizerFast(vocab_file=vocab_path, merges_file=merges_path)]
    if hasattr(transformers, "GPT2Tokenizer"):
        loaded.append(transformers.GPT2Tokenizer(vocab_path, merges_path))
    lines = _lines(EVAL_FILES[0])[:100] + _lines(EVAL_FILES[1])[:100] + ["x<|endoftext|>y"]
    for tok in loaded:
        assert tok.eos_token_id == 0
        assert [tok.encode(line) for line in lines] == [learned["ours"].encode(line) for line in lines]


@pytest.mark.slow
def test_learner_is_deterministic(learned):
    counts = learned["counts"]
    items = list(counts.items())
    random.Random(5).shuffle(items)
    for other in (dict(counts), dict(reversed(list(counts.items()))), dict(items)):
        again = learn_byte_bpe(other, 2000)
        assert again.vocab_json_text() == learned["ours"].vocab_json_text()
        assert again.merges_text() == learned["ours"].merges_text()


def _bytes_per_token(encode, lines):
    total_bytes = sum(len(line.encode("utf-8")) for line in lines)
    total_tokens = sum(len(encode(line)) for line in lines)
    return total_bytes / total_tokens


def test_learner_compression_matches_tokenizers(learned):
    held_out = []
    for path in EVAL_FILES[:3]:
        held_out += [line.rstrip("\n") for line in _lines(path)]
    ours = _bytes_per_token(learned["ours"].encode, held_out)
    theirs = _bytes_per_token(lambda s: learned["hf"].encode(s).ids, held_out)
    assert ours > 2.0
    assert abs(ours - theirs) <= 0.01 * theirs, (ours, theirs)


def test_learner_files_equal_tokenizers_trainer(learned):
    """Same layout and tie-break as tokenizers' BpeTrainer: the files come out identical."""
    for name in ("vocab.json", "merges.txt"):
        with open(os.path.join(learned["ours_dir"], name), encoding="utf-8", newline="") as f:
            ours = f.read()
        with open(os.path.join(learned["hf_dir"], name), encoding="utf-8", newline="") as f:
            theirs = f.read()
        assert ours == theirs, name


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.text(alphabet="aab ba\u00e9'\n", min_size=1, max_size=12), min_size=1, max_size=30),
    st.integers(min_value=257, max_value=300),
    st.integers(min_value=1, max_value=3),
)
def test_learner_equals_tokenizers_trainer_small(lines, vocab_size, min_frequency):
    """Small alphabets make ties, repeated symbols and overlapping pairs common."""
    ours = learn_byte_bpe(_word_counts(lines), vocab_size, (ENDOFTEXT,), min_frequency)
    hf = _hf_train(lines, vocab_size, min_frequency)
    with tempfile.TemporaryDirectory() as d:
        hf.save_model(d)
        with open(os.path.join(d, "vocab.json"), encoding="utf-8", newline="") as f:
            assert ours.vocab_json_text() == f.read()
        with open(os.path.join(d, "merges.txt"), encoding="utf-8", newline="") as f:
            assert ours.merges_text() == f.read()


def test_tie_break_and_min_frequency():
    ids = {c: i + 1 for i, c in enumerate(sorted(bytes_to_unicode().values()))}
    # equal counts: the pair with the smallest (left id, right id) first
    bpe = learn_byte_bpe({"cd": 3, "ab": 3, "xy": 5}, 260, min_frequency=1)
    assert bpe.merges == [("x", "y"), ("a", "b"), ("c", "d")]
    assert ids["a"] < ids["c"] < ids["x"]
    assert bpe.token_to_id("xy") == 257 and bpe.token_to_id("ab") == 258
    # min_frequency: pairs seen fewer times are never merged; learning stops early
    bpe = learn_byte_bpe({"ab": 1, "cd": 2}, 300, min_frequency=2)
    assert bpe.merges == [("c", "d")] and bpe.vocab_size == 258
    # no special tokens: bytes start at 0
    bpe = learn_byte_bpe({"hello": 2}, 256 + 4, special_tokens=())
    assert bpe.eos_id is None and bpe.token_to_id("!") == 0
    assert bpe.merges_text().count("\n") == 5
    assert bpe.decode(bpe.encode("hello")) == "hello" and len(bpe.encode("hello")) == 1
    # any text stays encodable with a learned vocabulary (all 256 byte symbols present)
    text = "\u4e2d\U0001F600 \x00 \xff"
    assert bpe.decode(bpe.encode(text)) == text
    with pytest.raises(ValueError):
        learn_byte_bpe({"ab": 2}, 200)
    with pytest.raises(ValueError):
        learn_byte_bpe({"ab": -1}, 300)


def test_module_has_no_heavy_imports():
    src = open(byte_bpe.__file__, encoding="utf-8").read()
    assert "apache_beam" not in src and "tensorflow" not in src
