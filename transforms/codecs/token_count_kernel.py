"""T2T's tokens of many lines counted in one compiled call, weighted by how often each line counts.

Counting a vocabulary sample was ~70% `re.findall` + `Counter`: a Python string per run and a
dictionary update per token. `TokenCounter.add` does it in one numba call over the code points
of a batch of lines, with the encode kernel's pieces (`subword_kernel`): runs split with the
tokenizer's alphanumeric table, a single space between two other runs dropped (as
`tokenizer.encode` does; a first or last one is a token), each run hashed into an
open-addressing table that holds its count, each line's tokens added `times` times (the plan's
line multiplicities: token counts are additive over lines). A new token's code points are
appended to one pool, so the pool is every distinct token in order of first occurrence and
the result is three flat values, `TokenArrays` (the tokens' text, where each ends, their
counts): it pickles as two arrays and a string, not as a dictionary of 10^5 entries, and the
parts of a file are added (`merge_token_arrays`) by the same call treating each token as one
run (`whole`).

The regular-expression counter (`tokenizer.count_tokens`) stays the reference: the tests hold
the two equal on real corpora and on arbitrary text.
"""

from collections.abc import Iterable, Sequence
from typing import Any, Optional

import numba
import numpy as np

from transforms.codecs.subword_kernel import _find, _hash, _rehash, alnum_table
from transforms.codecs.token_arrays import TokenArrays

_NJIT = dict(cache=True, nogil=True)
_SPACE = 32
# A table row: the token's hash, its start in the pool, its length (0: an empty slot) -- the
# columns `subword_kernel._find` reads -- and its count.
_HASH, _START, _LEN, _COUNT = range(4)
_COLUMNS = 4
_TOKENS, _POOL = range(2)  # `used`: tokens, pool code points
BATCH_CHARS = 1 << 22  # characters of lines counted in one call by `count_weighted` (the
# code points take 4 bytes each)


def code_points(strings: Sequence[str]) -> tuple[Any, Any]:
    """The code points of `strings` joined (int32, a view of their UTF-32: no copy), and
    where each string ends."""
    joined = "".join(strings).encode("utf-32-le", "surrogatepass")
    ends = np.cumsum(np.fromiter(map(len, strings), np.int64, len(strings)))
    return np.frombuffer(joined, np.int32), ends


@numba.njit(**_NJIT)
def _count_lines(codes, line_ends, times, first, whole, alnum, table, pool, used):
    """Adds the tokens of lines `first`, ... (`codes[line_ends[i-1]:line_ends[i]]`), each
    `times[i]` times, to `table`; with `whole` each line is one token. Returns the line it
    stopped before: `len(line_ends)`, or a line the table or pool has no room for (the lines
    before it are counted)."""
    for line in range(first, len(line_ends)):
        ls = line_ends[line - 1] if line else 0
        le = line_ends[line]
        w = times[line]
        if w == 0 or le == ls:
            continue
        if 2 * (used[_TOKENS] + le - ls) > len(table) or used[_POOL] + le - ls > len(pool):
            return line
        r = ls
        while r < le:
            if whole:
                k = le
            else:
                kind = alnum[codes[r]]
                k = r + 1
                while k < le and alnum[codes[k]] == kind:
                    k += 1
                if k - r == 1 and codes[r] == _SPACE and r != ls and k != le:
                    r = k  # a single space between two runs: no token
                    continue
            h = _hash(codes, r, k)
            s = _find(codes, r, k, h, table, pool)
            if table[s, _LEN] == 0:
                p = used[_POOL]
                for j in range(r, k):
                    pool[p + j - r] = codes[j]
                table[s, _HASH] = h
                table[s, _START] = p
                table[s, _LEN] = k - r
                used[_TOKENS] += 1
                used[_POOL] = p + k - r
            table[s, _COUNT] += w
            r = k
    return len(line_ends)


