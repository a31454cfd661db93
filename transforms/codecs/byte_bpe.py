"""GPT-2 style byte-level BPE: encode, decode, load and save. Pure Python (stdlib + `regex`).

How text becomes ids (the GPT-2 scheme):

1. Pre-tokenization. `pretokenize` splits text with `PRETOKENIZE_PATTERN` (the `regex` module is
   needed for `\\p{L}` / `\\p{N}`). Merges never cross a pre-token boundary.
2. Byte level. Each pre-token is UTF-8 encoded and every byte becomes one of 256 printable
   characters (`bytes_to_unicode`); vocabulary and merges files are written with these
   characters, so a space is `Ġ` and a newline `Ċ`.
3. Merges. Starting from one symbol per byte, the adjacent pair with the lowest merge rank is
   merged (the leftmost one if it occurs more than once), until no adjacent pair has a merge.
   A pre-token whose bytes are a whole vocabulary token is looked up first (as tiktoken does).
   That shortcut gives the same ids as merging whenever every token merges back to itself,
   which the tests check for GPT-2's 50,000 tokens and for learned vocabularies.
   Results are cached per pre-token (a bounded dict).

Special tokens (`<|endoftext|>` by default) are cut out of the text before pre-tokenization when
`encode(..., allow_special=True)`; otherwise they are ordinary text.

Round trip: `decode(encode(s)) == s` for every `str` that is valid Unicode, i.e. has no lone
surrogates (U+D800..U+DFFF, which cannot be UTF-8 encoded: `encode` raises
`UnicodeEncodeError` for them). `decode` of an arbitrary id sequence may cut a multi-byte
character; like GPT-2 it then uses `errors="replace"` (U+FFFD).

File formats. OpenAI's `encoder.json` + `vocab.bpe` and Hugging Face's `vocab.json` +
`merges.txt` hold the same content: a JSON object token -> id, and a merges list with a
`#version: 0.2` first line followed by one `left right` pair per line in rank order.

Learning: `transforms.codecs.byte_bpe_learner.learn_byte_bpe`.
"""

import heapq
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from typing import Any, Optional

import regex

__all__ = [
    "ENDOFTEXT",
    "PRETOKENIZE_PATTERN",
    "ByteBPE",
    "bytes_to_unicode",
    "pretokenize",
]

PRETOKENIZE_PATTERN = (
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
)
ENDOFTEXT = "<|endoftext|>"

_PRETOKENIZE_RE = regex.compile(PRETOKENIZE_PATTERN)
_findall = _PRETOKENIZE_RE.findall

MERGES_HEADER = "#version: 0.2"

