"""transforms/codecs/word.py: tensorflow/nmt word vocabularies in pure Python.

TensorFlow is the oracle where tensorflow/nmt relies on it: `tf.compat.v1.string_split` (nmt's
`tf.string_split`) for tokenization, and a `StaticHashTable` from a `TextFileInitializer` (nmt's
`index_table_from_file(vocab_file, default_value=UNK_ID)`) for word -> id.
"""

import os
import random

import pytest

from repo_paths import DATA_DIR
from transforms.codecs import word
from transforms.codecs.word import EOS, SOS, UNK, WordVocab, tokenize


tf = pytest.importorskip("tensorflow")

NMT_DIR = os.path.join(DATA_DIR, "nmt_vocab")
ENVI_DIR = os.path.join(DATA_DIR, "envi-nmt-testdata")


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def _tf_split(texts):
    """nmt's tokenization: tf.string_split([line]).values, per line."""
    sparse = tf.compat.v1.string_split(tf.constant([t.encode("utf-8") for t in texts]))
    rows = [[] for _ in texts]
    for (row, _), value in zip(sparse.indices.numpy(), sparse.values.numpy()):
        rows[row].append(value.decode("utf-8"))
    return rows


def _tf_table(vocab_file):
    """nmt's vocab_utils.create_vocab_tables: index_table_from_file(..., default_value=UNK_ID)."""
    return tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(vocab_file, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE,
                                      tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER),
        default_value=word.UNK_ID)


# -- tokenize ---------------------------------------------------------------------------------

EDGE_TEXTS = [
    "", " ", "   ", "a", " a ", "a  b", "a\tb c", "a\nb", "a\r", "a \r b", "\u00a0x\u00a0 y",
    "x\u3000y", "\u200b", "&quot; Nothing To Envy . &quot;", "tôi  còn\t nhỏ ,",
]


def test_tokenize_basics():
    assert tokenize("a  b ") == ["a", "b"]
    assert tokenize("a\tb\nc d") == ["a\tb\nc", "d"]  # only U+0020 splits
    assert tokenize("   ") == []
    assert tokenize("x\u00a0y") == ["x\u00a0y"]


def test_tokenize_matches_tf_string_split_on_corpus():
    texts = list(EDGE_TEXTS)
    for name in ("iwslt15.tst2013.100.en", "iwslt15.tst2013.100.vi"):
        texts += _lines(os.path.join(ENVI_DIR, name))
    rng = random.Random(5)
    alphabet = [" ", " ", "\t", "\n", "\r", "\u00a0", "\u3000", "a", "b", "é", "中"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
              for _ in range(300)]
    assert [tokenize(t) for t in texts] == _tf_split(texts)


# -- from_counts ------------------------------------------------------------------------------

def test_from_counts_orders_by_count_then_word():
    counts = {"b": 5, "a": 5, "c": 7, "Z": 5, "é": 5, "d": 1, "e": 2}
    vocab = WordVocab.from_counts(counts, vocab_size=8)
    # count descending; ties by code point: "Z" (U+005A) < "a" < "b" < "é" (U+00E9)
    assert vocab.words == (UNK, SOS, EOS, "c", "Z", "a", "b", "é")
    assert vocab.vocab_size == 8
    assert not vocab.fixed_specials


def test_from_counts_independent_of_dict_order_and_cutoff_in_a_tie():
    items = [("w%02d" % i, 3 if i % 2 else 4) for i in range(30)]
    expected = None
    for seed in range(5):
        random.Random(seed).shuffle(items)
        vocab = WordVocab.from_counts(dict(items), vocab_size=10)
        expected = expected or vocab.words
        assert vocab.words == expected
    assert expected[3:] == ("w00", "w02", "w04", "w06", "w08", "w10", "w12")


def test_from_counts_specials_never_duplicated():
    vocab = WordVocab.from_counts({"</s>": 100, "<unk>": 90, "x": 3, "<s>": 50, "y": 4}, 5)
    assert vocab.words == (UNK, SOS, EOS, "y", "x")


def test_from_counts_sizes():
    counts = {"a": 2, "b": 1}
    assert WordVocab.from_counts(counts, 3).words == (UNK, SOS, EOS)
    assert WordVocab.from_counts(counts, 100).words == (UNK, SOS, EOS, "a", "b")
    assert WordVocab.from_counts({}, 10).vocab_size == 3
    with pytest.raises(ValueError):
        WordVocab.from_counts(counts, 2)
    with pytest.raises(ValueError):
        WordVocab.from_counts({"a\nb": 1}, 10)
    with pytest.raises(ValueError):
        WordVocab.from_counts({"": 1}, 10)


def test_from_counts_of_corpus_round_trips_through_text():
    counts = {}
    for line in _lines(os.path.join(ENVI_DIR, "iwslt15.tst2013.100.en")):
        for w in tokenize(line):
            counts[w] = counts.get(w, 0) + 1
    vocab = WordVocab.from_counts(counts, 200)
    assert vocab.vocab_size == 200
    again = WordVocab.from_text(vocab.to_text())
    assert again == vocab and not again.fixed_specials
    freq = [counts[w] for w in vocab.words[3:]]
    assert freq == sorted(freq, reverse=True)
    assert min(freq) >= max(c for w, c in counts.items() if w not in vocab)


# -- from_file / from_text ---------------------------------------------------------------------

