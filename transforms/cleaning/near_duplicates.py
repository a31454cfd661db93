"""Near-duplicate keys: the Bifixer-like normalization and datasketch-compatible MinHash-LSH.

`normalize` is what `--dedup normalized`, `--dedup minhash` and `--decontaminate` compare.
It follows Bifixer's `--aggressive_dedup` hash, which keeps only the letters (Unicode
category L) of the lowercased side: here NFKC first (full-width and compatibility forms fold
to their plain letters), then `str.lower`, then only the letters are kept, so punctuation,
whitespace, digits and symbols never tell two pairs apart. What Bifixer does that this does
not: `unidecode` transliteration to ASCII (it would make "café" equal "cafe", and every
Chinese line its pinyin), and its restorative fixes before hashing (mojibake, HTML entities
and tags, punctuation normalization, orthography, re-segmentation). A pair's key joins its
compared sides with a tab, as Bifixer's does.

MinHash follows datasketch 2.0.0's default scheme ("affine32") bit for bit, so a signature
equals `datasketch.MinHash(num_perm, seed).update_batch(shingles)`'s: a shingle's hash is the
first 4 bytes of its SHA-1 (little-endian), mixed by MurmurHash3's 32-bit finalizer, then
permuted by `a * h + b` modulo 2**32 for each of `num_perm` (a, b), drawn from numpy's
`RandomState(seed)` as datasketch draws them (a odd). The LSH bands are consecutive runs of
`rows` values, as `MinHashLSH` cuts them, and `lsh_params` picks (bands, rows) by the same
criterion as `MinHashLSH` (the least equally weighted false positive and negative areas),
its integrals computed exactly by Gauss-Legendre quadrature. Shingles are the character
n-grams of the normalized side (a shorter side is one shingle); per pair, each side's are
tagged with its side. A pair with no shingle (no letters) never joins a group.
"""

import dataclasses
import hashlib
import struct
import unicodedata
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import regex

NOT_LETTER = regex.compile(r"[^\p{L}]+")
SCOPES = ("pair", "source", "target")
SCOPE_SIDES = {"pair": (0, 1), "source": (0,), "target": (1,)}
_FMIX = (np.uint32(16), np.uint32(0x85EBCA6B), np.uint32(13), np.uint32(0xC2B2AE35))


def normalize(text: str) -> str:
    """A side as the near-duplicate modes compare it: NFKC, lowercased, letters only."""
    return NOT_LETTER.sub("", unicodedata.normalize("NFKC", text).lower())


def pair_key(sides: Sequence[str], scope_sides: Sequence[int]) -> str:
    """The normalized text of the compared sides of a pair, tab-joined (Bifixer's key)."""
    return "\t".join(normalize(sides[side]) for side in scope_sides)


def shingles(sides: Sequence[str], scope_sides: Sequence[int], size: int) -> List[bytes]:
    """The distinct character `size`-grams of each compared normalized side, as bytes, in
    first-seen order; with two sides each tagged "0:" or "1:" with its side."""
    seen: Dict[bytes, None] = {}
    for side in scope_sides:
        text = normalize(sides[side])
        tag = "%d:" % side if len(scope_sides) > 1 else ""
        if not text:
            continue
        grams = [text] if len(text) <= size else [
            text[i:i + size] for i in range(len(text) - size + 1)]
        for gram in grams:
            seen.setdefault((tag + gram).encode("utf-8", "surrogatepass"), None)
    return list(seen)


def _fmix32(values: np.ndarray) -> np.ndarray:
    s1, m1, s2, m2 = _FMIX
    values = values ^ (values >> s1)
    values = values * m1
    values = values ^ (values >> s2)
    values = values * m2
    return values ^ (values >> s1)


def _integral(threshold: float, bands: int, rows: int, nodes: Tuple[np.ndarray, np.ndarray]
              ) -> Tuple[float, float]:
    """(false positive area over [0, threshold], false negative area over [threshold, 1])
    of `bands` x `rows` LSH: polynomials of degree bands*rows, exact with enough nodes."""
    x, w = nodes

    def area(lo: float, hi: float, positive: bool) -> float:
        s = (hi - lo) / 2 * x + (hi + lo) / 2
        hit = 1 - (1 - s ** rows) ** bands
        return float(np.sum(w * (hit if positive else 1 - hit)) * (hi - lo) / 2)
    return area(0.0, threshold, True), area(threshold, 1.0, False)


