"""A SubwordEncoder that segments the new tokens of many lines in one compiled call.

The encode pass meets most tokens for the first time in each worker (a Chinese token is a
whole clause between punctuation marks: on the en-zh bench corpus 63k distinct Chinese
tokens in 50k lines), and `SubwordEncoder` segments each of them in Python, a dictionary
lookup per character and candidate length: ~9 us a Chinese token, a third of a worker's
encode time. `BatchSubwordEncoder.encode_varints_many` first gathers the tokens of a block
of lines that its cache does not hold, and escapes and segments all of them in one numba
call over their code points:

- escaping as `subword.escape_token` (`\\` -> `\\\\`, `_` -> `\\u`, newline and characters
  outside the alphabet -> `\\<code point>;`, then `_`);
- greedy longest match by walking a trie of the subtokens (the longest subtoken that is a
  prefix of the rest), the split `SubwordEncoder._segment_ids` makes with its prefix table;
- each id written as its varint, so a token's cache entry is a slice of one bytes object.

The trie's edges sit in an open-addressing hash table of (node, code point) keys. Results
are those of the Python encoder, token for token; a token the vocabulary cannot segment is
left to the Python path, which raises the usual error for it.

Needs numpy and numba (as `subword_index`), neither Beam nor TensorFlow;
`subword.SubwordEncoder` alone stays plain Python.
"""

from collections.abc import Iterable, Sequence
from typing import Any

import numba
import numpy as np

from transforms.codecs import tokenizer
from transforms.codecs.subword import SubwordEncoder

_NJIT = dict(cache=True, nogil=True)

MAX_CODE_POINT = 0x10FFFF
_CODE_BITS = 21  # a code point fits in 21 bits: a trie key is node << 21 | code point
_EMPTY = -1
# `_slot` takes a slot from the top 64 - _HASH_BITS bits of the hash: tables up to 2^32 slots
_HASH_BITS = 32
# the longest escape of one character: "\" + 7 digits + ";"
_MAX_ESCAPE = 9
# Longest token segmented in the compiled call (the call's scratch buffer is ~36 bytes a
# character of its longest token); longer ones go through the Python path.
BATCH_TOKEN_CHARS = 10000
# why `_segment` stopped
_DONE, _NO_MATCH, _FULL = 0, 1, 2


@numba.njit(**_NJIT)
def _slot(keys, mask, key):
    """The table slot holding `key`, or the empty slot where it would go. The home slot is
    the top bits of a 64-bit multiplicative (Fibonacci) hash: every bit of the key, node
    and code point alike, moves them (the low bits of the product would depend on the code
    point and the node's lowest bits only, and chain all edges of one character)."""
    product = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
    h = np.int64(product >> np.uint64(_HASH_BITS)) & mask
    while keys[h] != _EMPTY and keys[h] != key:
        h = (h + 1) & mask
    return h


@numba.njit(**_NJIT)
def _build_trie(codes, ends, ids, node_capacity):
    """Trie of the (distinct) subtokens `codes[ends[i-1]:ends[i]]` with ids `ids`:
    (keys, children, mask, terminal id per node or -1)."""
    size = 8
    while size < 2 * len(codes) + 2:
        size *= 2
    keys = np.full(size, _EMPTY, np.int64)
    children = np.zeros(size, np.int32)
    terminal = np.full(node_capacity, -1, np.int32)
    mask = size - 1
    nodes = 1
    start = 0
    for i in range(len(ends)):
        node = 0
        for k in range(start, ends[i]):
            key = (np.int64(node) << _CODE_BITS) | codes[k]
            h = _slot(keys, mask, key)
            if keys[h] == _EMPTY:
                keys[h] = key
                children[h] = nodes
                nodes += 1
            node = children[h]
        terminal[node] = ids[i]
        start = ends[i]
    return keys, children, mask, terminal


@numba.njit(**_NJIT)
def escape_into(codes, start, end, in_alphabet, escaped, digits):
    """Writes the escaped token `codes[start:end]` (its final `_` included) to `escaped`;
    returns its length. `escaped` holds `_MAX_ESCAPE` code points a character, plus one."""
    n = 0
    for k in range(start, end):
        c = codes[k]
        if c == 92:  # "\" -> "\\"
            escaped[n] = 92
            escaped[n + 1] = 92
            n += 2
        elif c == 95:  # "_" -> "\u"
            escaped[n] = 92
            escaped[n + 1] = 117
            n += 2
        elif c == 10 or not in_alphabet[c]:  # -> "\<code point>;"
            escaped[n] = 92
            n += 1
            d = 0
            while True:
                digits[d] = 48 + c % 10
                d += 1
                c //= 10
                if c == 0:
                    break
            for j in range(d - 1, -1, -1):
                escaped[n] = digits[j]
                n += 1
            escaped[n] = 59
            n += 1
        else:
            escaped[n] = c
            n += 1
    escaped[n] = 95  # the "_" that ends every escaped token
    return n + 1


