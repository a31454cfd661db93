"""A suffix-array index of a vocabulary's distinct tokens: T2T's refinement in linear time.

Tensor2Tensor's `build_from_token_counts` iteration (see `subword_learner`) segments every
escaped token with the current vocabulary, counts every substring that starts at a segment
start (up to `max_subtoken_length - 1` characters), and accepts strings longest first,
subtracting an accepted string's count from its prefixes. Done as T2T does it that is
quadratic in the token length: Chinese runs of Han characters are single tokens.

Here the distinct escaped tokens are concatenated once into an integer array (characters
ranked, 0 between tokens) and suffix-sorted (`pydivsufsort`), with the longest common prefix
(LCP) of neighbouring suffixes. An iteration then needs no substring at all:

* Segmentation: the suffixes that begin with a vocabulary string form one range of the
  suffix array, and the ranges of strings that are prefixes of one another nest. Marking the
  ranges shortest first gives, for every position, the longest vocabulary string starting
  there; greedy longest-match segmentation is then a walk from each token start.
* Counting and selection: the *windows* (the substring from a segment start to at most
  `max_subtoken_length - 1` characters, the strings whose prefixes T2T counts) come out of the
  suffix array already sorted, with their LCPs. Sorted strings and their LCPs describe the
  trie of all their prefixes; the count of a prefix is the summed count of the windows below
  it. Longest-first acceptance is a bottom-up pass over that trie: a node is accepted when its
  count less what accepted descendants took (`taken`) reaches `min_count`; it then passes its
  whole count up as taken, otherwise it passes its own `taken`. A chain of trie nodes with one
  child and no window ending inside has one count, so only its deepest node can be accepted:
  the pass visits only branching and window-end nodes, O(windows) with a stack.

Both loops are compiled with numba (numpy, numba, pydivsufsort; no Beam, no TensorFlow). The
result is exactly `subword_learner.select_partition`'s (tests compare them on real corpora and
random strings); partitions are contiguous ranges of the suffix array that never split a
two-character prefix, so partial results merge like the string-keyed ones.
"""

import io
from collections.abc import Iterable, Sequence
from typing import IO, Any, Optional, Union

import numba
import numpy as np
import pydivsufsort

from transforms.codecs.index_text import escaped_tokens
from transforms.codecs.subword import Selection
from transforms.codecs.token_arrays import TokenArrays
from transforms.codecs.token_index_arrays import (capped, derived_arrays, position_type,
                                                  span_type, strings_at, token_counts)


_NJIT = dict(cache=True, nogil=True)

# accepted strings whose rank an index remembers (`TokenIndex.segment_marks`); a full-size
# search accepts a few hundred thousand distinct ones in all its probes
RANK_MEMO_LIMIT = 1 << 21


@numba.njit(**_NJIT)
def _pattern_ranges(codes, sa, patterns, offsets):
    """[lo, hi) of the suffixes starting with each pattern (binary search; 0 ends a token)."""
    count = len(offsets) - 1
    lo_out = np.empty(count, np.int64)
    hi_out = np.empty(count, np.int64)
    n = len(sa)
    for k in range(count):
        start, stop = offsets[k], offsets[k + 1]
        lo, hi = 0, n
        # lower bound: first suffix >= pattern
        while lo < hi:
            mid = (lo + hi) >> 1
            p = sa[mid]
            cmp = 0
            for j in range(start, stop):
                c = codes[p + j - start]
                if c != patterns[j]:
                    cmp = -1 if c < patterns[j] else 1
                    break
            if cmp < 0:
                lo = mid + 1
            else:
                hi = mid
        first = lo
        hi = n
        # upper bound: first suffix that does not start with the pattern
        while lo < hi:
            mid = (lo + hi) >> 1
            p = sa[mid]
            cmp = 0
            for j in range(start, stop):
                c = codes[p + j - start]
                if c != patterns[j]:
                    cmp = -1 if c < patterns[j] else 1
                    break
            if cmp <= 0:
                lo = mid + 1
            else:
                hi = mid
        lo_out[k] = first
        hi_out[k] = lo
    return lo_out, hi_out


