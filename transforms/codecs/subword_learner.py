"""Learning a SubwordTextEncoder vocabulary the way Tensor2Tensor 1.15.7 does, in stages.

T2T's `build_from_token_counts(token_counts, min_count, num_iterations=4)` repeats: segment
every escaped token with the current vocabulary; from each segment start, count every
substring up to `max_subtoken_length - 1` characters (weighted by the token count); accept,
longest first, each substring whose count (less what longer accepted strings already took from
it) is at least `min_count`; then sort accepted strings and the alphabet by count. The outer
`build_to_target_size` bisects `min_count` in [1, 1000] until the size is within 1% of the
target.

Here each iteration is split into stages that can run on different workers and give the same
result as T2T's single loop:

1. `count_windows`: for a batch of tokens, the *window* at each segment start (the longest
   substring counted from there). Every substring T2T counts is a prefix of one window, so
   windows, summed by key, are all the state an iteration needs.
2. Windows are partitioned by their first two characters (`partition_of`). Longest-first
   subtraction only moves counts from a string to its own prefixes, and every prefix of two or
   more characters shares the first two characters, so each partition is a closed system.
3. `select_partition`: counts all prefixes of a partition's windows and, for each requested
   `min_count`, accepts strings longest first. Only strings whose raw count reaches
   `min_count` can be accepted, and all their prefixes also reach it, so only those are kept.
   Single characters (always in the vocabulary, ordered by what is left of their count) get
   their raw count and the amount subtracted from them as sums that add up across partitions.
4. `assemble_vocab`: merges the partitions' results into T2T's vocabulary order.

`learn_vocab` runs the stages in-process (for library users and tests); `transforms.vocab.subword_learning`
runs the same functions as Beam passes.
"""

import collections
import math
import zlib
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from transforms.codecs.subword import RESERVED_TOKENS, ESCAPE_CHARS, escape_token
from transforms.codecs.subword import Selection, escape_token_all_known, segment

if TYPE_CHECKING:
    from transforms.codecs.subword_index import TokenIndex

SegmentationVocab = tuple[frozenset[str], int]  # (subtoken set, longest subtoken)
SizeOf = Callable[[int, int, int], float]  # (min_count, lo, hi) -> vocabulary size

# Probe key for the first refinement iteration, which is the same for every min_count: the
# vocabulary is just the alphabet, so every character is a segment.
FIRST_ITERATION = "*"


def build_alphabet(tokens: Iterable[str], reserved_tokens: Iterable[str] = RESERVED_TOKENS
                   ) -> set[str]:
    """Every character of the tokens and of the reserved tokens, plus T2T's escape characters."""
    alphabet = set(ESCAPE_CHARS)
    for token in tokens:
        alphabet.update(token)
    for token in reserved_tokens:
        alphabet.update(token)
    return alphabet


def count_windows(token_counts: Iterable[tuple[str, int]], max_subtoken_length: Optional[int],
                  vocab: Optional[SegmentationVocab] = None,
                  into: Optional[collections.Counter[str]] = None) -> collections.Counter[str]:
    """Sums, over (token, count) pairs, the windows at each segment start.

    `vocab` is None for the first iteration (every character is a segment), else a
    `(subtoken_set, max_len)` pair describing the previous iteration's vocabulary. All token
    characters must be in the alphabet, which holds when the alphabet was built from these
    tokens. Returns a Counter window -> summed count (updated in place when `into` is given).

    T2T counts `escaped[start:end]` for `end` below `start + max_subtoken_length`, so a window
    is at most `max_subtoken_length - 1` characters long (slicing past the end is harmless).
    """
    counts: collections.Counter[str] = collections.Counter() if into is None else into
    get = counts.get
    span = None if max_subtoken_length is None else max_subtoken_length - 1
    if span is not None and span <= 0:
        return counts
    for token, count in token_counts:
        escaped = escape_token_all_known(token)
        starts: Iterable[int]
        if vocab is None:
            starts = range(len(escaped))
        else:
            starts = segment(escaped, vocab[0], vocab[1])
        if span is None:
            windows = [escaped[i:] for i in starts]
        else:
            windows = [escaped[i:i + span] for i in starts]
        if count == 1:
            counts.update(windows)  # C-level counting
        else:
            for window in windows:
                counts[window] = get(window, 0) + count
    return counts


