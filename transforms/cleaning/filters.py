"""Pair filters with OpusFilter 3.3.1's names, parameters, defaults and decisions.

Each class takes the parameters OpusFilter's filter of the same name takes (a YAML config
written for OpusFilter works unchanged) and `accept(source, target)` decides a pair as
OpusFilter's `filter` step does. The lines are the ones OpusFilter sees: read as text and
right-stripped (`line.rstrip()`), not T2T's fully stripped lines (leading spaces count in
character lengths and ratios there, so they count here too).

OpusFilter checks per-side parameters with `check_args_compability` (a value for both sides or
a list with one per side) and only warns about parameters it does not know; here an unknown
parameter or a value of the wrong type is a `CleaningConfigError`, so a misspelt setting
stops the job before it starts instead of silently cleaning with a default.

Written from OpusFilter's documented semantics and read source; no code copied.
"""

import difflib
import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import regex

from transforms.cleaning.errors import CleaningConfigError

NUMBER = (int, float)
UNITS = ("word", "char", "character")
TERMINAL_PUNCTUATION = frozenset(".?!\u2026")
NONZERO_DIGITS = frozenset("123456789")


def per_side(filter_name: str, param: str, value: Any, types: Any,
             choices: Optional[Sequence[str]] = None) -> Tuple[Any, Any]:
    """`value` as a (source, target) tuple: one value for both sides or a list of two."""
    values = value if isinstance(value, list) else [value, value]
    if len(values) != 2:
        raise CleaningConfigError("%s: %s needs one value or a list of two (source, target), "
                                  "not %r" % (filter_name, param, value))
    for item in values:
        if not isinstance(item, types):
            raise CleaningConfigError("%s: %s must be %s, not %r" % (
                filter_name, param, " or ".join(t.__name__ for t in
                                                (types if isinstance(types, tuple) else (types,))),
                item))
        if choices and item not in choices:
            raise CleaningConfigError("%s: %s must be one of %s, not %r" % (
                filter_name, param, ", ".join(choices), item))
    return values[0], values[1]


def check_type(filter_name: str, param: str, value: Any, types: Any) -> Any:
    """`value` itself, or a CleaningConfigError when it is not one of `types`."""
    if not isinstance(value, types):
        raise CleaningConfigError("%s: %s must be %s, not %r" % (
            filter_name, param, " or ".join(t.__name__ for t in
                                            (types if isinstance(types, tuple) else (types,))),
            value))
    return value


def length(text: str, unit: str) -> int:
    """Words (whitespace-separated) or characters."""
    return len(text.split()) if unit == "word" else len(text)


def _words(text: str) -> int:
    return len(text.split())


def measures(units: Tuple[str, str]) -> Tuple[Callable[[str], int], Callable[[str], int]]:
    """`length` of each side's unit as one function each, chosen once: the cheap filters run
    on every pair, where a call and a comparison per side and filter show."""
    return (_words if units[0] == "word" else len, _words if units[1] == "word" else len)


class PairFilter:
    """A filter: `PARAMS` are its parameters and OpusFilter's defaults; `name` (optional, as
    in OpusFilter) replaces the class name as the reason of the pairs it drops."""

    PARAMS: Dict[str, Any] = {}
    # A costly filter (a language model): the cleaning stage runs it, and every filter after
    # it, only on the pairs that passed the filters before it and de-duplication, as
    # OpusFilter's recipe does (`transforms.clean.clean_pairs`).
    COSTLY = False
    # Checks and keeps the parameters (each filter's own signature: its PARAMS).
    configure: Callable[..., None]

    def __init__(self, name: Optional[str] = None, **params: Any) -> None:
        self.reason = name or type(self).__name__
        unknown = sorted(set(params) - set(self.PARAMS))
        if unknown:
            raise CleaningConfigError("%s: unknown parameter %s (it takes: %s)" % (
                type(self).__name__, ", ".join(unknown), ", ".join(sorted(self.PARAMS)) or
                "none"))
        self.params = dict(self.PARAMS, **params)
        self.configure(**self.params)

    def setup(self) -> None:
        """Loads heavy state (a model) once per worker; the filters here have none."""

    def accept(self, source: str, target: str) -> bool:
        raise NotImplementedError

    def accept_many(self, pairs: Sequence[Tuple[str, str]],
                    languages: Optional[Tuple[str, str]] = None) -> List[bool]:
        """`accept` of each (source, target) pair; a filter with a batch form overrides it.
        `languages`: the (source, target) languages of the pairs' dataset, for a filter that
        takes them from there (`LangidFilter` without `languages`)."""
        return [self.accept(source, target) for source, target in pairs]

    def needs_languages(self) -> bool:
        """Whether the filter takes its languages from each dataset's pair."""
        return False


