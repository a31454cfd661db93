"""transforms/codecs/byte_bpe.py's learner (`learn_byte_bpe`): the vocab.json and merges.txt it
learns from token counts equal Hugging Face `tokenizers`' BpeTrainer's, load in `tokenizers`
(and `transformers`), compress as well, whatever the counts' order; ties and min_frequency.
The encoder against tiktoken: test_byte_bpe.py."""

import collections
import json
import os
import random
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpt2_files import EVAL_FILES, TRAIN_FILES, hf_byte_level as _hf_byte_level, lines as _lines
from transforms.codecs.byte_bpe import ENDOFTEXT, ByteBPE, bytes_to_unicode, pretokenize
from transforms.codecs.byte_bpe_learner import learn_byte_bpe

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import ByteLevelBPETokenizer  # noqa: E402


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


# ------------------------------------------------- the compiled loop against a plain reference


def _reference_learn(word_counts, vocab_size, special_tokens, min_frequency):
    """BPE learning as defined, recounting every pair before each merge: the (left id, right
    id) pair with the highest count, smallest first among equals, merged left to right in every
    word; a token spelled again takes its earlier id. Returns (vocab, merges)."""
    to_char = bytes_to_unicode()
    id_to_token = list(special_tokens) + sorted(to_char.values())
    token_to_id = {t: i for i, t in enumerate(id_to_token)}
    words = [([token_to_id[to_char[x]] for x in w.encode("utf-8")], c)
             for w, c in word_counts.items() if c]
    merges = []
    while len(id_to_token) < vocab_size:
        pairs = collections.Counter()
        for word, c in words:
            for pair in zip(word, word[1:]):
                pairs[pair] += c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        if pairs[best] < max(min_frequency, 1):
            break
        token = id_to_token[best[0]] + id_to_token[best[1]]
        if token not in token_to_id:
            token_to_id[token] = len(id_to_token)
            id_to_token.append(token)
        new = token_to_id[token]
        merges.append((id_to_token[best[0]], id_to_token[best[1]]))
        for word, _ in words:
            i = 0
            while i < len(word) - 1:
                if (word[i], word[i + 1]) == best:
                    word[i: i + 2] = [new]
                i += 1
    return {t: i for i, t in enumerate(id_to_token)}, merges


@pytest.fixture(params=[2, 1 << 62], ids=["start_size_2", "start_size_default"])
def start_size(request, monkeypatch):
    """The compiled loop's arrays start tiny (every growth path runs) or at the default."""
    from transforms.codecs import byte_bpe_learner

    monkeypatch.setattr(byte_bpe_learner, "_START_SIZE", request.param)
    return request.param


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    st.dictionaries(st.text(alphabet="abcab\u00e9\u4e2d<|>", min_size=1, max_size=14),
                    st.integers(min_value=0, max_value=6), max_size=40),
    st.integers(min_value=0, max_value=70),
    st.integers(min_value=1, max_value=3),
    st.sampled_from([(ENDOFTEXT,), (), ("ab", ENDOFTEXT), ("<|", "\u4e2d")]),
)
def test_learner_equals_reference(start_size, word_counts, extra, min_frequency, specials):
    """Identical vocab and merges, including merges that spell a special token or an earlier
    token again (small alphabets make those and ties common)."""
    vocab_size = 256 + len(specials) + extra
    bpe = learn_byte_bpe(word_counts, vocab_size, specials, min_frequency)
    vocab, merges = _reference_learn(word_counts, vocab_size, specials, min_frequency)
    assert bpe.merges == merges
    assert json.loads(bpe.vocab_json_text()) == vocab


@pytest.mark.slow
def test_learner_equals_reference_many_pairs(monkeypatch):
    """Thousands of distinct pairs and long words, arrays starting tiny: the tables, lists and
    heap grow many times, mid-merge too."""
    from transforms.codecs import byte_bpe_learner

    monkeypatch.setattr(byte_bpe_learner, "_START_SIZE", 2)
    rng = random.Random(7)
    alphabet = [chr(c) for c in range(0x20, 0x7f)] + ["\u00e9", "\u4e2d", "\u6587"]
    word_counts = {}
    for _ in range(1500):
        word = "".join(rng.choice(alphabet[: rng.choice((4, 20, len(alphabet)))])
                       for _ in range(rng.randint(1, 30)))
        word_counts[word] = rng.randint(1, 9)
    bpe = learn_byte_bpe(word_counts, 500, (ENDOFTEXT,), 2)
    vocab, merges = _reference_learn(word_counts, 500, (ENDOFTEXT,), 2)
    assert bpe.merges == merges
    assert json.loads(bpe.vocab_json_text()) == vocab