def partition_of(window: str, num_partitions: int) -> int:
    """Stable partition of a window by its first two characters (the same on every worker)."""
    if num_partitions == 1:
        return 0
    return zlib.crc32(window[:2].encode("utf-8", "surrogatepass")) % num_partitions


def split_windows(windows: dict[str, int], num_partitions: int) -> dict[int, dict[str, int]]:
    """Splits a window->count dict into {partition: dict}."""
    if num_partitions == 1:
        return {0: windows} if windows else {}
    parts: dict[int, dict[str, int]] = collections.defaultdict(dict)
    memo: dict[str, int] = {}
    for window, count in windows.items():
        head = window[:2]
        part = memo.get(head)
        if part is None:
            part = memo[head] = partition_of(head, num_partitions)
        parts[part][window] = count
    return parts


def merge_counts(into: dict[str, int], other: Mapping[str, int]) -> dict[str, int]:
    """Adds the counts of dict `other` into dict `into`; returns `into`."""
    get = into.get
    for key, count in other.items():
        into[key] = get(key, 0) + count
    return into


def _common_prefix_length(a: str, b: str) -> int:
    """Length of the longest common prefix of two strings (binary search on C-level slices)."""
    if not a or not b or a[0] != b[0]:
        return 0
    hi = min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    lo = 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def count_prefixes(windows: Mapping[str, int], lowest: int
                   ) -> tuple[dict[str, int], dict[str, int]]:
    """Counts of the prefixes (two or more characters) of the windows that may reach `lowest`.

    The count of a prefix is the sum of the counts of the windows it begins. In sorted order
    the windows sharing a prefix are contiguous, so a prefix longer than a window's longest
    common prefix with both of its neighbours begins that window alone and its count is the
    window's count. When that is below `lowest`, such a prefix can never be accepted (nor be a
    prefix of an accepted string), so it is not counted at all: for long tokens (a run of Han
    characters is one token) that skips most of T2T's quadratic substring counting.
    Returns (prefix counts, counts of first characters).
    """
    items = sorted(windows.items())
    n = len(items)
    shared = [0] * (n + 1)  # shared[i]: common prefix length of windows i-1 and i
    for i in range(1, n):
        shared[i] = _common_prefix_length(items[i - 1][0], items[i][0])
    char_raw: dict[str, int] = {}
    counts: dict[str, int] = {}
    get = counts.get
    for i, (window, count) in enumerate(items):
        first = window[0]
        char_raw[first] = char_raw.get(first, 0) + count
        upto = len(window) if count >= lowest else max(shared[i], shared[i + 1])
        for end in range(2, upto + 1):
            prefix = window[:end]
            counts[prefix] = get(prefix, 0) + count
    return counts, char_raw


def select_partition(windows: Mapping[str, int], min_counts: Sequence[int]
                     ) -> dict[int, Selection]:
    """Longest-first acceptance within one partition, for several min_counts at once.

    Returns `{min_count: (accepted, char_raw, char_taken)}`: `accepted` lists (count, string)
    for accepted strings of two or more characters, `char_raw` the count of each first
    character, `char_taken` what accepted strings subtracted from their first character.
    """
    lowest = max(1, min(min_counts)) if min_counts else 1
    prefix_counts, char_raw = count_prefixes(windows, lowest)

    results: dict[int, Selection] = {}
    if not min_counts:
        return results
    candidates = [(s, n) for s, n in prefix_counts.items() if n >= lowest]
    candidates.sort(key=lambda item: len(item[0]), reverse=True)
    for min_count in sorted(set(min_counts)):
        threshold = max(1, min_count)
        left = {s: n for s, n in candidates if n >= threshold}
        accepted: list[tuple[int, str]] = []
        taken: dict[str, int] = {}
        for string, _ in candidates:
            count = left.get(string)
            if count is None or count < threshold:
                continue
            accepted.append((count, string))
            for end in range(2, len(string)):
                left[string[:end]] -= count
            taken[string[0]] = taken.get(string[0], 0) + count
        results[min_count] = (accepted, char_raw, taken)
    return results