# Pieces with more byte symbols than this are merged with a heap instead of a rank scan.
_HEAP_THRESHOLD = 32
_DEFAULT_CACHE_SIZE = 1 << 17


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's table: byte value -> one printable character.

    Bytes that are printable Latin-1 characters other than space ('!'..'~', '¡'..'¬', '®'..'ÿ')
    stand for themselves; the remaining 68 bytes (controls, space, DEL, NBSP, soft hyphen, ...)
    are given U+0100, U+0101, ... in increasing byte order.
    """
    printable = set(range(0x21, 0x7F)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    table = {}
    extra = 0
    for b in sorted(printable):
        table[b] = chr(b)
    for b in range(256):
        if b not in printable:
            table[b] = chr(0x100 + extra)
            extra += 1
    return table


_BYTE_TO_CHAR = bytes_to_unicode()
_CHAR_TO_BYTE = {c: b for b, c in _BYTE_TO_CHAR.items()}


def pretokenize(text: str) -> list[str]:
    """GPT-2 pre-tokens of `text` (`regex.findall` with `PRETOKENIZE_PATTERN`)."""
    return _findall(text)


def _token_bytes(token: str) -> Optional[bytes]:
    """byte-level string -> bytes, or None if `token` has a character outside the 256."""
    try:
        return bytes([_CHAR_TO_BYTE[c] for c in token])
    except KeyError:
        return None


def _parse_merges(merges_text: str) -> list[tuple[str, str]]:
    merges = []
    for line_no, line in enumerate(merges_text.split("\n"), 1):
        if line.endswith("\r"):
            line = line[:-1]
        if not line or (line_no == 1 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise ValueError("merges line %d is not 'left right': %r" % (line_no, line))
        merges.append((parts[0], parts[1]))
    return merges


class ByteBPE:
    """A byte-level BPE vocabulary: `encoder` (token -> id, tokens in the byte-level spelling),
    `merges` ([(left, right), ...] in rank order) and special tokens (text -> id).

    `special_tokens=None` means: `<|endoftext|>` if it is in `encoder`, plus every token of
    `encoder` that no merge produces and that is not a single byte symbol (such a token can only
    come from the text as a special token; this is how special tokens written first by
    `tokenizers`' trainer are recognised when files are loaded back).
    """

    def __init__(self, encoder: Mapping[str, int], merges: Iterable[tuple[str, str]],
                 special_tokens: Optional[Mapping[str, int]] = None,
                 cache_size: int = _DEFAULT_CACHE_SIZE) -> None:
        encoder = dict(encoder)
        merges = [(str(a), str(b)) for a, b in merges]
        produced: set[str]
        byte_chars = [_BYTE_TO_CHAR[b] for b in range(256)]
        missing = [c for c in byte_chars if c not in encoder]
        if missing:
            raise ValueError(
                "vocabulary lacks %d of the 256 byte symbols (e.g. %r)" % (len(missing), missing[0])
            )
        for token, idx in encoder.items():
            if not isinstance(token, str) or type(idx) is not int or idx < 0:
                raise ValueError("bad vocabulary entry %r: %r" % (token, idx))
        produced = set()
        for a, b in merges:
            for part in (a, b, a + b):
                if part not in encoder:
                    raise ValueError("merge (%r, %r): %r is not in the vocabulary" % (a, b, part))
            if _token_bytes(a + b) is None:
                raise ValueError("merge (%r, %r) is not made of byte symbols" % (a, b))
            produced.add(a + b)
        if special_tokens is None:
            byte_set = set(byte_chars)
            special_tokens = {
                t: i
                for t, i in encoder.items()
                if t == ENDOFTEXT or (t not in produced and t not in byte_set)
            }
        special_tokens = dict(special_tokens)
        for token, idx in special_tokens.items():
            if not token or type(idx) is not int or idx < 0:
                raise ValueError("bad special token %r: %r" % (token, idx))
            if encoder.setdefault(token, idx) != idx:
                raise ValueError(
                    "special token %r has id %d but the vocabulary says %d"
                    % (token, idx, encoder[token])
                )
        decoder: dict[int, str] = {}
        for token, idx in encoder.items():
            if idx in decoder:
                raise ValueError("id %d is used by %r and %r" % (idx, decoder[idx], token))
            decoder[idx] = token

        self._encoder = encoder
        self._decoder = decoder
        self._merges = merges
        self._special = special_tokens
        self._cache_size = cache_size
        self._vocab_size = max(decoder) + 1

        # id -> bytes, for decoding. A non-special token that is not byte-level cannot be
        # spelled in bytes; it decodes as its own UTF-8 text.
        self._id_bytes: dict[int, bytes] = {}
        for token, idx in encoder.items():
            data = None if token in special_tokens else _token_bytes(token)
            self._id_bytes[idx] = data if data is not None else token.encode("utf-8")

        # Merge table: packed (left id, right id) -> packed (rank, new id). Packing keeps the
        # inner loop on plain ints: comparing packed values compares ranks.
        shift = max(self._vocab_size - 1, 1).bit_length()
        self._shift = shift
        self._mask = (1 << shift) - 1
        table = {}
        for rank, (a, b) in enumerate(merges):
            key = (encoder[a] << shift) | encoder[b]
            if key not in table:
                table[key] = (rank << shift) | encoder[a + b]
        self._merge_table = table
        self._no_merge = 1 << (shift + max(len(merges), 1).bit_length() + 1)

        self._byte_ids = [encoder[c] for c in byte_chars]
        # Whole-piece lookup: bytes of every token BPE can produce -> id.
        self._piece_ids: dict[Optional[bytes], int] = {
            bytes([b]): encoder[_BYTE_TO_CHAR[b]] for b in range(256)}
        for a, b in merges:
            token = a + b
            self._piece_ids.setdefault(_token_bytes(token), encoder[token])
        self._cache: dict[str, Sequence[int]] = {}

        self._special_re: Optional[re.Pattern[str]] = None
        if special_tokens:
            alternatives = sorted(special_tokens, key=lambda t: (-len(t), t))
            self._special_re = re.compile("(" + "|".join(map(re.escape, alternatives)) + ")")

    # ---------------------------------------------------------------- constructors

    @classmethod
    def from_texts(cls, vocab_json_text: str, merges_text: str) -> "ByteBPE":
        """From the contents of a vocab.json/encoder.json and a merges.txt/vocab.bpe file."""
        encoder = json.loads(vocab_json_text.lstrip("\ufeff"))
        if not isinstance(encoder, dict):
            raise ValueError("the vocabulary JSON is not an object token -> id")
        return cls(encoder, _parse_merges(merges_text.lstrip("\ufeff")))

    @classmethod
    def from_openai_files(cls, encoder_json_path: str, vocab_bpe_path: str) -> "ByteBPE":
        """GPT-2's encoder.json + vocab.bpe."""
        return cls.from_texts(_read_text(encoder_json_path), _read_text(vocab_bpe_path))

    @classmethod
    def from_hf_files(cls, vocab_json_path: str, merges_txt_path: str) -> "ByteBPE":
        """Hugging Face vocab.json + merges.txt."""
        return cls.from_texts(_read_text(vocab_json_path), _read_text(merges_txt_path))

    @classmethod
    def from_dir(cls, path: str) -> "ByteBPE":
        """A directory with vocab.json + merges.txt (preferred if both pairs exist) or
        encoder.json + vocab.bpe."""
        for vocab_name, merges_name in (("vocab.json", "merges.txt"), ("encoder.json", "vocab.bpe")):
            vocab_path = os.path.join(path, vocab_name)
            merges_path = os.path.join(path, merges_name)
            if os.path.isfile(vocab_path) and os.path.isfile(merges_path):
                return cls.from_texts(_read_text(vocab_path), _read_text(merges_path))
        raise FileNotFoundError(
            "%s has neither vocab.json + merges.txt nor encoder.json + vocab.bpe" % path
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickles (e.g. for Beam workers) carry only the definition, not caches and tables.
        return (ByteBPE, (self._encoder, self._merges, self._special, self._cache_size))

    # ---------------------------------------------------------------- encoding

    def encode(self, text: str, allow_special: bool = True) -> list[int]:
        """Ids of `text`. Special tokens in the text become their ids if `allow_special`,
        otherwise they are encoded as ordinary text."""
        if not allow_special or self._special_re is None:
            return self.encode_ordinary(text)
        parts = self._special_re.split(text)
        if len(parts) == 1:
            return self.encode_ordinary(text)
        ids: list[int] = []
        special = self._special
        for i, part in enumerate(parts):
            if i % 2:
                ids.append(special[part])
            elif part:
                ids += self.encode_ordinary(part)
        return ids

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of `text`, with no special-token handling."""
        pieces = _findall(text)
        cache = self._cache
        found: list[Any] = list(map(cache.get, pieces))
        if None in found:
            # Bounded cache: emptied when full, and never filled past its size.
            if len(cache) >= self._cache_size:
                cache.clear()
            room = self._cache_size - len(cache)
            encode_piece = self._encode_piece
            for i, ids in enumerate(found):
                if ids is None:
                    piece = pieces[i]
                    ids = cache.get(piece)
                    if ids is None:
                        ids = encode_piece(piece)
                        if room > 0:
                            cache[piece] = ids
                            room -= 1
                    found[i] = ids
        return list(chain.from_iterable(found))

    def _encode_piece(self, piece: str) -> Sequence[int]:
        data = piece.encode("utf-8")
        idx = self._piece_ids.get(data)
        if idx is not None:
            return (idx,)
        return self._merge_bytes(data)

    def _merge_bytes(self, data: bytes) -> Sequence[int]:
        """BPE of a byte string (no whole-piece lookup) -> tuple of ids."""
        byte_ids = self._byte_ids
        parts = [byte_ids[b] for b in data]
        if len(parts) > _HEAP_THRESHOLD:
            return tuple(self._merge_long(parts))
        get = self._merge_table.get
        shift = self._shift
        none = self._no_merge
        ranks = [get((a << shift) | b, none) for a, b in zip(parts, parts[1:])]
        while ranks:
            best = min(ranks)
            if best == none:
                break
            i = ranks.index(best)
            parts[i] = best & self._mask
            del parts[i + 1]
            del ranks[i]
            if i < len(ranks):
                ranks[i] = get((parts[i] << shift) | parts[i + 1], none)
            if i:
                ranks[i - 1] = get((parts[i - 1] << shift) | parts[i], none)
        return tuple(parts)

    def _merge_long(self, parts: list[int]) -> list[int]:
        """Same result as the rank scan (lowest rank first, leftmost among equal ranks),
        with a heap over a linked list: O(n log n) for long pieces."""
        get = self._merge_table.get
        shift = self._shift
        mask = self._mask
        n = len(parts)
        nxt = list(range(1, n + 1))
        prv = list(range(-1, n - 1))
        heap: list[tuple[int, int]] = []
        for i in range(n - 1):
            value = get((parts[i] << shift) | parts[i + 1])
            if value is not None:
                heap.append((value, i))
        heapq.heapify(heap)
        alive = [True] * n
        while heap:
            value, i = heapq.heappop(heap)
            j = nxt[i]
            if not alive[i] or j >= n:
                continue
            if get((parts[i] << shift) | parts[j]) != value:
                continue
            parts[i] = value & mask
            alive[j] = False
            k = nxt[j]
            nxt[i] = k
            if k < n:
                prv[k] = i
                v = get((parts[i] << shift) | parts[k])
                if v is not None:
                    heapq.heappush(heap, (v, i))
            p = prv[i]
            if p >= 0:
                v = get((parts[p] << shift) | parts[i])
                if v is not None:
                    heapq.heappush(heap, (v, p))
        return [parts[i] for i in range(n) if alive[i]]

    # ---------------------------------------------------------------- decoding

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes that `ids` stand for (special tokens as their UTF-8 text)."""
        try:
            return b"".join(map(self._id_bytes.__getitem__, ids))
        except KeyError as e:
            raise ValueError("unknown token id %r" % (e.args[0],)) from None

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids`; a cut multi-byte character becomes U+FFFD (errors='replace')."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    # ---------------------------------------------------------------- files

    def vocab_json_text(self) -> str:
        """vocab.json content (Hugging Face layout: compact JSON, tokens in id order)."""
        ordered = {self._decoder[i]: i for i in sorted(self._decoder)}
        return json.dumps(ordered, ensure_ascii=False, separators=(",", ":"))

    def merges_text(self) -> str:
        """merges.txt content: '#version: 0.2' then one 'left right' line per merge."""
        return "".join([MERGES_HEADER + "\n"] + ["%s %s\n" % m for m in self._merges])

    def save(self, directory: str) -> tuple[str, str]:
        """Writes vocab.json and merges.txt into `directory` (created if needed); returns
        their paths."""
        os.makedirs(directory, exist_ok=True)
        vocab_path = os.path.join(directory, "vocab.json")
        merges_path = os.path.join(directory, "merges.txt")
        for path, text in ((vocab_path, self.vocab_json_text()), (merges_path, self.merges_text())):
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(text)
        return vocab_path, merges_path

    # ---------------------------------------------------------------- lookups

    @property
    def vocab_size(self) -> int:
        """Size of the id space (largest id + 1), special tokens included."""
        return self._vocab_size

    @property
    def eos_id(self) -> Optional[int]:
        """Id of `<|endoftext|>`, or None."""
        return self._special.get(ENDOFTEXT)

    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self._special)

    @property
    def merges(self) -> list[tuple[str, str]]:
        return list(self._merges)

    def get_vocab(self) -> dict[str, int]:
        """token -> id (a copy)."""
        return dict(self._encoder)

    def token_to_id(self, token: str) -> Optional[int]:
        """Id of a vocabulary token (byte-level spelling) or special token, or None."""
        return self._encoder.get(token)

    def id_to_token(self, idx: int) -> Optional[str]:
        """Token (byte-level spelling) of an id, or None."""
        return self._decoder.get(idx)


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()