class LengthFilter(PairFilter):
    """Each side's length (words or characters) within [min_length, max_length]."""

    PARAMS = {"min_length": 1, "max_length": 100, "unit": "word", "pass_empty": False}

    def configure(self, min_length: Any, max_length: Any, unit: Any, pass_empty: Any) -> None:
        n = type(self).__name__
        self.low = per_side(n, "min_length", min_length, NUMBER)
        self.high = per_side(n, "max_length", max_length, NUMBER)
        self.unit = per_side(n, "unit", unit, str, UNITS)
        self.pass_empty = pass_empty

        self._measures = measures(self.unit)

    def accept(self, source: str, target: str) -> bool:
        a, b = self._measures[0](source), self._measures[1](target)
        if self.pass_empty and a + b == 0:
            return True
        return self.low[0] <= a <= self.high[0] and self.low[1] <= b <= self.high[1]


class LengthRatioFilter(PairFilter):
    """The longer side over the shorter one below `threshold` (inf when one side is empty,
    0 when both are)."""

    PARAMS = {"threshold": 3, "unit": "word"}

    def configure(self, threshold: Any, unit: Any) -> None:
        self.threshold = check_type(type(self).__name__, "threshold", threshold, NUMBER)
        self.unit = per_side(type(self).__name__, "unit", unit, str, UNITS)

        self._measures = measures(self.unit)

    def accept(self, source: str, target: str) -> bool:
        a, b = self._measures[0](source), self._measures[1](target)
        short, long_ = (a, b) if a <= b else (b, a)
        ratio = (0 if long_ == 0 else math.inf) if short == 0 else long_ / short
        return ratio < self.threshold


class LongWordFilter(PairFilter):
    """Every word shorter than `threshold` characters."""

    PARAMS = {"threshold": 40}

    def configure(self, threshold: Any) -> None:
        self.threshold = per_side(type(self).__name__, "threshold", threshold, NUMBER)

    def accept(self, source: str, target: str) -> bool:
        return all(max((len(word) for word in text.split()), default=0) < self.threshold[i]
                   for i, text in enumerate((source, target)))


class AverageWordLengthFilter(PairFilter):
    """Each side's mean word length (0 for an empty side) within [min_length, max_length]."""

    PARAMS = {"min_length": 2, "max_length": 20, "pass_empty": False}

    def configure(self, min_length: Any, max_length: Any, pass_empty: Any) -> None:
        self.low = per_side(type(self).__name__, "min_length", min_length, NUMBER)
        self.high = per_side(type(self).__name__, "max_length", max_length, NUMBER)
        self.pass_empty = pass_empty

    @staticmethod
    def mean(text: str) -> float:
        words = text.split()
        return sum(map(len, words)) / len(words) if words else 0

    def accept(self, source: str, target: str) -> bool:
        means = (self.mean(source), self.mean(target))
        if self.pass_empty and sum(means) == 0:
            return True
        return all(self.low[i] <= means[i] <= self.high[i] for i in (0, 1))


class RegExpFilter(PairFilter):
    """`regexps` (one or one per side, `regex` module syntax) searched in each side: the pair
    passes when no side matches, or with `accept_match` when every side matches."""

    PARAMS = {"regexps": None, "accept_match": False}

    def configure(self, regexps: Any, accept_match: Any) -> None:
        patterns = per_side(type(self).__name__, "regexps", regexps, str)
        try:
            self.patterns = tuple(regex.compile(p) for p in patterns)
        except regex.error as e:
            raise CleaningConfigError("%s: regexps: %s" % (type(self).__name__, e)) from None
        self.accept_match = accept_match

    def accept(self, source: str, target: str) -> bool:
        found = [bool(p.search(t)) for p, t in zip(self.patterns, (source, target))]
        return all(found) if self.accept_match else not any(found)


NOT_ALPHABETIC = regex.compile(r"\p{Alphabetic=No}")
WHITESPACE = regex.compile(r"\s")


class AlphabetRatioFilter(PairFilter):
    """Each side's share of alphabetic characters (of all, or of the non-space ones with
    `exclude_whitespace`) at least `threshold`; an empty side counts as 1."""

    PARAMS = {"threshold": 0.75, "exclude_whitespace": False}

    def configure(self, threshold: Any, exclude_whitespace: Any) -> None:
        self.threshold = per_side(type(self).__name__, "threshold", threshold, NUMBER)
        self.exclude_whitespace = exclude_whitespace

    def ratio(self, text: str) -> float:
        if self.exclude_whitespace:
            text = WHITESPACE.sub("", text)
        if not text:
            return 1.0
        return len(NOT_ALPHABETIC.sub("", text)) / len(text)

    def accept(self, source: str, target: str) -> bool:
        return all(self.ratio(text) >= self.threshold[i]
                   for i, text in enumerate((source, target)))