def merge_selections(into: Selection, other: Selection) -> Selection:
    """Merges two `(accepted, char_raw, char_taken)` partial results of different partitions."""
    accepted, raw, taken = into
    accepted.extend(other[0])
    merge_counts(raw, other[1])
    merge_counts(taken, other[2])
    return into


def empty_selection() -> Selection:
    return ([], {}, {})


def assemble_vocab(selection: Selection, alphabet: Collection[str],
                   reserved_tokens: Iterable[str] = RESERVED_TOKENS) -> list[str]:
    """The vocabulary list T2T builds at the end of an iteration from a merged selection."""
    accepted, char_raw, char_taken = selection
    ranked = list(accepted)
    ranked.extend((char_raw.get(c, 0) - char_taken.get(c, 0), c) for c in alphabet)
    ranked.sort(reverse=True)
    reserved = [escape_token(t, alphabet) for t in reserved_tokens]
    return reserved + [s for _, s in ranked]


def vocab_for_segmentation(subtoken_strings: Iterable[str]) -> SegmentationVocab:
    """The (subtoken_set, max_len) pair `count_windows` segments with."""
    strings = [s for s in subtoken_strings if s]
    return frozenset(strings), max(len(s) for s in strings)


class NeedProbe(Exception):
    """Raised by a bisection that needs the vocab size for a min_count not yet computed."""

    def __init__(self, min_count: int, low: int, high: int) -> None:
        super().__init__(min_count)
        self.min_count = min_count
        self.low = low
        self.high = high


def bisect_min_count(target_size: int, size_of: SizeOf, low: int = 1, high: int = 1000) -> int:
    """T2T's `build_to_target_size` bisection; returns the chosen min_count.

    `size_of(min_count)` returns the vocabulary size for that min_count or raises
    `NeedProbe`; the search is deterministic, so a driver can rerun it from the start each
    time it has learnt more sizes.
    """
    if low > high:
        raise ValueError("Lower bound for the minimum token count is greater than the upper bound.")
    if target_size < 1:
        raise ValueError("Target size must be positive.")

    def search(lo: int, hi: int) -> int:
        present = (lo + hi) // 2
        size = size_of(present, lo, hi)
        if abs(size - target_size) * 100 < target_size or lo >= hi or present < 2:
            return present
        other = search(present + 1, hi) if size > target_size else search(lo, present - 1)
        if abs(size_of(other, lo, hi) - target_size) < abs(size - target_size):
            return other
        return present

    return search(low, high)


def next_probes(known_sizes: Mapping[int, int], target_size: int, lookahead: int, low: int = 1,
                high: int = 1000, width: int = 1,
                margin: Optional[float] = None) -> tuple[Optional[int], list[int]]:
    """Replays the bisection with the sizes known so far.

    `known_sizes` is {min_count: vocab size}. Returns (chosen min_count, []) when the search
    is decided, else (None, the min_counts to probe next: the node the search needs and its
    subtree `lookahead` levels deep, less what is known). With `width` more than the probes that gives, the nodes the search is likely to need
    after them follow, up to `width` in all (`predicted_path`): a round of `width` parallel
    probes then advances about `width` levels instead of one. With `margin` (a fraction of
    a guess) the guessed path follows as far as its turns are clear (`_sure_side`), up to and
    including the first in doubt: a search walking to `high` ends in a few rounds.
    """
    def size_of(min_count: int, lo: int, hi: int) -> float:
        if min_count not in known_sizes:
            raise NeedProbe(min_count, lo, hi)
        return known_sizes[min_count]

    try:
        return bisect_min_count(target_size, size_of, low, high), []
    except NeedProbe as need:
        subtree = probe_subtree(need.low, need.high, lookahead)
        wanted = [t for t in subtree if t not in known_sizes] or [need.min_count]
        if margin is not None:
            wanted.extend(t for t in predicted_path(known_sizes, target_size, low, high, margin)
                          if t not in wanted)
        if len(wanted) < width:
            for t in predicted_path(known_sizes, target_size, low, high):
                if t not in wanted:
                    wanted.append(t)
                    if len(wanted) == width:
                        break
        return None, sorted(wanted)