def lsh_params(threshold: float, num_perm: int) -> Tuple[int, int]:
    """(bands, rows) with the least sum of the false positive and false negative areas, the
    first such in (bands, rows) order: what datasketch's MinHashLSH chooses by default."""
    nodes = np.polynomial.legendre.leggauss(num_perm // 2 + 2)
    best, chosen = float("inf"), (1, 1)
    for bands in range(1, num_perm + 1):
        for rows in range(1, num_perm // bands + 1):
            fp, fn = _integral(threshold, bands, rows, nodes)
            if 0.5 * fp + 0.5 * fn < best:
                best, chosen = 0.5 * fp + 0.5 * fn, (bands, rows)
    return chosen


@dataclasses.dataclass(frozen=True)
class MinhashOptions:
    """`--dedup minhash`'s settings: `bands` 0 picks them as MinHashLSH does (`lsh_params`)."""
    scope_sides: Tuple[int, ...] = (0, 1)
    threshold: float = 0.8
    shingle: int = 5
    permutations: int = 128
    bands: int = 0
    seed: int = 1

    def layout(self) -> Tuple[int, int]:
        """(bands, rows) of the LSH index."""
        if self.bands:
            return self.bands, self.permutations // self.bands
        return lsh_params(self.threshold, self.permutations)


class MinHasher:
    """Signatures and LSH band keys of pairs under `options` (the permutations are drawn
    once, on construction: build it in a DoFn's setup)."""

    def __init__(self, options: MinhashOptions) -> None:
        self.options = options
        generator = np.random.RandomState(options.seed)
        n = options.permutations
        self._a = generator.randint(0, 1 << 31, n, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
        self._b = generator.randint(0, 1 << 32, n, dtype=np.uint32)
        self.bands, self.rows = options.layout()

    def signature(self, grams: Iterable[bytes]) -> Optional[np.ndarray]:
        """The uint32 MinHash of the shingles `grams`, or None when there are none."""
        hashes = [struct.unpack("<I", hashlib.sha1(g).digest()[:4])[0] for g in grams]
        if not hashes:
            return None
        mixed = _fmix32(np.array(hashes, dtype=np.uint32).reshape(-1, 1))
        return (mixed * self._a + self._b).min(axis=0)

    def pair_signature(self, sides: Sequence[str]) -> Optional[np.ndarray]:
        return self.signature(shingles(sides, self.options.scope_sides, self.options.shingle))

    def band_keys(self, group: bytes, signature: np.ndarray) -> List[bytes]:
        """One 16-byte key per band: equal keys mean equal band values within `group`."""
        rows = self.rows
        return [hashlib.blake2b(group + struct.pack(">H", band)
                                + signature[band * rows:(band + 1) * rows].tobytes(),
                                digest_size=16).digest() for band in range(self.bands)]



def similar(first: bytes, second: bytes, threshold: float) -> bool:
    """Whether two signatures (as `tobytes`) estimate a Jaccard of at least `threshold`,
    the estimate computed as datasketch's `MinHash.jaccard` computes it."""
    a, b = np.frombuffer(first, dtype=np.uint32), np.frombuffer(second, dtype=np.uint32)
    return float(np.count_nonzero(a == b)) / float(len(a)) >= threshold


def components(edges: Iterable[Tuple[bytes, bytes]]) -> Dict[bytes, bytes]:
    """{member: its component's least member} of every member of an edge but the least:
    union-find over `edges`, the least (in byte order: input order) the root."""
    parent: Dict[bytes, bytes] = {}

    def find(x: bytes) -> bytes:
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while x != root:
            parent[x], x = root, parent.get(x, x)
        return root

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            low, high = min(ra, rb), max(ra, rb)
            parent[high] = low
            parent.setdefault(low, low)
    return {x: find(x) for x in list(parent) if find(x) != x}