@numba.njit(**_NJIT)
def _ranges_around(lcp_next, ranks, lengths):
    """[lo, hi) of the suffixes starting with each string, from one rank whose suffix starts
    with it: the neighbours sharing at least its length. Linear in the ranges' sizes, which
    painting them costs anyway, with reads in order (a binary search per string jumps
    through the whole text)."""
    count = len(ranks)
    n = len(lcp_next)
    lo_out = np.empty(count, np.int64)
    hi_out = np.empty(count, np.int64)
    for k in range(count):
        d = lengths[k]
        lo = ranks[k]
        while lo > 0 and lcp_next[lo - 1] >= d:
            lo -= 1
        hi = ranks[k] + 1
        while hi < n and lcp_next[hi - 1] >= d:
            hi += 1
        lo_out[k] = lo
        hi_out[k] = hi
    return lo_out, hi_out


@numba.njit(**_NJIT)
def _segment_starts(token_starts, codes, isa, los, his, lengths, longest):
    """Marks (by suffix rank) the greedy longest-match segment starts of every token.

    `los`/`his`/`lengths` are the suffix-array ranges of the vocabulary strings, sorted by
    length: painting them in that order leaves, at each rank, the longest string that prefixes
    the suffix (in `longest`, by rank). That is then read in text order (one pass whose reads
    do not wait on each other), so the walk from each token start reads memory in order, and
    the segment starts found are marked by rank at the end. Returns (marks, ok); ok is False
    if a position has no matching string.
    """
    n = len(codes)
    longest[:] = 0
    for k in range(len(los)):
        length = lengths[k]
        for r in range(los[k], his[k]):
            longest[r] = length
    by_position = np.empty(n, longest.dtype)
    for p in range(n):
        by_position[p] = longest[isa[p]]
    marks = np.zeros(n, np.bool_)  # by suffix rank
    for t in range(len(token_starts)):
        p = token_starts[t]
        while codes[p] != 0:
            step = by_position[p]
            if step == 0:
                return marks, False
            marks[isa[p]] = True
            p += step
    return marks, True


@numba.njit(**_NJIT)
def _push(depth, raw, taken, where, top, node_depth, rank):
    """Opens a trie node at `node_depth` on the stack (a depth-1 node first, under the root)."""
    if depth[top] == 0 and node_depth > 1:
        top += 1
        depth[top] = 1
        raw[top] = 0
        taken[top] = 0
        where[top] = rank
    top += 1
    depth[top] = node_depth
    raw[top] = 0
    taken[top] = 0
    where[top] = rank
    return top


@numba.njit(**_NJIT)
def _select(lcp_next, remaining, weights, first, marks, use_all, lo, hi, min_count,
            num_codes, stack_size, capacity):
    """Longest-first acceptance over the windows at suffix ranks [lo, hi).

    All arrays are in suffix-rank order. Returns (ranks, lengths, counts) of accepted strings
    of two or more characters, and per character code the count of windows starting with it
    and what accepted strings took from it. More than `capacity` accepted strings returns
    counts None-like: an empty `counts` array with ranks of length capacity + 1 (the caller
    retries with more room).
    """
    depth = np.zeros(stack_size, np.int64)
    raw = np.zeros(stack_size, np.int64)
    taken = np.zeros(stack_size, np.int64)
    where = np.zeros(stack_size, np.int64)
    char_raw = np.zeros(num_codes, np.int64)
    char_taken = np.zeros(num_codes, np.int64)
    acc_rank = np.empty(capacity, np.int64)
    acc_len = np.empty(capacity, np.int64)
    acc_cnt = np.empty(capacity, np.int64)
    accepted = 0
    top = 0
    big = np.int64(1) << 62
    run = big
    prev_len = 0
    have_prev = False
    for r in range(lo, hi + 1):
        last = r == hi
        if last:
            selected = True
        else:
            selected = first[r] != 0 and (use_all or marks[r])
        if selected:
            if last:
                length = 0
                h = 0
            else:
                length = remaining[r]
                h = min(run, prev_len, length) if have_prev else 0
            # Close the nodes deeper than the common prefix with the previous window.
            while depth[top] > h:
                d = depth[top]
                node_raw = raw[top]
                node_taken = taken[top]
                node_where = where[top]
                top -= 1
                if depth[top] < h:
                    top = _push(depth, raw, taken, where, top, h, node_where)
                if d >= 2:
                    if node_raw - node_taken >= min_count:
                        if accepted == capacity:
                            return (np.empty(capacity + 1, np.int64), acc_len[:0], acc_cnt[:0],
                                    char_raw, char_taken)
                        acc_rank[accepted] = node_where
                        acc_len[accepted] = d
                        acc_cnt[accepted] = node_raw - node_taken
                        accepted += 1
                        taken[top] += node_raw
                    else:
                        taken[top] += node_taken
                    raw[top] += node_raw
                else:
                    c = first[node_where]
                    char_raw[c] += node_raw
                    char_taken[c] += node_taken
            if last:
                break
            if depth[top] < length:
                top = _push(depth, raw, taken, where, top, length, r)
            raw[top] += weights[r]
            prev_len = length
            have_prev = True
            run = big
        if not last:
            v = lcp_next[r]
            if v < run:
                run = v
    return (acc_rank[:accepted], acc_len[:accepted], acc_cnt[:accepted], char_raw, char_taken)