class TokenCounter:
    """Counts T2T's tokens of batches of lines (`add`), or adds `TokenArrays`
    (`add_arrays`); `result` gives the counts so far."""

    _INITIAL_TOKENS = 1 << 12

    def __init__(self) -> None:
        self._alnum = alnum_table()
        self._table = np.zeros((2 * self._INITIAL_TOKENS, _COLUMNS), np.int64)
        self._pool = np.empty(16 * self._INITIAL_TOKENS, np.int32)
        self._used = np.zeros(2, np.int64)

    def _count(self, codes: Any, ends: Any, times: Any, whole: bool) -> None:
        first = 0
        while first < len(ends):
            first = _count_lines(codes, ends, times, first, whole, self._alnum, self._table,
                                 self._pool, self._used)
            if first == len(ends):
                return
            length = int(ends[first] - (ends[first - 1] if first else 0))
            tokens, pool_used = self._used.tolist()
            if 2 * (tokens + length) > len(self._table):
                size = len(self._table)
                while 2 * (tokens + length) > size:
                    size *= 2
                old, self._table = self._table, np.zeros((size, _COLUMNS), np.int64)
                _rehash(old, self._table)
            if pool_used + length > len(self._pool):
                pool = np.empty(max(2 * len(self._pool), pool_used + length), np.int32)
                pool[:pool_used] = self._pool[:pool_used]
                self._pool = pool

    def add(self, lines: Sequence[str], times: Optional[Any] = None) -> None:
        """Counts the tokens of `lines`, each line's `times[i]` times (default once)."""
        if not lines:
            return
        codes, ends = code_points(lines)
        weights = (np.ones(len(lines), np.int64) if times is None
                   else np.asarray(times, np.int64))
        self._count(codes, ends, weights, False)

    def add_arrays(self, counts: TokenArrays) -> None:
        """Adds counts already made (each of its tokens is one token here)."""
        if len(counts):
            codes, _ = code_points([counts.text])
            self._count(codes, counts.ends, counts.counts, True)

    def result(self) -> TokenArrays:
        tokens, pool_used = self._used.tolist()
        rows = self._table[self._table[:, _LEN] > 0]
        rows = rows[np.argsort(rows[:, _START], kind="stable")]
        assert len(rows) == tokens
        text = self._pool[:pool_used].astype(np.uint32).tobytes().decode(
            "utf-32-le", "surrogatepass")
        return TokenArrays(text, np.cumsum(rows[:, _LEN]), rows[:, _COUNT].copy())


def merge_token_arrays(parts: Iterable[TokenArrays]) -> TokenArrays:
    """The sum of several `TokenArrays` (tokens in order of first occurrence over them)."""
    counter = TokenCounter()
    for part in parts:
        counter.add_arrays(part)
    return counter.result()


def count_weighted(counted_lines: Iterable[tuple[str, int]]
                   ) -> tuple[TokenArrays, int, int]:
    """(token counts, lines, characters) of (line, times) pairs, each line counted `times`
    times (0: not at all), in calls of about `BATCH_CHARS` characters: what
    `token_counts.count_counted_lines` gives with `tokenizer.count_tokens`, as arrays."""
    counter = TokenCounter()
    lines = chars = 0
    batch: list[str] = []
    times: list[int] = []
    held = 0
    for line, n in counted_lines:
        if not n:
            continue
        batch.append(line)
        times.append(n)
        held += len(line)
        if held >= BATCH_CHARS:
            lines, chars = _add_batch(counter, batch, times, lines, chars)
            batch, times, held = [], [], 0
    lines, chars = _add_batch(counter, batch, times, lines, chars)
    return counter.result(), lines, chars


def _add_batch(counter: TokenCounter, batch: list[str], times: list[int], lines: int,
               chars: int) -> tuple[int, int]:
    weights = np.array(times, np.int64)
    counter.add(batch, weights)
    lengths = np.fromiter(map(len, batch), np.int64, len(batch))
    return lines + int(weights.sum()), chars + int(np.dot(lengths, weights))


def warm_up() -> None:
    """Runs the compiled loop once, so numba has it loaded before the first sample."""
    counter = TokenCounter()
    counter.add(["ab ba", "c_d"], [1, 2])
    merge_token_arrays([counter.result()])
