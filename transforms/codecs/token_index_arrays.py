"""The arrays a `subword_index.TokenIndex` reads, made from the index's text codes, its suffix
array and its tokens' counts, at build and again at load; and strings of its text, decoded
from the codes.

Why a module of its own: the index file stores only what cannot be made again cheaply (the
codes, the suffix array, its capped LCP and one count a token: 67 MB of the full bench's zh
index, 172 MB when it stored every array), so a loader derives the rest (the inverse suffix
array, the token starts, each suffix's first character, what is left of its token and the
token's count) exactly as the build does, from this one place. The derivation is one
compiled pass over the text writing narrow arrays by suffix rank: the build's numpy version
held three int64 arrays of the text's length at once (74 MB each at full size) beside the
index, on the process that is the job's largest (issue 49). For the same reason the index
keeps no copy of its text as a Python string (37 MB of UTF-32 at full size, in every process
holding the zh index): the strings a selection accepts are decoded from the codes.

numpy and numba only; no Beam.
"""

from typing import Any, Optional

import numba
import numpy as np

_NJIT = dict(cache=True, nogil=True)
# strings decoded from the codes at once (`strings_at`): at most ~200 characters each, so a
# few MB of temporary arrays
STRINGS_PER_DECODE = 4096


@numba.njit(**_NJIT)
def _by_rank(codes, isa, counts, cap, remaining, weights):
    """For every position p of token t (ended by the separator at e): `remaining[isa[p]]` =
    min(e - p, cap), `weights[isa[p]]` = counts[t] (the separator's own: 0, counts[t])."""
    token = 0
    start = 0
    for p in range(len(codes)):
        if codes[p] == 0:
            w = counts[token]
            for q in range(start, p + 1):
                r = isa[q]
                left = p - q
                remaining[r] = left if left < cap else cap
                weights[r] = w
            token += 1
            start = p + 1


def position_type(n: int) -> Any:
    """The integer type of a position or rank of a text of `n` positions."""
    return np.int32 if n < 2 ** 31 else np.int64


def span_type(span: Optional[int], n: int) -> Any:
    """The type of window lengths and LCPs, which never exceed `span`: one byte when it is
    short."""
    return np.uint8 if span is not None and span < 256 else position_type(n)


def capped(values: np.ndarray, span: Optional[int], n: int) -> np.ndarray:
    """`values` capped at `span` (None: not capped), in `span_type`."""
    if span is not None:
        values = np.minimum(values, span)
    return values.astype(span_type(span, n), copy=False)


def count_type(counts: np.ndarray) -> Any:
    return np.int32 if counts.size == 0 or counts.max() < 2 ** 31 else np.int64


def derived_arrays(codes: np.ndarray, sa: np.ndarray, counts: Any, span: Optional[int]
                   ) -> dict[str, np.ndarray]:
    """`isa`, `starts`, `first`, `remaining` and `weights` (see `TokenIndex`) of a text of
    `codes` (0 after each token) with suffix array `sa` and one count per token, in text
    order (`counts`)."""
    n = len(codes)
    isa = np.empty(n, sa.dtype)
    isa[sa] = np.arange(n, dtype=sa.dtype)
    separators = np.flatnonzero(codes == 0)
    starts = np.zeros(len(separators), np.int64)
    starts[1:] = separators[:-1] + 1
    del separators
    counts = np.asarray(counts, np.int64)
    counts = counts.astype(count_type(counts), copy=False)
    remaining = np.empty(n, span_type(span, n))
    weights = np.empty(n, counts.dtype)
    cap = span if span is not None else n
    _by_rank(codes, isa, counts, cap, remaining, weights)
    return {"isa": isa, "starts": starts, "first": codes[sa], "remaining": remaining,
            "weights": weights}


def token_counts(weights: np.ndarray, isa: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The count of each token, in text order, back from `weights` (by rank)."""
    return weights[isa[starts]]


def text_of(codes: np.ndarray, points: np.ndarray) -> str:
    """The text of `codes` (code c is code point points[c - 1]; 0, a separator, is "\0")."""
    decoded = np.zeros(len(codes), np.uint32)
    known = codes != 0
    decoded[known] = points[codes[known].astype(np.int64) - 1]
    return decoded.tobytes().decode("utf-32-le", "surrogatepass")


def strings_at(codes: np.ndarray, points: np.ndarray, positions: np.ndarray,
               lengths: np.ndarray) -> list[str]:
    """The strings of the text of `codes` (`text_of`) at `positions`, of `lengths`, decoded a
    chunk at a time."""
    strings: list[str] = []
    for first in range(0, len(positions), STRINGS_PER_DECODE):
        at = positions[first:first + STRINGS_PER_DECODE]
        lens = lengths[first:first + STRINGS_PER_DECODE]
        offsets = np.zeros(len(lens) + 1, np.int64)
        np.cumsum(lens, out=offsets[1:])
        where = np.repeat(at - offsets[:-1], lens) + np.arange(offsets[-1])
        text = text_of(codes[where], points)
        bounds = offsets.tolist()
        strings.extend(map(text.__getitem__, map(slice, bounds, bounds[1:])))
    return strings