@pytest.mark.parametrize("name,size", [("vocab.en", 17191), ("vocab.vi", 7709)])
def test_real_iwslt15_vocab_specials_moved_to_front(name, size):
    path = os.path.join(NMT_DIR, name)
    lines = _lines(path)
    assert lines[:3] == [EOS, UNK, SOS]  # the copy in circulation
    vocab = WordVocab.from_file(path)
    assert vocab.fixed_specials
    assert vocab.words[:3] == (UNK, SOS, EOS)
    assert len(set(vocab.words)) == len(vocab.words) == vocab.vocab_size == size
    assert list(vocab.words[3:]) == lines[3:]  # every other word keeps its id
    assert vocab.encode(lines[3] + " " + lines[-1]) == [3, size - 1]
    again = WordVocab.from_text(vocab.to_text())
    assert again == vocab and not again.fixed_specials


def test_real_iwslt15_vocab_nmt_prepend_would_break_tf_and_ours_does_not(tmp_path):
    """The documented reason for moving (not prepending) the specials, checked with TF."""
    lines = _lines(os.path.join(NMT_DIR, "vocab.vi"))
    nmt_fixed = tmp_path / "nmt_check_vocab.vi"
    nmt_fixed.write_text("".join(w + "\n" for w in [UNK, SOS, EOS] + lines), encoding="utf-8")
    with pytest.raises(tf.errors.FailedPreconditionError, match="different value for same key"):
        _tf_table(str(nmt_fixed))

    vocab = WordVocab.from_file(os.path.join(NMT_DIR, "vocab.vi"))
    ours = tmp_path / "ours.vi"
    ours.write_text(vocab.to_text(), encoding="utf-8")
    table = _tf_table(str(ours))
    probe = list(vocab.words) + ["not-a-word", "Khoa"]
    got = table.lookup(tf.constant([w.encode("utf-8") for w in probe])).numpy().tolist()
    assert got == [vocab.id_of(w) for w in probe]
    assert got[:vocab.vocab_size] == list(range(vocab.vocab_size))


@pytest.mark.parametrize("name", ["iwslt15.vocab.100.en", "iwslt15.vocab.100.vi"])
def test_nmt_fixture_vocab_unchanged(name):
    path = os.path.join(ENVI_DIR, name)
    vocab = WordVocab.from_file(path)
    assert not vocab.fixed_specials
    assert vocab.vocab_size == 100
    with open(path, encoding="utf-8") as f:
        assert vocab.to_text() == f.read()


def test_from_text_edge_cases():
    canonical = WordVocab([UNK, SOS, EOS, "a", "b"])
    assert WordVocab.from_text("<unk>\r\n<s>\r\n</s>\r\na\r\nb\r\n") == canonical  # CRLF
    assert WordVocab.from_text("<unk>\n<s>\n</s>\na\nb") == canonical  # no final newline
    assert WordVocab.from_text("\ufeff<unk>\n<s>\n</s>\na\nb\n") == canonical  # BOM
    for text in ("a\n</s>\nb\n<unk>\n<s>\n", "<unk>\n<s>\n</s>\na\n<s>\nb\n",
                 "a\nb\n", "<s>\n<unk>\n</s>\na\n</s>\nb\n"):
        vocab = WordVocab.from_text(text)
        assert vocab == canonical and vocab.fixed_specials, text
    assert not WordVocab.from_text(canonical.to_text()).fixed_specials
    with pytest.raises(ValueError, match="lines 4 and 6"):
        WordVocab.from_text("<unk>\n<s>\n</s>\na\nb\na\n")
    with pytest.raises(ValueError):
        WordVocab([EOS, UNK, SOS, "a"])
    with pytest.raises(ValueError):
        WordVocab([UNK, SOS, EOS, "a", "a"])


def test_from_file_rejects_non_utf8(tmp_path):
    path = tmp_path / "v"
    path.write_bytes(b"<unk>\n<s>\n</s>\n\xff\n")
    with pytest.raises(ValueError, match="not UTF-8"):
        WordVocab.from_file(str(path))


# -- encode / decode ---------------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["en", "vi"])
def test_encode_matches_nmt_lookup_and_decode_round_trips(lang):
    vocab_file = os.path.join(ENVI_DIR, "iwslt15.vocab.100." + lang)
    vocab = WordVocab.from_file(vocab_file)
    table = _tf_table(vocab_file)
    lines = _lines(os.path.join(ENVI_DIR, "iwslt15.tst2013.100." + lang))
    total_oov = 0
    for line, words in zip(lines, _tf_split(lines)):
        expected = table.lookup(tf.constant([w.encode("utf-8") for w in words],
                                            dtype=tf.string)).numpy().tolist()
        ids = vocab.encode(line)
        assert ids == expected
        ids2, n_oov = vocab.encode_with_oov(line)
        assert ids2 == ids
        assert n_oov == sum(w not in vocab for w in words)
        total_oov += n_oov
        assert vocab.decode(ids) == " ".join(w if w in vocab else UNK for w in words)
    assert total_oov > 0  # a 100-word vocabulary: the corpus has plenty of OOV words


def test_encode_oov_and_decode_errors():
    vocab = WordVocab([UNK, SOS, EOS, "hello", "world"])
    assert vocab.encode("hello  big world") == [3, 0, 4]
    assert vocab.encode_with_oov("hello big <unk> world") == ([3, 0, 0, 4], 1)
    assert vocab.decode([1, 3, 0, 4, 2]) == "<s> hello <unk> world </s>"
    assert vocab.decode([]) == ""
    with pytest.raises(ValueError):
        vocab.decode([5])
    with pytest.raises(ValueError):
        vocab.decode([-1])