class CharacterScoreFilter(PairFilter):
    """Each side's alphabetic characters in its Unicode script (`scripts`, one per side) at a
    share of at least `thresholds` (default 1); a side without letters counts as 1."""

    PARAMS = {"scripts": None, "thresholds": None}

    def configure(self, scripts: Any, thresholds: Any) -> None:
        n = type(self).__name__
        if scripts is None:
            raise CleaningConfigError("%s: scripts (one per side) must be given" % n)
        if not isinstance(scripts, list) or len(scripts) != 2 or not all(
                isinstance(s, str) for s in scripts):
            raise CleaningConfigError("%s: scripts must be a list of two script names, not %r"
                                      % (n, scripts))
        thresholds = [1, 1] if thresholds is None else thresholds
        if not isinstance(thresholds, list) or len(thresholds) != 2:
            raise CleaningConfigError("%s: thresholds must be a list of two numbers, not %r"
                                      % (n, thresholds))
        self.thresholds = tuple(check_type(n, "thresholds", t, NUMBER) for t in thresholds)
        try:
            self.not_script = tuple(regex.compile(r"\p{^Script=%s}" % s) for s in scripts)
        except regex.error as e:
            raise CleaningConfigError("%s: scripts: %s" % (n, e)) from None

    def score(self, side: int, text: str) -> float:
        letters = NOT_ALPHABETIC.sub("", text)
        if not letters:
            return 1.0
        return len(self.not_script[side].sub("", letters)) / len(letters)

    def accept(self, source: str, target: str) -> bool:
        return all(self.score(i, text) >= self.thresholds[i]
                   for i, text in enumerate((source, target)))


class TerminalPunctuationFilter(PairFilter):
    """-log(1 + penalty) at least `threshold`; the penalty is the difference in the sides'
    counts of . ? ! and the ellipsis, plus each count above one."""

    PARAMS = {"threshold": -2}

    def configure(self, threshold: Any) -> None:
        self.threshold = check_type(type(self).__name__, "threshold", threshold, NUMBER)

    def accept(self, source: str, target: str) -> bool:
        counts = [sum(1 for c in text if c in TERMINAL_PUNCTUATION) for text in (source, target)]
        penalty = abs(counts[0] - counts[1]) + sum(c - 1 for c in counts if c > 1)
        return -math.log(penalty + 1) >= self.threshold


class NonZeroNumeralsFilter(PairFilter):
    """difflib's similarity ratio of the sides' digit sequences, zeros left out, at least
    `threshold` (`require_all` only matters for more than two sides)."""

    PARAMS = {"threshold": 0.5, "require_all": True}

    def configure(self, threshold: Any, require_all: Any) -> None:
        self.threshold = check_type(type(self).__name__, "threshold", threshold, NUMBER)

    def accept(self, source: str, target: str) -> bool:
        digits = [[int(c) for c in text if c in NONZERO_DIGITS] for text in (source, target)]
        return difflib.SequenceMatcher(None, digits[0], digits[1]).ratio() >= self.threshold


class RepetitionFilter(PairFilter):
    """No side repeats a string of min_length..max_length characters (starting with a
    non-space, optionally spaced) `threshold` or more times after its first occurrence; the
    count is that of the first such run found. `threshold: .inf` turns the filter off."""

    PARAMS = {"threshold": 2, "min_length": 3, "max_length": 100}

    def configure(self, threshold: Any, min_length: Any, max_length: Any) -> None:
        n = type(self).__name__
        check_type(n, "threshold", threshold, NUMBER)
        check_type(n, "min_length", min_length, int)
        check_type(n, "max_length", max_length, int)
        if min_length < 1:
            raise CleaningConfigError("%s: min_length must be at least 1, not %r"
                                      % (n, min_length))
        if threshold < 1:
            raise CleaningConfigError("%s: threshold must be at least 1, not %r" % (n, threshold))
        self.threshold = threshold
        self.pattern = None if threshold == math.inf else regex.compile(
            r"(\S.{%s,%s}?)(?: *\1){%s,}" % (min_length - 1, max_length, threshold))

    def repetitions(self, text: str) -> int:
        found = self.pattern.search(text) if self.pattern else None
        return found.group(0).count(found.group(1)) - 1 if found else 0

    def accept(self, source: str, target: str) -> bool:
        return max(self.repetitions(source), self.repetitions(target)) < self.threshold
