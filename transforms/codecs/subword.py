"""A SubwordTextEncoder compatible with Tensor2Tensor 1.15.7: vocab file format, encode, decode.

A vocabulary is a list of subtoken strings; the id of a subtoken is its position in the list.
Tokens from `tokenizer.encode` are escaped (`\\` -> `\\\\`, `_` -> `\\u`, characters outside the
alphabet -> `\\<code point>;`), suffixed with `_`, and split greedily into the longest subtokens
of the vocabulary, left to right.

The vocab file is one subtoken per line wrapped in single quotes, UTF-8, lines ending in `\\n`
only, exactly the bytes `SubwordTextEncoder.store_to_file` writes.
"""

import functools
import re
from collections.abc import Callable, Container, Iterable, Sequence, Set
from itertools import chain
from typing import Any, Generic, Optional, TypeVar

from transforms.codecs import tokenizer
from transforms.codecs.varints import varint

PAD = "<pad>"
EOS = "<EOS>"
RESERVED_TOKENS = (PAD, EOS)
PAD_ID = 0
EOS_ID = 1

# Characters an escaped token may need beyond the corpus's own: always in the alphabet.
ESCAPE_CHARS = frozenset("\\_u;0123456789")

_UNESCAPE_RE = re.compile(r"\\u|\\\\|\\([0-9]+);")


def escape_token(token: str, alphabet: Container[str]) -> str:
    """Escapes `_`, `\\` and characters outside `alphabet` (and newline), then appends `_`."""
    token = token.replace("\\", "\\\\").replace("_", "\\u")
    return "".join(c if c in alphabet and c != "\n" else "\\%d;" % ord(c)
                   for c in token) + "_"


def escape_token_all_known(token: str) -> str:
    """`escape_token` for a token whose characters are all in the alphabet (fast path)."""
    return token.replace("\\", "\\\\").replace("_", "\\u").replace("\n", "\\10;") + "_"


def _unescape_match(m: re.Match[str]) -> str:
    if m.group(1) is None:
        return "_" if m.group(0) == "\\u" else "\\"
    try:
        return chr(int(m.group(1)))
    except (ValueError, OverflowError):
        return "\u3013"  # GETA MARK, the "undefined character" T2T uses.


def unescape_token(escaped_token: str) -> str:
    """Inverse of `escape_token`."""
    trimmed = escaped_token[:-1] if escaped_token.endswith("_") else escaped_token
    return _UNESCAPE_RE.sub(_unescape_match, trimmed)


def segment(escaped_token: str, subtoken_set: Set[str], max_subtoken_len: int) -> list[int]:
    """Greedy longest-match split of an escaped token into subtokens, left to right.

    Returns the start offsets of the subtokens. Every single character of an escaped token is
    in the vocabulary (the alphabet is), so the split always succeeds.
    """
    starts = []
    start = 0
    n = len(escaped_token)
    while start < n:
        end = min(n, start + max_subtoken_len)
        while end > start:
            if escaped_token[start:end] in subtoken_set:
                break
            end -= 1
        else:
            raise ValueError("no subtoken matches %r at offset %d" % (escaped_token, start))
        starts.append(start)
        start = end
    return starts


def vocab_file_text(subtoken_strings: Iterable[str]) -> str:
    """The text of a vocab file, as T2T's `store_to_file(add_single_quotes=True)` writes it."""
    return "".join("'%s'\n" % s for s in subtoken_strings)


def parse_vocab_lines(lines: Iterable[str]) -> list[str]:
    """Subtoken strings from vocab file lines, as T2T's `_load_from_file_object` reads them.

    The lines are as `tf.gfile` yields them (see `SubwordEncoder.from_text`).
    """
    out = []
    for line in lines:
        s = line.rstrip()
        if len(s) >= 2 and ((s[0] == "'" and s[-1] == "'") or (s[0] == '"' and s[-1] == '"')):
            s = s[1:-1]
        elif s in ("'", '"'):
            # T2T's startswith/endswith test also matches a lone quote and strips it to "".
            s = ""
        out.append(s)
    return out


