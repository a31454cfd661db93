"""One compiled call per block: a block's new lines in, their finished Example map entries out.

With the batch encoder (`subword_batch`) segmenting new tokens in one compiled call, most of
the encode step's time went to Python work per line and per token: the run-splitting regular
expression, a set of the block's tokens, a dictionary lookup per token, joining the tokens'
bytes, counting the varints, and framing each line's map entry. `KernelSubwordEncoder.
encode_entries_many` does all of that in one numba call over the code points of the lines:

- runs are split with the tokenizer's own alphanumeric table (`tokenizer.alnum_ranges`, made
  a lookup array here), and a single space between two other runs is no token, as in
  `tokenizer.encode` (a first or last one is);
- each run is looked up in an open-addressing table, token -> the varints of its ids; the
  table's arrays live in the encoder across calls (its cache) and are emptied when it holds
  more tokens than the encoder's `cache_size`;
- a miss is escaped and split by greedy longest match over the subtoken trie with
  `subword_batch`'s own compiled helpers (`escape_into`, `segment_into`), then inserted;
- head (a language tag's varints) + the line's varints + EOS are written straight into the
  output bytes, behind the nested length-delimited fields of the caller's `frame` (the map
  entry's layout, `example_proto.PairExampleWriter.entry_frame`, innermost first; the
  innermost is left out when its content is empty, as protobuf writes no empty packed field).

A line the kernel does not take -- it has a run longer than `subword_batch.BATCH_TOKEN_CHARS`
or a token the vocabulary cannot segment -- comes back as None, and the caller encodes it with
the Python path (`encode_varints_many`), which gives the same bytes or raises the usual error.
The Python encoder stays the reference: the tests hold every entry to it.

Needs numpy and numba (`cache=True`: a worker loads the compiled code from `__pycache__`
or `NUMBA_CACHE_DIR` instead of compiling it; `warm_up` loads it in the fork server).
"""

from collections.abc import Iterable, Sequence
from typing import Any, Optional

import numba
import numpy as np

from transforms.codecs import subword_batch, tokenizer
from transforms.codecs.subword_batch import (_DONE, _MAX_ESCAPE, MAX_CODE_POINT,
                                             BatchSubwordEncoder, code_points, escape_into,
                                             segment_into)
from transforms.codecs.vocabulary import EntryFrame

_NJIT = dict(cache=True, nogil=True)

# 64-bit FNV-1a over a token's code points, in int64 arithmetic (it wraps around)
_FNV_OFFSET = 0xCBF29CE484222325 - (1 << 64)
_FNV_PRIME = 0x100000001B3
_GOLDEN = 0x9E3779B97F4A7C15 - (1 << 64)  # a slot: bits 32.. of hash * golden ratio
_SPACE = 32
_VARINT_MAX = 10  # bytes of the longest varint
# The token table is one int64 row a slot, so a lookup touches one row (then the token's
# code points and bytes): its hash; its code points, `pool[_START:_START + _LEN]` (_LEN 0:
# an empty slot); the varints of its ids, `token_bytes[_BYTES:_BYTES_END]`, _IDS of them.
_HASH, _START, _LEN, _BYTES, _BYTES_END, _IDS = range(6)
_COLUMNS = 6
# `used`: tokens, pool code points, token bytes in use
_TOKENS, _POOL, _TOKEN_BYTES = range(3)
# why `_encode_lines` stopped before the last line: the output or the token table is full
_GROW_OUT, _GROW_TABLE = 1, 2


@numba.njit(**_NJIT)
def _hash(codes, start, end):
    h = np.int64(_FNV_OFFSET)
    for k in range(start, end):
        h = (h ^ np.int64(codes[k])) * np.int64(_FNV_PRIME)
    return h


@numba.njit(**_NJIT)
def _home(h, mask):
    return ((h * np.int64(_GOLDEN)) >> 32) & mask


@numba.njit(**_NJIT)
def _find(codes, start, end, h, table, pool):
    """The slot of the run `codes[start:end]` (hash `h`) in `table`, or the empty slot it
    would go to."""
    mask = len(table) - 1
    s = _home(h, mask)
    length = end - start
    while True:
        found = table[s, _LEN]
        if found == 0:
            return s
        if found == length and table[s, _HASH] == h:
            p = table[s, _START]
            k = 0
            while k < length and pool[p + k] == codes[start + k]:
                k += 1
            if k == length:
                return s
        s = (s + 1) & mask


@numba.njit(**_NJIT)
def _rehash(old, table):
    """Puts the tokens of `old` into the (empty, larger) `table`."""
    mask = len(table) - 1
    for row in range(len(old)):
        if old[row, _LEN] == 0:
            continue
        s = _home(old[row, _HASH], mask)
        while table[s, _LEN] != 0:
            s = (s + 1) & mask
        table[s, :] = old[row, :]


@numba.njit(**_NJIT)
def _varint_size(n):
    size = 1
    while n > 0x7F:
        n >>= 7
        size += 1
    return size