class TokenIndex:
    """The escaped distinct tokens of one vocabulary, suffix-sorted, with their counts.

    By text position (n = total escaped characters + one separator after each token):
      codes      character rank + 1, 0 after each token;
      isa        the suffix rank of each position;
      starts     the first position of each token.
    By suffix rank r (the suffix starting at position sa[r]):
      sa         the suffix array;
      lcp_next   LCP of suffixes r and r + 1, capped at the window span;
      first      codes[sa[r]], the suffix's first character (0 for a separator);
      remaining  characters left in the token, capped at the window span: the window length
                 when the suffix starts a segment;
      weights    the count of the token the suffix starts in.
    `chars` maps a code back to its character (code c is chars[c - 1]).
    """

    ARRAYS = ("codes", "isa", "starts", "sa", "lcp_next", "first", "remaining", "weights")
    codes: np.ndarray
    isa: np.ndarray
    starts: np.ndarray
    sa: np.ndarray
    lcp_next: np.ndarray
    first: np.ndarray
    remaining: np.ndarray
    weights: np.ndarray

    def __init__(self, chars: Iterable[str], max_subtoken_length: Optional[int],
                 **arrays: np.ndarray) -> None:
        self.chars = list(chars)
        self.max_subtoken_length = max_subtoken_length
        for name in self.ARRAYS:
            setattr(self, name, arrays[name])
        # sorted code points of the characters, to encode vocabulary strings
        self._points = np.array([ord(c) for c in self.chars], np.int64)
        self._partitions: dict[int, list[tuple[int, int]]] = {}
        self._capacity = 4096
        # a suffix rank of every string `select` accepted: where its range is (see
        # `segment_marks`); any such rank serves whichever probe or thread asks
        self._rank_of: dict[str, int] = {}

    # -- building and storing ---------------------------------------------------------------

    @classmethod
    def build(cls, token_counts: Union[Iterable[tuple[str, int]], TokenArrays],
              max_subtoken_length: Optional[int]) -> "TokenIndex":
        """Index of (token, count) pairs or `TokenArrays` (distinct tokens; order does not
        matter)."""
        # Each token is followed by one separator slot; "\0" is a placeholder overwritten below.
        points, lengths, counts = escaped_tokens(token_counts)
        span = None if max_subtoken_length is None else max(0, max_subtoken_length - 1)
        n = len(points)
        is_sep = np.zeros(n, np.bool_)
        is_sep[np.cumsum(lengths + 1) - 1] = True  # the separator after each token
        del lengths
        chars_points = np.flatnonzero(np.bincount(points[~is_sep], minlength=1))  # no sort
        code_type = np.uint16 if len(chars_points) < 2 ** 16 - 1 else np.uint32
        rank = np.zeros(int(chars_points[-1]) + 1 if len(chars_points) else 1, code_type)
        rank[chars_points] = np.arange(1, len(chars_points) + 1)  # a lookup, not a search
        codes = rank[points]
        del points
        codes[is_sep] = 0
        del is_sep
        chars = [chr(int(c)) for c in chars_points]
        if n:
            sa = pydivsufsort.divsufsort(codes).astype(position_type(n), copy=False)
            lcp_next = capped(pydivsufsort.kasai(codes, sa), span, n)
        else:
            sa = np.zeros(0, np.int32)
            lcp_next = np.zeros(0, span_type(span, 0))
        return cls(chars, max_subtoken_length, codes=codes, sa=sa, lcp_next=lcp_next,
                   **derived_arrays(codes, sa, counts, span))

    # What a file holds: the rest is derived again on load (`token_index_arrays`).
    STORED = ("codes", "sa", "lcp_next")

    def save(self, fileobj: IO[bytes]) -> None:
        """Writes the index to a binary file object (numpy .npz): the codes, the suffix
        array, its capped LCP and each token's count."""
        # Characters as code points: a numpy `<U` array drops trailing NULs, so a lone "\0"
        # (a NUL byte in the text is an ordinary character to T2T) would come back empty.
        np.savez(fileobj, chars=self._points.astype(np.uint32),
                 max_subtoken_length=np.array(-1 if self.max_subtoken_length is None
                                              else self.max_subtoken_length),
                 counts=token_counts(self.weights, self.isa, self.starts),
                 **{name: getattr(self, name) for name in self.STORED})

    @classmethod
    def load(cls, fileobj: Union[IO[bytes], bytes, bytearray]) -> "TokenIndex":
        """Reads an index written by `save` (a file object, or bytes)."""
        if isinstance(fileobj, (bytes, bytearray)):
            fileobj = io.BytesIO(fileobj)
        with np.load(fileobj, allow_pickle=False) as data:
            max_len = int(data["max_subtoken_length"])
            stored = {name: data[name] for name in cls.STORED}
            counts = data["counts"]
            chars = [chr(c) for c in data["chars"].tolist()]
        span = None if max_len < 0 else max(0, max_len - 1)
        return cls(chars, None if max_len < 0 else max_len, **stored,
                   **derived_arrays(stored["codes"], stored["sa"], counts, span))

    # -- what the refinement asks -------------------------------------------------------------

    @property
    def span(self) -> Optional[int]:
        m = self.max_subtoken_length
        return None if m is None else m - 1

    def partitions(self, num_partitions: int) -> list[tuple[int, int]]:
        """`num_partitions` contiguous suffix-rank ranges of about equal size.

        A boundary never falls between two suffixes sharing their first two characters within
        a window, so each string of two or more characters is counted in one range only.
        """
        if num_partitions in self._partitions:
            return self._partitions[num_partitions]
        n = len(self.sa)
        bounds = [0]
        if n and num_partitions > 1:
            # cut points: ranks r where suffixes r-1 and r share < 2 characters of their windows
            rem = self.remaining
            shared = np.minimum(self.lcp_next[:-1], np.minimum(rem[:-1], rem[1:]))
            cuts = np.flatnonzero(shared < 2) + 1
            for k in range(1, num_partitions):
                target = k * n // num_partitions
                i = np.searchsorted(cuts, target)
                if i < len(cuts):
                    cut = int(cuts[i])
                    if cut > bounds[-1]:
                        bounds.append(cut)
        bounds.append(n)
        ranges = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
        while len(ranges) < num_partitions:
            ranges.append((n, n))
        self._partitions[num_partitions] = ranges
        return ranges

    def _encode(self, strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Concatenated character codes of `strings` and their offsets (code K+1 = unknown)."""
        lengths = np.fromiter((len(s) for s in strings), np.int64, len(strings))
        offsets = np.zeros(len(strings) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        points = np.frombuffer("".join(strings).encode("utf-32-le", "surrogatepass"),
                               np.uint32).astype(np.int64)
        where = np.searchsorted(self._points, points)
        found = where < len(self._points)
        found[found] = self._points[where[found]] == points[found]
        codes = np.where(found, where + 1, len(self._points) + 1)
        return codes, offsets, lengths

    def segment_marks(self, vocab: Iterable[str]) -> np.ndarray:
        """Boolean per suffix rank: True where a segment starts under `vocab` (strings)."""
        # Strings a select accepted (nearly all of a refined vocabulary) have a known rank:
        # their ranges are found around it; the others (characters, reserved tokens) by
        # binary search.
        rank_of = self._rank_of
        ranked: list[str] = []
        ranks: list[int] = []
        searched: list[str] = []
        for string in vocab:
            if string:
                rank = rank_of.get(string)
                if rank is None:
                    searched.append(string)
                else:
                    ranked.append(string)
                    ranks.append(rank)
        patterns, offsets, searched_lengths = self._encode(searched)
        searched_los, searched_his = _pattern_ranges(self.codes, self.sa, patterns, offsets)
        ranked_lengths = np.fromiter(map(len, ranked), np.int64, len(ranked))
        ranked_los, ranked_his = _ranges_around(
            self.lcp_next, np.asarray(ranks, np.int64), ranked_lengths)
        los = np.concatenate([searched_los, ranked_los])
        his = np.concatenate([searched_his, ranked_his])
        lengths = np.concatenate([searched_lengths, ranked_lengths])
        order = np.argsort(lengths, kind="stable")
        keep = order[his[order] > los[order]]
        lengths = lengths[keep]
        # narrow dtypes keep the random accesses of the walk in cache
        longest = np.empty(len(self.codes), np.uint8 if lengths.max(initial=0) < 256 else np.int32)
        marks, ok = _segment_starts(self.starts, self.codes, self.isa, los[keep], his[keep],
                                    lengths.astype(longest.dtype), longest)
        if not ok:
            raise ValueError("a token character is missing from the vocabulary")
        return marks

    def select(self, marks: Optional[np.ndarray], part: tuple[int, int],
               min_counts: Iterable[int]) -> "dict[int, Selection]":
        """`select_partition`'s result for the windows of suffix-rank range `part`.

        `marks` is None for the first iteration (every position starts a segment).
        Returns {min_count: (accepted [(count, string)], char_raw, char_taken)}.
        """
        lo, hi = part
        span = self.span
        results: dict[int, Selection] = {}
        if span is not None and span <= 0:
            return {t: ([], {}, {}) for t in set(min_counts)}
        use_all = marks is None
        if use_all:
            marks = np.zeros(1, np.bool_)
        stack = (span if span is not None else int(self.remaining.max(initial=0))) + 3
        chars = self.chars
        for min_count in sorted(set(min_counts)):
            # A local copy: one index may serve several threads of a worker (a Beam Shared
            # handle), and another thread may raise the capacity between call and check.
            capacity = self._capacity
            while True:
                ranks, lens, cnts, char_raw, char_taken = _select(
                    self.lcp_next, self.remaining, self.weights, self.first, marks, use_all,
                    lo, hi, max(1, min_count), len(chars) + 1, stack, capacity)
                if len(ranks) <= capacity:
                    break
                capacity *= 4  # more accepted strings than room: rerun with more
            self._capacity = max(self._capacity, capacity)
            strings = strings_at(self.codes, self._points, self.sa[ranks].astype(np.int64),
                                 lens)
            if len(self._rank_of) > RANK_MEMO_LIMIT:
                self._rank_of = {}  # bounded memory; those missing are searched for
            self._rank_of.update(zip(strings, ranks.tolist()))
            accepted = list(zip(cnts.tolist(), strings))
            raw = {chars[c - 1]: v for c, v in enumerate(char_raw.tolist()) if v and c}
            took = {chars[c - 1]: v for c, v in enumerate(char_taken.tolist()) if v and c}
            results[min_count] = (accepted, raw, took)
        return results