_Value = TypeVar("_Value")  # what a token cache holds: ids (a list) or their varints (bytes)


class _TokenCache(dict[str, _Value], Generic[_Value]):
    """token -> what `compute(token)` gives (its subtoken ids, or their varints), filled on a
    miss (`__missing__`), so a hit costs one C lookup.

    " " maps to `space` (nothing): a single space between two other tokens is not a token
    (see `tokenizer.split_runs`); the encoder adds back the first and last one. The cache is
    emptied when it reaches `limit` entries, which bounds a worker's memory.
    """

    def __init__(self, compute: Callable[[str], _Value], limit: int, space: _Value) -> None:
        super().__init__()
        self._compute = compute
        self._limit = limit
        self._space = space
        self[" "] = space

    def __missing__(self, token: str) -> _Value:
        value = self._compute(token)
        self.make_room(1)
        self[token] = value
        return value

    def make_room(self, count: int) -> bool:
        """Empties the cache if `count` more tokens would take it past its limit; whether
        it did."""
        if len(self) + count <= self._limit:
            return False
        self.clear()
        self[" "] = self._space
        return True


def _prefix_table(string_to_id: dict[str, int]) -> dict[str, int]:
    """{every non-empty prefix of a subtoken: its id if it is a subtoken itself, else -1}.

    Greedy longest match then walks forward while the text read so far is a prefix of some
    subtoken, instead of trying every length from the longest subtoken's down.
    """
    table = dict(string_to_id)
    for s in string_to_id:
        for k in range(1, len(s)):
            table.setdefault(s[:k], -1)
    return table