@numba.njit(**_NJIT)
def _put_varint(out, o, n):
    while n > 0x7F:
        out[o] = (n & 0x7F) | 0x80
        n >>= 7
        o += 1
    out[o] = n
    return o + 1


@numba.njit(**_NJIT)
def _copy(source, start, end, out, o):
    """Copies `source[start:end]` to `out` from `o`; returns where it ends there. (A loop:
    numba's slice assignment costs more than the few bytes of a token it copies.)"""
    for k in range(start, end):
        out[o] = source[k]
        o += 1
    return o


@numba.njit(**_NJIT)
def _frame(out, payload_start, payload_end, frame_bytes, frame_ends, frame_tags, sizes):
    """Writes the heads of the nested fields (`frame`) just before the payload
    `out[payload_start:payload_end]`; returns where the entry starts."""
    content = payload_end - payload_start
    head = 0
    for j in range(len(frame_tags)):
        sizes[j] = content
        if j == 0 and content == 0:
            sizes[j] = -1  # no empty packed field
            continue
        add = frame_ends[j + 1] - frame_ends[j] + 1 + _varint_size(content)
        content += add
        head += add
    start = payload_start - head
    o = start
    for j in range(len(frame_tags) - 1, -1, -1):
        if sizes[j] < 0:
            continue
        for k in range(frame_ends[j], frame_ends[j + 1]):
            out[o] = frame_bytes[k]
            o += 1
        out[o] = frame_tags[j]
        o = _put_varint(out, o + 1, sizes[j])
    return start


@numba.njit(**_NJIT)
def _encode_lines(codes, line_ends, first, alnum, in_alphabet, keys, children, mask, terminal,
                  varints, varint_ends, max_token, table, pool, token_bytes,
                  used, frame_bytes, frame_ends, frame_tags, reserve, head, eos, out, bounds,
                  id_counts):
    """Encodes lines `first`, ... (`codes[line_ends[i-1]:line_ends[i]]`) into `out`, from 0:
    line i's entry is `out[bounds[i, 0]:bounds[i, 1]]` with `id_counts[i]` ids of its own,
    or bounds -1 for a line left to the Python path. Returns (line reached, bytes of `out`
    used, why): `_DONE`, or `_GROW_OUT` / `_GROW_TABLE` (the lines before it are done)."""
    escaped = np.empty(max_token * _MAX_ESCAPE + 1, np.int32)
    digits = np.empty(8, np.int64)
    sizes = np.empty(len(frame_tags), np.int64)
    worst = _VARINT_MAX * (max_token * _MAX_ESCAPE + 1)  # a new token's varints at most
    o = 0
    for line in range(first, len(line_ends)):
        ls = line_ends[line - 1] if line else 0
        le = line_ends[line]
        if o + reserve + len(head) + len(eos) > len(out):
            return line, o, _GROW_OUT
        p = _copy(head, 0, len(head), out, o + reserve)
        count = 0
        taken = True
        r = ls
        while r < le:
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
                length = k - r
                if length > max_token:
                    taken = False
                    break
                if (2 * (used[_TOKENS] + 1) > len(table)
                        or used[_POOL] + length > len(pool)
                        or used[_TOKEN_BYTES] + worst > len(token_bytes)):
                    return line, o, _GROW_TABLE
                n = escape_into(codes, r, k, in_alphabet, escaped, digits)
                b = used[_TOKEN_BYTES]
                end, ids, why = segment_into(escaped, n, keys, children, mask, terminal,
                                             varints, varint_ends, token_bytes, b)
                if why != _DONE:
                    taken = False
                    break
                _copy(codes, r, k, pool, used[_POOL])
                table[s, _HASH] = h
                table[s, _START] = used[_POOL]
                table[s, _LEN] = length
                table[s, _BYTES] = b
                table[s, _BYTES_END] = end
                table[s, _IDS] = ids
                used[_TOKENS] += 1
                used[_POOL] += length
                used[_TOKEN_BYTES] = end
            a, b = table[s, _BYTES], table[s, _BYTES_END]
            if p + b - a + len(eos) > len(out):
                return line, o, _GROW_OUT
            p = _copy(token_bytes, a, b, out, p)
            count += table[s, _IDS]
            r = k
        if not taken:
            bounds[line, 0] = -1
            bounds[line, 1] = -1
            continue
        p = _copy(eos, 0, len(eos), out, p)
        bounds[line, 0] = _frame(out, o + reserve, p, frame_bytes, frame_ends, frame_tags,
                                 sizes)
        bounds[line, 1] = p
        id_counts[line] = count
        o = p
    return len(line_ends), o, _DONE


def alnum_table() -> Any:
    """The tokenizer's alphanumeric ranges as a bool per code point."""
    table = np.zeros(MAX_CODE_POINT + 1, np.bool_)
    for lo, hi in tokenizer.alnum_ranges():
        table[lo:hi + 1] = True
    return table


def _as_bytes(data: bytes) -> Any:
    return np.frombuffer(data, np.uint8)


