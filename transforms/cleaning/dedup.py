"""The de-duplication key of a pair, as OpusFilter's `remove_duplicates` compares pairs.

OpusFilter reads each file as Python text and hashes the lines as read, line ends included:
two pairs are duplicates when their lines are equal up to the options below, so "a" and
"a " differ, and a last line without its newline differs from the same text with one. Before
joining the compared sides with a newline it applies, in this order, `letter_words_only`
(keep only the whitespace-separated words made of letters alone), `letters_only` (drop every
non-letter) and `lowercase`, and writes each line's own newline as the two characters `\\n`.

The key here is built from the same normalized text and hashed with BLAKE2b (128 bits: the
job groups pairs by it across workers; OpusFilter keeps a 64-bit xxhash per pair in memory).
Which sides are compared is `--dedup`: `pairs` (both) or `source`. `--dedup normalized`
compares the sides `--dedup_scope` names after `near_duplicates.normalize` instead (`bifixer`).
"""

import dataclasses
import hashlib
from typing import Sequence, Tuple

import regex

from transforms.cleaning.near_duplicates import normalize as bifixer_like

NOT_LETTER = regex.compile(r"[^\p{L}]")
ALL_LETTERS = regex.compile(r"^[\p{L}]+$")


@dataclasses.dataclass(frozen=True)
class DedupOptions:
    """OpusFilter's `remove_duplicates` options (the `remove_duplicates:` mapping of the
    `--filters` file) and the sides compared."""
    sides: Tuple[int, ...] = (0, 1)
    lowercase: bool = False
    letters_only: bool = False
    letter_words_only: bool = False
    bifixer: bool = False  # --dedup normalized: `near_duplicates.normalize`, not the above

    def normalize(self, line: str) -> str:
        """One side as compared: `line` as read, its newline (if it had one) included."""
        if self.bifixer:
            return bifixer_like(line)
        if self.letter_words_only:
            line = " ".join(word for word in line.split() if ALL_LETTERS.search(word))
        if self.letters_only:
            line = NOT_LETTER.sub("", line)
        if self.lowercase:
            line = line.lower()
        return line.replace("\n", "\\n")

    def key(self, lines: Sequence[str]) -> bytes:
        """The 16-byte key of a pair: `lines` are its sides as read, newlines included."""
        if self.bifixer or self.lowercase or self.letters_only or self.letter_words_only:
            text = ("\t" if self.bifixer else "\n").join(
                [self.normalize(lines[side]) for side in self.sides])
        else:  # `normalize` of the defaults, without a call per side (a key per pair)
            text = "\n".join([lines[side].replace("\n", "\\n") for side in self.sides])
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