@numba.njit(**_NJIT)
def segment_into(escaped, n, keys, children, mask, terminal, varints, varint_ends, out, o):
    """Greedy longest match of `escaped[:n]` over the trie, the varints of its ids written
    to `out` from `o`. Returns (where they end, how many ids, why it stopped): `_DONE`,
    `_NO_MATCH` (no subtoken matches at some offset) or `_FULL` (they do not fit in
    `out`); after the last two, what was written from `o` is garbage."""
    pos = 0
    count = 0
    while pos < n:
        node = 0
        best = -1
        best_end = pos
        k = pos
        while k < n:
            key = (np.int64(node) << _CODE_BITS) | escaped[k]
            h = _slot(keys, mask, key)
            if keys[h] == _EMPTY:
                break
            node = children[h]
            k += 1
            if terminal[node] >= 0:
                best = terminal[node]
                best_end = k
        if best < 0:
            return o, count, _NO_MATCH
        a, b = varint_ends[best], varint_ends[best + 1]
        if o + b - a > len(out):
            return o, count, _FULL
        out[o:o + b - a] = varints[a:b]
        o += b - a
        count += 1
        pos = best_end
    return o, count, _DONE


@numba.njit(**_NJIT)
def _segment(codes, token_ends, in_alphabet, keys, children, mask, terminal, varints,
             varint_ends, out, out_ends):
    """Escapes and segments each token `codes[token_ends[t-1]:token_ends[t]]`, writing the
    varints of its ids to `out` (ending at `out_ends[t]`). Returns (tokens done, why it
    stopped): `_DONE`, or at token t (the tokens before it are done) `_NO_MATCH` (no
    subtoken matches at some offset) or `_FULL` (its varints do not fit in `out`)."""
    longest = 0
    start = 0
    for t in range(len(token_ends)):
        longest = max(longest, token_ends[t] - start)
        start = token_ends[t]
    escaped = np.empty(longest * _MAX_ESCAPE + 1, np.int32)
    digits = np.empty(8, np.int64)
    o = 0
    start = 0
    for t in range(len(token_ends)):
        n = escape_into(codes, start, token_ends[t], in_alphabet, escaped, digits)
        start = token_ends[t]
        o, _, why = segment_into(escaped, n, keys, children, mask, terminal, varints,
                                 varint_ends, out, o)
        if why != _DONE:
            return t, why
        out_ends[t] = o
    return len(token_ends), _DONE


def code_points(strings: Sequence[str]) -> tuple[Any, Any]:
    """The code points of `strings` joined, and where each string ends."""
    joined = "".join(strings).encode("utf-32-le", "surrogatepass")
    codes = np.frombuffer(joined, np.uint32).astype(np.int32)
    ends = np.cumsum(np.fromiter(map(len, strings), np.int64, len(strings)))
    return codes, ends


class BatchSubwordEncoder(SubwordEncoder):
    """`SubwordEncoder` whose `encode_varints_many` segments a block's new tokens in one
    compiled call; every result equals the plain encoder's."""

    def __init__(self, subtoken_strings: Iterable[str], cache_size: int = 1 << 18) -> None:
        super().__init__(subtoken_strings, cache_size)
        strings = list(self._ids)
        codes, ends = code_points(strings)
        ids = np.fromiter(self._ids.values(), np.int32, len(strings))
        self._trie = _build_trie(codes, ends, ids, len(codes) + 1)
        self._in_alphabet = np.zeros(MAX_CODE_POINT + 1, np.bool_)
        self._in_alphabet[[ord(c) for c in self.alphabet]] = True
        self._varints = np.frombuffer(b"".join(self._id_varints), np.uint8)
        self._varint_ends = np.concatenate(([0], np.cumsum(
            np.fromiter(map(len, self._id_varints), np.int64, len(self._id_varints)))))

    def _fill_varints(self, tokens: Sequence[str]) -> None:
        """Puts the varints of `tokens` (not cached yet) in the cache, in one compiled call;
        another one goes on after a token no subtoken matches (left out of the cache: the
        Python path raises the usual error when a line needs it) and after the output
        buffer had to grow."""
        cache = self._varints_cache
        codes, ends = code_points(tokens)
        out = np.empty(2 * (len(codes) + len(tokens)) + 16, np.uint8)
        out_ends = np.empty(len(tokens), np.int64)
        first = 0
        while first < len(tokens):
            base = ends[first - 1] if first else 0
            done, why = _segment(codes[base:], ends[first:] - base, self._in_alphabet,
                                 *self._trie, self._varints, self._varint_ends, out, out_ends)
            data = out[:out_ends[done - 1]].tobytes() if done else b""
            start = 0
            for token, end in zip(tokens[first:first + done], out_ends[:done].tolist()):
                cache[token] = data[start:end]
                start = end
            first += done
            if why == _NO_MATCH:
                first += 1
            elif why == _FULL:
                out = np.empty(2 * len(out), np.uint8)

    def encode_varints_many(self, texts: Sequence[str]) -> list[bytes]:
        """`[encode_varints(text) for text in texts]`, the new tokens segmented at once."""
        runs_of = list(map(tokenizer.split_runs, texts))
        cache = self._varints_cache
        distinct = set().union(*runs_of)
        new = [run for run in distinct if run not in cache]
        if new:
            if cache.make_room(len(new)):  # emptied: the block's other tokens are gone too
                new = [run for run in distinct if run not in cache]
            # a token of more than BATCH_TOKEN_CHARS (a long unbroken run of text) is left
            # to the Python path: the compiled call's buffers grow with the longest token
            self._fill_varints([run for run in new if len(run) <= BATCH_TOKEN_CHARS])
        return list(map(self._varints_of_runs, runs_of))


def warm_up() -> None:
    """Runs the compiled loops once, so numba has them loaded before the first real
    vocabulary (a worker process's fork server calls this)."""
    BatchSubwordEncoder(["ab"] + list("ab_\\u;0123456789")).encode_varints_many(["ab ba", "c_d"])