class SubwordEncoder:
    """Encodes text to subtoken ids and back, with a vocabulary learnt by Tensor2Tensor.

    Build it from a list of subtoken strings (`SubwordEncoder(strings)`), or from a vocab file
    with `SubwordEncoder.from_file(path)` / `from_text(text)`.
    """

    def __init__(self, subtoken_strings: Iterable[str], cache_size: int = 1 << 18) -> None:
        self.subtoken_strings = list(subtoken_strings)
        self._ids = {s: i for i, s in enumerate(self.subtoken_strings) if s}
        self._prefixes = _prefix_table(self._ids)
        self.alphabet = frozenset(c for s in self.subtoken_strings for c in s) | ESCAPE_CHARS
        self._cache: _TokenCache[list[int]] = _TokenCache(self._token_ids_uncached,
                                                           cache_size, [])
        self._id_varints = [varint(i) for i in range(len(self.subtoken_strings))]
        self._varints_cache: _TokenCache[bytes] = _TokenCache(
            lambda token: b"".join(map(self._id_varints.__getitem__,
                                       self._token_ids_uncached(token))), cache_size, b"")

    @classmethod
    def from_text(cls, text: str) -> "SubwordEncoder":
        # As T2T's tf.gfile reader: lines end in "\n" only, and every "\r" is dropped.
        lines = text.replace("\r", "").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return cls(parse_vocab_lines(lines))

    @classmethod
    def from_file(cls, path: str) -> "SubwordEncoder":
        """Loads a local vocab file (use `transforms.vocab_io` for gs://, s3://, ...)."""
        with open(path, "rb") as f:
            return cls.from_text(f.read().decode("utf-8"))

    @property
    def max_subtoken_length(self) -> int:
        """Length of the longest subtoken (T2T's `_max_subtoken_len`)."""
        return max((len(s) for s in self.subtoken_strings), default=1)

    @property
    def vocab_size(self) -> int:
        return len(self.subtoken_strings)

    def to_text(self) -> str:
        return vocab_file_text(self.subtoken_strings)

    def subtoken_id(self, subtoken: str) -> Optional[int]:
        """The id of one subtoken string of the vocabulary, or None."""
        return self._ids.get(subtoken)

    def _token_ids_uncached(self, token: str) -> list[int]:
        if self.alphabet.issuperset(token):
            escaped = escape_token_all_known(token)
        else:
            escaped = escape_token(token, self.alphabet)
        return self._segment_ids(escaped)

    def _segment_ids(self, escaped: str) -> list[int]:
        """Greedy longest-match ids of an escaped token (as `segment`, by a prefix walk)."""
        prefixes = self._prefixes
        ids = []
        start = 0
        n = len(escaped)
        while start < n:
            best_end = start
            end = start + 1
            while end <= n:
                found = prefixes.get(escaped[start:end])
                if found is None:
                    break
                if found >= 0:
                    best_end, best_id = end, found
                end += 1
            if best_end == start:
                raise ValueError("no subtoken matches %r at offset %d" % (escaped, start))
            ids.append(best_id)
            start = best_end
        return ids

    @functools.cached_property
    def _space_ids(self) -> list[int]:
        return self._token_ids_uncached(" ")

    @functools.cached_property
    def _space_varints(self) -> bytes:
        return b"".join(map(self._id_varints.__getitem__, self._space_ids))

    def _with_edge_spaces(self, runs: Sequence[str], body: Any, space_attr: str) -> Any:
        """`body` (a list of ids or their varints) with a first and a last single-space run
        put back: the caches map " " to nothing, but at either end it is a token. The
        space's form (`space_attr`) is only looked up when needed: a vocabulary that cannot
        encode " " still encodes every line without an edge space."""
        if runs[0] == " ":
            body = getattr(self, space_attr) + body
        if runs[-1] == " " and len(runs) > 1:
            body = body + getattr(self, space_attr)
        return body

    def encode(self, text: str) -> list[int]:
        """Text -> list of subtoken ids (without EOS)."""
        runs = tokenizer.split_runs(text)
        if not runs:
            return []
        ids = list(chain.from_iterable(map(self._cache.__getitem__, runs)))
        return self._with_edge_spaces(runs, ids, "_space_ids")

    def encode_varints(self, text: str) -> bytes:
        """`encode(text)` as the concatenated varints of its ids
        (`transforms.codecs.varints`): what an Example's int64 list holds, built by joining
        each token's cached bytes."""
        return self._varints_of_runs(tokenizer.split_runs(text))

    def encode_varints_many(self, texts: Sequence[str]) -> list[bytes]:
        """`[self.encode_varints(text) for text in texts]`. A subclass may segment the new
        tokens of all the texts at once (`subword_batch.BatchSubwordEncoder`)."""
        return list(map(self.encode_varints, texts))

    def _varints_of_runs(self, runs: Sequence[str]) -> bytes:
        if not runs:
            return b""
        data = b"".join(map(self._varints_cache.__getitem__, runs))
        return self._with_edge_spaces(runs, data, "_space_varints")

    def decode(self, ids: Iterable[int], strip_extraneous: bool = False) -> str:
        """Subtoken ids -> text. With `strip_extraneous`, trailing PAD and EOS ids are dropped."""
        if strip_extraneous:  # as T2T's strip_ids: trailing PAD/EOS only
            ids = list(ids)
            while ids and ids[-1] in (PAD_ID, EOS_ID):
                ids.pop()
        n = len(self.subtoken_strings)
        concatenated = "".join(self.subtoken_strings[i] if 0 <= i < n else "" for i in ids)
        tokens = []
        for piece in concatenated.split("_"):
            if piece:
                token = unescape_token(piece + "_")
                if token:
                    tokens.append(token)
        return tokenizer.decode(tokens)

    def decode_list(self, ids: Iterable[int]) -> list[str]:
        n = len(self.subtoken_strings)
        return [self.subtoken_strings[i] if 0 <= i < n else "" for i in ids]


# `select_partition`'s result for one min_count: accepted (count, string) of two or more
# characters, each first character's count, what accepted strings took from each.
Selection = tuple[list[tuple[int, str]], dict[str, int], dict[str, int]]