def predicted_size(known_sizes: Mapping[int, float], min_count: int) -> Optional[float]:
    """A guess of the vocabulary size at `min_count` from the sizes known ({min_count:
    size}); None when none is known.

    The size falls about as a power of min_count (a log-log slope near -0.5 on English and
    Chinese news), so the guess is linear in log-log space: between the nearest known
    min_counts on either side, else along the two nearest on one side (slope -0.5 from a
    single one). A wrong guess costs time, never a different result: the bisection itself
    only ever uses computed sizes.
    """
    if min_count in known_sizes:
        return known_sizes[min_count]
    points = sorted((t, s) for t, s in known_sizes.items() if t > 0 and s > 0)
    if not points:
        return None
    below = [p for p in points if p[0] < min_count]
    above = [p for p in points if p[0] > min_count]
    if below and above:
        (t0, s0), (t1, s1) = below[-1], above[0]
    elif len(points) == 1:
        (t0, s0), = points
        return s0 * (min_count / t0) ** -0.5
    else:
        (t0, s0), (t1, s1) = below[-2:] if below else above[:2]
    slope = (math.log(s1) - math.log(s0)) / (math.log(t1) - math.log(t0))
    return math.exp(math.log(s0) + slope * (math.log(min_count) - math.log(t0)))


# Log-log slopes of size against min_count (news, en and zh: -0.44..-0.72) bound a guess.
SLOPE_RANGE = (-0.7, -0.3)


def _sure_side(known_sizes: Mapping[int, int], min_count: int, guess: float,
               target_size: int, margin: float) -> bool:
    """Whether every size the guess allows (from one known size: any slope of SLOPE_RANGE; from
    more: `margin` x the guess either way) turns the search at `min_count` the same way."""
    points = [(t, s) for t, s in known_sizes.items() if t > 0 and s > 0]
    if len(points) == 1:
        (t0, s0), = points
        sizes = [s0 * (min_count / t0) ** slope for slope in SLOPE_RANGE]
        low, high = min(sizes) * (1 - margin), max(sizes) * (1 + margin)
    else:
        low, high = guess * (1 - margin), guess * (1 + margin)
    return low > target_size * 1.01 or high < target_size * 0.99


def predicted_path(known_sizes: Mapping[int, int], target_size: int, low: int = 1,
                   high: int = 1000, margin: Optional[float] = None) -> list[int]:
    """The min_counts without a known size that the bisection would visit, in order, if
    the unknown sizes were `predicted_size`'s guesses; it ends where no guess exists, and
    with `margin` after the first node where the search's turn is in doubt (`_sure_side`)."""
    path: list[int] = []

    def size_of(min_count: int, lo: int, hi: int) -> float:
        if min_count in known_sizes:
            return known_sizes[min_count]
        guess = predicted_size(known_sizes, min_count)
        if guess is None:
            raise NeedProbe(min_count, lo, hi)
        if min_count not in path:
            path.append(min_count)
            if margin is not None and not _sure_side(known_sizes, min_count, guess,
                                                     target_size, margin):
                raise NeedProbe(min_count, lo, hi)  # in doubt: the path ends here
        return guess

    try:
        bisect_min_count(target_size, size_of, low, high)
    except NeedProbe as need:
        if need.min_count not in path:
            path.append(need.min_count)
    return path


def probe_subtree(low: int, high: int, depth: int) -> list[int]:
    """min_counts of the bisection subtree rooted at [low, high], `depth` levels deep."""
    found: list[int] = []

    def walk(lo: int, hi: int, level: int) -> None:
        present = (lo + hi) // 2
        found.append(present)
        if level >= depth or lo >= hi or present < 2:
            return
        walk(present + 1, hi, level + 1)
        walk(lo, present - 1, level + 1)

    walk(low, high, 0)
    return sorted(set(found))