class KernelSubwordEncoder(BatchSubwordEncoder):
    """`BatchSubwordEncoder` that also encodes whole lines into finished entries in one
    compiled call (`encode_entries_many`); every entry equals the Python path's."""

    _INITIAL_TOKENS = 1 << 12

    def __init__(self, subtoken_strings: Iterable[str], cache_size: int = 1 << 18) -> None:
        super().__init__(subtoken_strings, cache_size)
        self._alnum = alnum_table()
        self._token_limit = cache_size
        self._frames: dict[tuple[tuple[bytes, int], ...], tuple[Any, Any, Any, int]] = {}
        self._out = np.empty(1 << 16, np.uint8)
        self._new_table(self._INITIAL_TOKENS, 1 << 20)

    def _new_table(self, tokens: int, token_bytes: int) -> None:
        """An empty token table with room for `tokens` tokens."""
        self._table = np.zeros((2 * tokens, _COLUMNS), np.int64)
        self._pool = np.empty(16 * tokens, np.int32)
        self._token_bytes = np.empty(token_bytes, np.uint8)
        self._used = np.zeros(3, np.int64)

    def _grow_table(self, max_token: int) -> None:
        """More room in whichever of the token table's arrays lacks it for one more token
        of up to `max_token` characters."""
        count, pool_used, bytes_used = self._used.tolist()
        if 2 * (count + 1) > len(self._table):
            old, self._table = self._table, np.zeros((2 * len(self._table), _COLUMNS), np.int64)
            _rehash(old, self._table)
        while pool_used + max_token > len(self._pool):
            self._pool = np.concatenate((self._pool, np.empty_like(self._pool)))
        worst = _VARINT_MAX * (max_token * _MAX_ESCAPE + 1)
        while bytes_used + worst > len(self._token_bytes):
            self._token_bytes = np.concatenate((self._token_bytes,
                                                np.empty_like(self._token_bytes)))

    def _frame_arrays(self, frame: EntryFrame) -> tuple[Any, Any, Any, int]:
        """`frame` as the kernel takes it: prefix bytes, where each level's start, tags, and
        the most bytes its heads take."""
        key = tuple(frame)
        known = self._frames.get(key)
        if known is None:
            prefixes = [prefix for prefix, _ in key]
            ends = np.concatenate(([0], np.cumsum([len(p) for p in prefixes]))).astype(np.int64)
            known = self._frames[key] = (
                _as_bytes(b"".join(prefixes)).copy(), ends,
                np.array([tag for _, tag in key], np.uint8),
                int(ends[-1]) + len(key) * (1 + _VARINT_MAX))
        return known

    def encode_entries_many(self, texts: Sequence[str], frame: EntryFrame, head: bytes,
                            eos: bytes) -> tuple[list[Optional[bytes]], list[int]]:
        """`frame` around `head` + the ids' varints of the text + `eos` for each of `texts`
        (None for a text left to the Python path), and how many ids each text has. Two
        lists, so a caller zips them in C."""
        entries: list[Optional[bytes]] = []
        if not texts:
            return entries, []
        if self._used[_TOKENS] > self._token_limit:  # the cache is full: empty it
            self._new_table(self._INITIAL_TOKENS, 1 << 20)
        frame_bytes, frame_ends, frame_tags, reserve = self._frame_arrays(frame)
        codes, line_ends = code_points(texts)
        bounds = np.empty((len(texts), 2), np.int64)
        id_counts = np.zeros(len(texts), np.int64)
        head_array, eos_array = _as_bytes(head), _as_bytes(eos)
        max_token = subword_batch.BATCH_TOKEN_CHARS
        first = 0
        while first < len(texts):
            reached, used, why = _encode_lines(
                codes, line_ends, first, self._alnum, self._in_alphabet, *self._trie,
                self._varints, self._varint_ends, max_token, self._table, self._pool,
                self._token_bytes, self._used, frame_bytes, frame_ends, frame_tags, reserve,
                head_array, eos_array, self._out, bounds, id_counts)
            data = self._out[:used].tobytes()
            entries.extend(map(data.__getitem__, map(slice, bounds[first:reached, 0].tolist(),
                                                     bounds[first:reached, 1].tolist())))
            first = reached
            if why == _GROW_OUT:
                self._out = np.empty(2 * len(self._out), np.uint8)
            elif why == _GROW_TABLE:
                self._grow_table(max_token)
        for line in np.flatnonzero(bounds[:, 0] < 0).tolist():  # left to the Python path
            entries[line] = None
        return entries, id_counts.tolist()


def warm_up() -> None:
    """Runs the compiled loops once, so numba has them loaded before the first real
    vocabulary (a worker process's fork server calls this)."""
    KernelSubwordEncoder(["ab"] + list("ab_\\u;0123456789")).encode_entries_many(
        ["ab ba", "c_d"], ((b"", 10), (b"\x0a\x01x", 18)), b"\x05", b"\x01")
