"""Temperature sampling over languages and language pairs: the shares, and how many lines
each file gives the mix. Pure Python (no Beam): the driver plans the vocabulary sample and
the mixed shards with it, and the training readers (`pipeline.tools.mixture`) their rates.

A multilingual model's data is a mix in which small languages are upsampled: XLM, mBART and
NLLB give language (or pair) l the share

    p_l = (n_l / N) ** (1 / T) * w_l / Z,   Z the sum of the same over every l,

n_l its lines, N the lines of all, T the temperature (T = 1: proportional to the data, larger
T: flatter, T = 5 the usual choice) and w_l its weight. A weight is a corpus's (`weight:` in
the corpora file); a language (or pair) fed by several corpora has their mean weight, each
corpus counting by its lines, so that with T = 1 every corpus's share is its lines times its
weight: a weight of 2 counts a corpus as if it were twice as large.

The vocabulary's sample holds S lines (`sample_size`: as many as the data, or fewer when
the data is over `--file_byte_budget` characters per language on average), language l's
share of them apportioned by the largest remainder (`apportion`), and a language's lines
apportioned to its files by their weighted lines. A file of n lines that gives k lines gives
line j (0-based) `take_count(j, n, k)` times: the lines spread evenly over the file (every
line once when k = n, some twice when a small language is upsampled), k in all, whichever
part of the file a worker reads.
"""

import math
from typing import Dict, Hashable, List, Mapping, NamedTuple, Sequence, Tuple, TypeVar

K = TypeVar("K", bound=Hashable)


def temperature_shares(sizes: Mapping[K, Sequence[Tuple[int, float]]],
                       temperature: float) -> Dict[K, float]:
    """{key: share} of `sizes` ({key: [(lines, weight) of each corpus part]}) at
    `temperature`, by the formula of the module docstring; shares sum to 1 (all 0 when
    there are no lines).

    Computed in log space (log p_l = log(n_l / N) / T + log w_l, then normalized from the
    largest): the powers of a small temperature (1e-4: (n_l / N) ** 10000) and the
    products of a huge weight (1.7e308 times lines) are out of a float's range, while the
    shares are not (a share too small for a float is 0, the largest is never 0)."""
    if not temperature > 0:
        raise ValueError("temperature must be positive, not %r" % (temperature,))
    lines = {key: sum(n for n, _ in parts) for key, parts in sizes.items()}
    total = sum(lines.values())
    logs: Dict[K, float] = {}
    for key, parts in sizes.items():
        if lines[key]:
            logs[key] = ((math.log(lines[key]) - math.log(total)) / temperature
                         + math.log(mean_weight(parts)))
    if not logs:
        return {key: 0.0 for key in sizes}
    top = max(logs.values())
    raw = {key: math.exp(value - top) for key, value in logs.items()}
    z = math.fsum(raw.values())
    return {key: raw.get(key, 0.0) / z for key in sizes}


def mean_weight(parts: Sequence[Tuple[int, float]]) -> float:
    """The weight of a language or pair fed by `parts` ([(lines, weight)]): their mean,
    each counting by its lines (1 with no lines); computed against the largest weight, so
    that no product overflows (the mean is at most the largest weight)."""
    lines = sum(n for n, _ in parts)
    if not lines:
        return 1.0
    top = max(w for n, w in parts if n)
    return top * math.fsum(n / lines * (w / top) for n, w in parts if n)


def apportion(total: int, shares: Mapping[K, float]) -> Dict[K, int]:
    """`total` split in proportion to `shares` into integers that sum to `total` (Hamilton's
    largest-remainder method: each gets the floor of its quota, the rest go one each to the
    largest remainders, ties to the key first in sorted order). Keys with no share get 0."""
    weight = sum(shares.values())
    if total <= 0 or weight <= 0:
        return {key: 0 for key in shares}
    quotas = {key: total * share / weight for key, share in shares.items()}
    counts = {key: int(math.floor(q)) for key, q in quotas.items()}
    left = total - sum(counts.values())
    order = [key for key in sorted(quotas, key=lambda key: (-(quotas[key] - counts[key]),
                                                             repr(key))) if shares[key] > 0]
    for i in range(left):  # fewer than len(order), but for rounding
        counts[order[i % len(order)]] += 1
    return counts


def take_count(index: int, lines: int, take: int) -> int:
    """How many times line `index` (0-based) of a file of `lines` lines is taken when the
    file gives `take` lines in all: floor((j+1)k/n) - floor(jk/n), which sums to k over the
    file and is floor(k/n) or that plus one for every line."""
    if lines <= 0:
        return 0
    return ((index + 1) * take) // lines - (index * take) // lines


def sample_size(lines: int, size_bytes: int, languages: int, byte_budget: float) -> int:
    """Lines of the vocabulary's mixed sample: as many as the data holds (`lines`, every
    side of every corpus), but no more than `byte_budget` characters per language on
    average (`size_bytes` of data measure a line's length)."""
    if lines <= 0 or size_bytes <= 0:
        return 0
    return max(0, min(lines, int(languages * byte_budget * lines / size_bytes)))


class MixFile(NamedTuple):
    """One file of the mix: a side of a corpus's dataset."""
    language: str
    lines: int
    bytes: int
    weight: float


class MixPlan(NamedTuple):
    """The sample a mix takes: lines per file (in the order given) and per language."""
    takes: List[int]                       # per file
    languages: Dict[str, Dict[str, float]]  # {language: {lines, weight, share, sample_lines}}
    sample_lines: int


def plan_mix(files: Sequence[MixFile], temperature: float, byte_budget: float) -> MixPlan:
    """How many lines each of `files` gives the vocabulary's sample (`MixPlan`)."""
    by_language: Dict[str, List[int]] = {}
    for i, f in enumerate(files):
        by_language.setdefault(f.language, []).append(i)
    parts = {lang: [(files[i].lines, files[i].weight) for i in members]
             for lang, members in by_language.items()}
    shares = temperature_shares(parts, temperature)
    size = sample_size(sum(f.lines for f in files), sum(f.bytes for f in files),
                       len(by_language), byte_budget)
    per_language = apportion(size, shares)
    takes = [0] * len(files)
    for lang, members in by_language.items():
        top = max(files[i].weight for i in members)  # (no product overflows)
        weighted = {i: files[i].lines * (files[i].weight / top) for i in members}
        for i, k in apportion(per_language[lang], weighted).items():
            takes[i] = k
    report = {lang: {"lines": sum(n for n, _ in parts[lang]),
                     "weight": mean_weight(parts[lang]), "share": shares[lang],
                     "sample_lines": per_language[lang]}
              for lang in sorted(by_language)}
    return MixPlan(takes, report, size)
