"""`--decontaminate`: which test file a train pair overlaps, if any.

A pair is contaminated by a test file when either side, normalized as the near-duplicate
modes normalize it (`near_duplicates.normalize`), equals a line of that file normalized the
same way, or when either side shares a run of N words with one of its lines (N:
`--decontaminate_ngram`, 13 by default as lm-evaluation-harness's decontamination; 0 checks
whole lines only). Words for the n-grams are the runs of letters and digits of the NFKC,
lowercased text, so punctuation and spacing do not hide an overlap; a language written
without spaces has long "words", and is caught by the whole-line match. A test line that
normalizes to nothing (digits or punctuation only) matches nothing.

The index holds the normalized lines and the n-grams of the test files (test sets are small:
FLORES devtest is 1,012 lines): each worker builds it once (`OverlapIndex`, built in a DoFn's
setup). A pair is charged to one file: whole lines are checked before n-grams, and a line or
n-gram found in several files names the first given; its reason is `REASON_PREFIX` + that
file's label.
"""

import os
import unicodedata
from typing import Dict, List, Optional, Sequence, Tuple

import regex

from transforms.cleaning.near_duplicates import normalize

REASON_PREFIX = "test_overlap:"
WORD = regex.compile(r"[\p{L}\p{N}]+")


def words(text: str) -> List[str]:
    return WORD.findall(unicodedata.normalize("NFKC", text).lower())


def labels(paths: Sequence[str]) -> List[str]:
    """Each test file's label in reasons: its base name, or its path when two share one."""
    names = [os.path.basename(p) for p in paths]
    return [name if names.count(name) == 1 else path for name, path in zip(names, paths)]


def reasons(paths: Sequence[str]) -> List[str]:
    return [REASON_PREFIX + label for label in labels(paths)]


class OverlapIndex:
    """The lines and n-grams of the test files: `texts` is each file's text, in order."""

    def __init__(self, texts: Sequence[Tuple[str, str]], ngram: int) -> None:
        self._ngram = ngram
        self._lines: Dict[str, str] = {}
        self._grams: Dict[str, str] = {}
        for reason, text in texts:
            for line in text.splitlines():
                key = normalize(line)
                if key:
                    self._lines.setdefault(key, reason)
                for gram in self._ngrams(line):
                    self._grams.setdefault(gram, reason)

    def _ngrams(self, text: str) -> List[str]:
        n = self._ngram
        if not n:
            return []
        ws = words(text)
        return [" ".join(ws[i:i + n]) for i in range(len(ws) - n + 1)]

    def reason(self, source: str, target: str) -> Optional[str]:
        """The reason of the first test file either side overlaps, or None."""
        for side in (source, target):
            found = self._lines.get(normalize(side))
            if found is not None:
                return found
        for side in (source, target):
            for gram in self._ngrams(side):
                found = self._grams.get(gram)
                if found is not None:
                    return found
        return None
