"""The text a `subword_index.TokenIndex` is built over: every distinct token escaped as T2T
escapes it (`subword.escape_token_all_known`, which also ends it with "_"), each followed by
one "\\0" slot, as code points, with each escaped token's length.

From `TokenArrays` (the compiled counter's counts: the tokens' text joined, where each ends)
that text is made without a string per token. The escape replaces single characters by fixed
strings and appends a fixed suffix, so escaping the joined text escapes every token in it,
and each token grows by what its replaced characters add. At full size a string per token
was 665k strings and two lists alive beside the whole index build, on the worker whose peak
is the job's largest process.
"""

from collections.abc import Iterable
from typing import Any, Union

import numpy as np

from transforms.codecs.subword import escape_token_all_known
from transforms.codecs.token_arrays import TokenArrays

_UTF32 = ("utf-32-le", "surrogatepass")


def code_points(text: str) -> Any:
    """`text`'s code points (uint32, a view of its UTF-32)."""
    return np.frombuffer(text.encode(*_UTF32), np.uint32)


def escaped_tokens(token_counts: Union[TokenArrays, Iterable[tuple[str, int]]]
                   ) -> tuple[Any, Any, Any]:
    """(the text's code points, each escaped token's length with its "_", the counts) of
    (token, count) pairs or of `TokenArrays`, tokens in their order: the text is
    `"\\0".join(escaped tokens) + "\\0"` (not made as a string: the index needs its code
    points only)."""
    if isinstance(token_counts, TokenArrays):
        return _escaped_arrays(token_counts)
    tokens, counts = [], []
    for token, count in token_counts:
        tokens.append(escape_token_all_known(token))
        counts.append(count)
    lengths = np.fromiter(map(len, tokens), np.int64, len(tokens))
    text = "\0".join(tokens) + "\0" if tokens else ""
    del tokens
    return code_points(text), lengths, counts


def _escaped_arrays(arrays: TokenArrays) -> tuple[Any, Any, Any]:
    ends = np.asarray(arrays.ends, np.int64)
    if not len(ends):
        return np.zeros(0, np.uint32), np.zeros(0, np.int64), arrays.counts
    suffix = escape_token_all_known("")
    raw = code_points(arrays.text)
    # what the escape adds for each character (most add nothing), looked up by code point
    present = np.flatnonzero(np.bincount(raw))
    growth = np.zeros(int(present[-1]) + 1, np.int8)
    for point in present.tolist():
        grows = len(escape_token_all_known(chr(point))) - len(suffix) - 1
        assert 0 <= grows < 128, "an escape of one character is at most a few characters"
        growth[point] = grows
    grown = growth[raw]
    del raw
    at = np.flatnonzero(grown)  # the positions of characters the escape replaces
    added = np.zeros(len(at) + 1, np.int64)
    np.cumsum(grown[at], out=added[1:])
    del grown
    escaped_ends = ends + added[np.searchsorted(at, ends)]
    escaped = escape_token_all_known(arrays.text)
    escaped = escaped[:len(escaped) - len(suffix)]  # the tokens' escapes, joined
    assert len(escaped) == escaped_ends[-1]
    tail = code_points(suffix + "\0")
    points = np.insert(code_points(escaped), np.repeat(escaped_ends, len(tail)),
                       np.tile(tail, len(ends)))
    del escaped
    lengths = np.diff(escaped_ends, prepend=0) + len(suffix)
    return points, lengths, arrays.counts
