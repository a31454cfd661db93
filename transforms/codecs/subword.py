"""A SubwordTextEncoder compatible with Tensor2Tensor 1.15.7: vocab file format, encode, decode.

A vocabulary is a list of subtoken strings; the id of a subtoken is its position in the list.
Tokens from `tokenizer.encode` are escaped (`\\` -> `\\\\`, `_` -> `\\u`, characters outside the
alphabet -> `\\<code point>;`), suffixed with `_`, and split greedily into the longest subtokens
of the vocabulary, left to right.

The vocab file is one subtoken per line wrapped in single quotes, UTF-8, lines ending in `\\n`
only, exactly the bytes `SubwordTextEncoder.store_to_file` writes.
"""

import re

from transforms.codecs import tokenizer

PAD = "<pad>"
EOS = "<EOS>"
RESERVED_TOKENS = (PAD, EOS)
PAD_ID = 0
EOS_ID = 1

# Characters an escaped token may need beyond the corpus's own: always in the alphabet.
ESCAPE_CHARS = frozenset("\\_u;0123456789")

_UNESCAPE_RE = re.compile(r"\\u|\\\\|\\([0-9]+);")


def escape_token(token, alphabet):
    """Escapes `_`, `\\` and characters outside `alphabet` (and newline), then appends `_`."""
    token = token.replace("\\", "\\\\").replace("_", "\\u")
    return "".join(c if c in alphabet and c != "\n" else "\\%d;" % ord(c)
                   for c in token) + "_"


def escape_token_all_known(token):
    """`escape_token` for a token whose characters are all in the alphabet (fast path)."""
    return token.replace("\\", "\\\\").replace("_", "\\u").replace("\n", "\\10;") + "_"


def _unescape_match(m):
    if m.group(1) is None:
        return "_" if m.group(0) == "\\u" else "\\"
    try:
        return chr(int(m.group(1)))
    except (ValueError, OverflowError):
        return "\u3013"  # GETA MARK, the "undefined character" T2T uses.


def unescape_token(escaped_token):
    """Inverse of `escape_token`."""
    trimmed = escaped_token[:-1] if escaped_token.endswith("_") else escaped_token
    return _UNESCAPE_RE.sub(_unescape_match, trimmed)


def segment(escaped_token, subtoken_set, max_subtoken_len):
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


def vocab_file_text(subtoken_strings):
    """The text of a vocab file, as T2T's `store_to_file(add_single_quotes=True)` writes it."""
    return "".join("'%s'\n" % s for s in subtoken_strings)


def parse_vocab_lines(lines):
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


class SubwordEncoder:
    """Encodes text to subtoken ids and back, with a vocabulary learnt by Tensor2Tensor.

    Build it from a list of subtoken strings (`SubwordEncoder(strings)`), or from a vocab file
    with `SubwordEncoder.from_file(path)` / `from_text(text)`.
    """

    def __init__(self, subtoken_strings, cache_size=1 << 18):
        self.subtoken_strings = list(subtoken_strings)
        self._ids = {s: i for i, s in enumerate(self.subtoken_strings) if s}
        self._max_len = max((len(s) for s in self.subtoken_strings), default=1)
        self.alphabet = frozenset(c for s in self.subtoken_strings for c in s) | ESCAPE_CHARS
        self._cache = {}
        self._cache_size = cache_size

    @classmethod
    def from_text(cls, text):
        # As T2T's tf.gfile reader: lines end in "\n" only, and every "\r" is dropped.
        lines = text.replace("\r", "").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return cls(parse_vocab_lines(lines))

    @classmethod
    def from_file(cls, path):
        """Loads a local vocab file (use `transforms.vocab_io` for gs://, s3://, ...)."""
        with open(path, "rb") as f:
            return cls.from_text(f.read().decode("utf-8"))

    @property
    def vocab_size(self):
        return len(self.subtoken_strings)

    def to_text(self):
        return vocab_file_text(self.subtoken_strings)

    def token_to_ids(self, token):
        """Ids of one token (a string as `tokenizer.encode` yields it)."""
        ids = self._cache.get(token)
        if ids is None:
            escaped = escape_token(token, self.alphabet)
            starts = segment(escaped, self._ids, self._max_len)
            bounds = starts[1:] + [len(escaped)]
            ids = [self._ids[escaped[a:b]] for a, b in zip(starts, bounds)]
            if len(self._cache) >= self._cache_size:
                self._cache.clear()
            self._cache[token] = ids
        return ids

    def encode(self, text):
        """Text -> list of subtoken ids (without EOS)."""
        ids = []
        for token in tokenizer.encode(text):
            ids.extend(self.token_to_ids(token))
        return ids

    def decode(self, ids, strip_extraneous=False):
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

    def decode_list(self, ids):
        n = len(self.subtoken_strings)
        return [self.subtoken_strings[i] if 0 <= i < n else "" for i in ids]