def refine(token_counts: Iterable[tuple[str, int]], alphabet: Collection[str],
           min_counts: Sequence[int], max_subtoken_length: Optional[int] = None,
           num_iterations: int = 4, reserved_tokens: Iterable[str] = RESERVED_TOKENS,
           num_partitions: int = 1) -> dict[int, list[str]]:
    """Runs the refinement iterations in-process; returns {min_count: vocab list}."""
    items = list(token_counts)
    vocabs: dict[int, list[str]] = {}
    for iteration in range(num_iterations):
        jobs: dict[Any, Optional[SegmentationVocab]]
        if iteration == 0:
            jobs = {FIRST_ITERATION: None}
        else:
            jobs = {t: vocab_for_segmentation(vocabs[t]) for t in min_counts}
        merged = {t: empty_selection() for t in min_counts}
        for key, seg_vocab in jobs.items():
            windows = count_windows(items, max_subtoken_length, seg_vocab)
            wanted = list(min_counts) if key == FIRST_ITERATION else [key]
            for part in split_windows(windows, num_partitions).values():
                for t, selection in select_partition(part, wanted).items():
                    merge_selections(merged[t], selection)
        vocabs = {t: assemble_vocab(merged[t], alphabet, reserved_tokens) for t in min_counts}
    return vocabs


def refine_indexed(index: "TokenIndex", alphabet: Collection[str], min_counts: Sequence[int],
                   num_iterations: int = 4, reserved_tokens: Iterable[str] = RESERVED_TOKENS,
                   num_partitions: int = 1,
                   on_iteration: Optional[Callable[[int, dict[int, list[str]]], None]] = None
                   ) -> dict[int, list[str]]:
    """`refine` over a `subword_index.TokenIndex` (same result, linear-time iterations).

    `on_iteration(iteration, {min_count: vocab list})`, if given, sees every iteration's
    vocabularies (iterations numbered from 1).
    """
    parts = index.partitions(num_partitions)
    vocabs: dict[int, list[str]] = {}
    for iteration in range(num_iterations):
        jobs: dict[Any, Any]
        if iteration == 0:
            jobs = {FIRST_ITERATION: None}
        else:
            jobs = {t: index.segment_marks(vocabs[t]) for t in min_counts}
        merged = {t: empty_selection() for t in min_counts}
        for key, marks in jobs.items():
            wanted = list(min_counts) if key == FIRST_ITERATION else [key]
            for part in parts:
                for t, selection in index.select(marks, part, wanted).items():
                    merge_selections(merged[t], selection)
        vocabs = {t: assemble_vocab(merged[t], alphabet, reserved_tokens) for t in min_counts}
        if on_iteration is not None:
            on_iteration(iteration + 1, vocabs)
    return vocabs


def learn_vocab(token_counts: Mapping[str, int], target_size: int,
                max_subtoken_length: Optional[int] = None,
                reserved_tokens: Iterable[str] = RESERVED_TOKENS, num_iterations: int = 4,
                min_val: int = 1, max_val: int = 1000, num_partitions: int = 1,
                indexed: bool = True) -> list[str]:
    """In-process equivalent of T2T's `build_to_target_size`; returns the vocab list.

    `token_counts` is a dict token -> count (from `tokenizer.encode` over the sample).
    `indexed` learns over a suffix-array `TokenIndex` (the fast path); False runs the
    string-keyed stages above (the plain-Python reference the index is tested against).
    """
    alphabet = build_alphabet(token_counts, reserved_tokens)
    items = list(token_counts.items())
    vocabs: dict[int, list[str]] = {}
    index = None
    if indexed:
        from transforms.codecs.subword_index import TokenIndex  # numba: loaded when indexing
        index = TokenIndex.build(items, max_subtoken_length)

    def size_of(min_count: int, _lo: int, _hi: int) -> float:
        if min_count not in vocabs:
            if index is not None:
                vocabs.update(refine_indexed(index, alphabet, [min_count], num_iterations,
                                             reserved_tokens, num_partitions))
            else:
                vocabs.update(refine(items, alphabet, [min_count], max_subtoken_length,
                                     num_iterations, reserved_tokens, num_partitions))
        return len(vocabs[min_count])

    return vocabs[bisect_min_count(target_size, size_of, min_val, max_val)]


def warm_up_index() -> None:
    """Runs every compiled loop once on a tiny index of the usual types (16-bit codes,
    8-bit window lengths), so numba has them loaded before the first real index."""
    from transforms.codecs.subword_index import TokenIndex  # numba: loaded when indexing
    counts = {"warm": 3, "wash": 2, "up": 2, "\u4e2d\u6587": 2}
    index = TokenIndex.build(counts.items(), 200)
    refine_indexed(index, sorted(build_alphabet(counts)), [1, 2], 4)
