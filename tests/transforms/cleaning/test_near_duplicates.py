"""transforms/cleaning/near_duplicates.py and decontaminate.py against their references:
datasketch 2.0.0's MinHash and MinHashLSH parameters, and a normalization written here."""

import unicodedata

import numpy as np
import pytest

from transforms.cleaning.decontaminate import OverlapIndex, labels
from transforms.cleaning.near_duplicates import (MinHasher, MinhashOptions, components,
                                                 lsh_params, normalize, shingles)

datasketch = pytest.importorskip("datasketch")


def reference_normalize(text):
    """Bifixer's aggressive key without unidecode, written out: NFKC, lower, letters."""
    text = unicodedata.normalize("NFKC", text).lower()
    return "".join(c for c in text if unicodedata.category(c).startswith("L"))


@pytest.mark.parametrize("text", [
    "Hello, World!", "  HELLO world 42 ", "ＦＵＬＬ　ｗｉｄｔｈ", "Ça va? Très bien.",
    "你好，世界！", "İstanbul", "ﬁnal ﬂow", "tab\there", "", "123 !!"])
def test_normalize_equals_the_reference(text):
    assert normalize(text) == reference_normalize(text)


@pytest.mark.parametrize("seed,perms", [(1, 128), (7, 64), (0, 256)])
def test_signatures_equal_datasketch(seed, perms):
    hasher = MinHasher(MinhashOptions(permutations=perms, seed=seed, bands=8))
    for pair in [("The cat sat on the mat.", "Die Katze saß."), ("a", "b"),
                 ("Ünïcödé text, here", "日本語のテキスト")]:
        grams = shingles(pair, (0, 1), 5)
        expected = datasketch.MinHash(num_perm=perms, seed=seed)
        expected.update_batch(grams)
        assert np.array_equal(hasher.signature(grams), expected.hashvalues)


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.65, 0.8, 0.85, 0.9, 0.95])
def test_lsh_params_are_datasketch_choice(threshold):
    lsh = datasketch.MinHashLSH(threshold=threshold, num_perm=128)
    assert lsh_params(threshold, 128) == (lsh.b, lsh.r)


def test_shingles_per_side_and_pair():
    assert shingles(("AbC, d", "x"), (0,), 3) == [b"abc", b"bcd"]
    assert shingles(("ab", "XY!"), (0, 1), 5) == [b"0:ab", b"1:xy"]
    assert shingles(("12", "..."), (0, 1), 5) == []


def test_components_keep_the_least_member():
    got = components([(b"c", b"d"), (b"b", b"c"), (b"x", b"y"), (b"a", b"d")])
    assert got == {b"b": b"a", b"c": b"a", b"d": b"a", b"y": b"x"}


def test_test_set_index_lines_and_ngrams():
    words = " ".join("w%d" % i for i in range(20))
    index = OverlapIndex([("t:a", "Hello, World!\n" + words + "\n42\n"), ("t:b", "other")], 13)
    assert index.reason("hello world", "x") == "t:a"
    assert index.reason("x", "OTHER.") == "t:b"
    assert index.reason("say " + " ".join("w%d" % i for i in range(5, 18)) + " end", "") == "t:a"
    assert index.reason(" ".join("w%d" % i for i in range(5, 17)), "") is None  # 12 words
    assert index.reason("43", "") is None  # a line of digits matches no line of digits
    assert labels(["/a/test.en", "/b/test.en", "/b/x.de"]) == ["/a/test.en", "/b/test.en",
                                                               "x.de"]
