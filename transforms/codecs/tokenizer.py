"""Tensor2Tensor's invertible tokenizer, reimplemented with a compiled regular expression.

Text is split at every boundary between an alphanumeric character (Unicode category L* or
N*, as Python's own `unicodedata` classifies it, the same table Tensor2Tensor uses) and a
non-alphanumeric one. A token that is a single space is dropped unless it is the first token,
because `decode` re-inserts one space between two adjacent alphanumeric tokens.

The character class is built from `unicodedata` rather than `regex`'s `\\p{L}`/`\\p{N}`: the
`regex` module ships its own, newer Unicode tables, and a different table would tokenize some
characters differently from Tensor2Tensor running on the same Python.
"""

import collections
import functools
import json
import os
import re
import sys
import unicodedata
from collections.abc import Iterable, Sequence


_TABLE_PATH = os.path.join(os.path.dirname(__file__), "alnum_ranges.json")


def compute_alnum_ranges() -> tuple[tuple[int, int], ...]:
    """Code-point ranges [(lo, hi), ...] of categories L* and N*, below sys.maxunicode.

    Tensor2Tensor enumerates `range(sys.maxunicode)`, so U+10FFFF itself is excluded (it is
    unassigned anyway). Asking `unicodedata` about 1.1M code points takes ~0.4 s, in every
    process that tokenizes: `_alnum_ranges` reads a stored copy instead when it can.
    """
    ranges: list[tuple[int, int]] = []
    start = None
    for cp in range(sys.maxunicode):
        is_alnum = unicodedata.category(chr(cp))[0] in "LN"
        if is_alnum and start is None:
            start = cp
        elif not is_alnum and start is not None:
            ranges.append((start, cp - 1))
            start = None
    if start is not None:
        ranges.append((start, sys.maxunicode - 1))
    return tuple(ranges)


@functools.lru_cache(maxsize=1)
def _alnum_ranges() -> tuple[tuple[int, int], ...]:
    """`compute_alnum_ranges()`, from the table stored beside this module when it was made
    with this Python's Unicode version (`python -m transforms.codecs.tokenizer` writes it)."""
    try:
        with open(_TABLE_PATH, encoding="utf-8") as f:
            table = json.load(f)
        if table["unidata_version"] == unicodedata.unidata_version:
            return tuple((lo, hi) for lo, hi in table["ranges"])
    except (OSError, ValueError, KeyError):
        pass
    return compute_alnum_ranges()


def alnum_ranges() -> tuple[tuple[int, int], ...]:
    """The code-point ranges [(lo, hi), ...] this tokenizer counts as alphanumeric: the one
    table every splitter of runs uses (the regular expressions here, the compiled encoder's
    lookup table in `subword_kernel`)."""
    return _alnum_ranges()


def _class_body(bmp_only: bool = False) -> str:
    parts = []
    for lo, hi in _alnum_ranges():
        if bmp_only and lo > 0xFFFF:
            break
        hi = min(hi, 0xFFFF) if bmp_only else hi
        parts.append(re.escape(chr(lo)) if lo == hi else
                     "%s-%s" % (re.escape(chr(lo)), re.escape(chr(hi))))
    return "".join(parts)


@functools.lru_cache(maxsize=2)
def _run_pattern(bmp_only: bool = False) -> re.Pattern[str]:
    """Matches maximal runs of alphanumeric or of non-alphanumeric characters.

    `re` tests a character of the Basic Multilingual Plane against a bitmap, but checks
    every range above U+FFFF one by one (hundreds of them for L* and N*), so text without
    such characters is split with a class restricted to the BMP, three times faster.
    """
    body = _class_body(bmp_only)
    return re.compile("[%s]+|[^%s]+" % (body, body))


@functools.lru_cache(maxsize=1)
def _alnum_char_pattern() -> re.Pattern[str]:
    return re.compile("[%s]" % _class_body())


def is_alnum_char(char: str) -> bool:
    """True if `char` is alphanumeric in Tensor2Tensor's sense."""
    return _alnum_char_pattern().match(char) is not None


_ABOVE_BMP = re.compile("[\U00010000-\U0010FFFF]")


def split_runs(text: str) -> list[str]:
    """Maximal runs of alphanumeric or of non-alphanumeric characters, in order.

    `encode` is these runs without the single spaces between two other runs; encoders that
    map a run to ids may instead map " " to nothing and add the first/last one back.
    """
    bmp_only = text.isascii() or _ABOVE_BMP.search(text) is None
    return _run_pattern(bmp_only).findall(text)


@functools.lru_cache(maxsize=2)
def _runs_within_lines_pattern(bmp_only: bool = False) -> re.Pattern[str]:
    """`_run_pattern` whose runs never hold a newline: lines joined by "\n" split into the
    runs of each line, in one pass, without the runs of a single space (no token: about
    half of the runs of English, which Counter would count only to drop)."""
    body = _class_body(bmp_only)
    return re.compile("[%s]+|(?! (?:[%s]|\n|$))[^%s\n]+" % (body, body, body))


def count_tokens(stripped_lines: Iterable[str]) -> collections.Counter[str]:
    """collections.Counter of `encode`'s tokens over lines, in one regex pass over them all.

    For `str.strip()`-ed lines without a newline (T2T's vocabulary sample) `encode` is every
    run but a single space: such a line neither starts nor ends with whitespace, so a " "
    run is never its first or last one.
    """
    # As in `split_runs`: the pattern for characters above the BMP is much slower, so only
    # the lines that have one use it (one such line must not slow down a whole batch).
    above = _ABOVE_BMP.search
    plain: list[str] = []
    wide: list[str] = []
    for line in stripped_lines:
        (plain if line.isascii() or above(line) is None else wide).append(line)
    counts = collections.Counter(_runs_within_lines_pattern(True).findall("\n".join(plain)))
    if wide:
        counts.update(_runs_within_lines_pattern(False).findall("\n".join(wide)))
    counts.pop(" ", None)  # (the pattern leaves single spaces out already)
    return counts


def encode(text: str) -> list[str]:
    """Splits a unicode string into tokens, exactly as `tensor2tensor...tokenizer.encode`."""
    if not text:
        return []
    runs = split_runs(text)
    if len(runs) <= 2:
        return runs
    # Drop single-space tokens except the first and the last one.
    last = len(runs) - 1
    return [tok for i, tok in enumerate(runs) if tok != " " or i == 0 or i == last]


def decode(tokens: Sequence[str]) -> str:
    """Inverse of `encode`: joins tokens, with a space between two alphanumeric tokens."""
    match = _alnum_char_pattern().match
    out = []
    prev_alnum = False
    for i, token in enumerate(tokens):
        alnum = match(token[0]) is not None
        if i > 0 and prev_alnum and alnum:
            out.append(" ")
        out.append(token)
        prev_alnum = alnum
    return "".join(out)


if __name__ == "__main__":
    with open(_TABLE_PATH, "w", encoding="utf-8") as out:
        json.dump({"unidata_version": unicodedata.unidata_version,
                   "about": "Code-point ranges of Unicode categories L* and N* (see "
                            "tokenizer.compute_alnum_ranges); regenerate with "
                            "python -m transforms.codecs.tokenizer",
                   "ranges": compute_alnum_ranges()}, out, separators=(",", ":"))
