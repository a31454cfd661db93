"""The combines that add a vocabulary sample's counts: a file's parts (`SumSampleFn`), then
the files of one vocabulary (`SumCountsFn`).

A part's counts are a {token: count} dict (a tokenizer of one line, `count_lines_with`) or
`token_count_kernel.TokenArrays` (T2T's tokenizer, compiled). The parts of a file are held
until `extract_output` and added in one go: a file has a few parts (about
`token_counts.PARTS_PER_FILE`), and arrays are added by one compiled call over all of them
(`merge_token_arrays`) rather than pairwise, each pair copying the larger.
"""

from typing import Any, Iterable, List, Mapping, Optional, Tuple

import apache_beam as beam

from transforms.codecs.token_arrays import TokenArrays
from transforms.contracts.elements import FileSample

Counts = Mapping[str, int]  # {token: count}, or TokenArrays


class SumCountsFn(beam.CombineFn):
    """Adds {token: count} mappings (dicts or `TokenArrays`) into a dict: the per-file counts
    of one vocabulary."""

    def create_accumulator(self) -> dict:
        return {}

    def add_input(self, acc: dict, counts: Counts) -> dict:
        get = acc.get
        for token, count in counts.items():
            acc[token] = get(token, 0) + count
        return acc

    def merge_accumulators(self, accs: Iterable[dict]) -> dict:
        accs = list(accs)
        out = max(accs, key=len)
        for acc in accs:
            if acc is not out:
                self.add_input(out, acc)
        return out

    def extract_output(self, acc: dict) -> dict:
        return acc


def sum_counts(parts: List[Any]) -> Any:
    """The sum of parts' counts: `TokenArrays` when every non-empty part is, else a dict."""
    parts = [part for part in parts if len(part)]
    if not parts:
        return {}
    if len(parts) == 1:
        return parts[0]
    if all(isinstance(part, TokenArrays) for part in parts):
        from transforms.codecs.token_count_kernel import merge_token_arrays  # numba: here only
        return merge_token_arrays(parts)
    fn = SumCountsFn()
    return fn.merge_accumulators([fn.add_input({}, part) for part in parts])


# (the parts' counts, lines, characters, the first error, bytes)
SampleAcc = Tuple[List[Any], int, int, Optional[str], int]


class SumSampleFn(beam.CombineFn):
    """Adds the `FileSample`s of one file's parts. Parts only exist when planning read every
    sampled line without an error, so an error comes from a file read whole (one part): the
    first one is kept."""

    def create_accumulator(self) -> SampleAcc:
        return [], 0, 0, None, 0

    def add_input(self, acc: SampleAcc, part: FileSample) -> SampleAcc:
        parts, lines, chars, error, size = acc
        return (parts + [part.counts], lines + part.lines, chars + part.chars,
                error or part.error, size + part.bytes)

    def merge_accumulators(self, accs: Iterable[SampleAcc]) -> SampleAcc:
        accs = list(accs)
        return ([counts for acc in accs for counts in acc[0]], sum(a[1] for a in accs),
                sum(a[2] for a in accs), next((a[3] for a in accs if a[3]), None),
                sum(a[4] for a in accs))

    def extract_output(self, acc: SampleAcc) -> FileSample:
        parts, lines, chars, error, size = acc
        total = sum_counts(parts)
        # The accumulator now holds the sum instead of the parts (same value): a runner keeps
        # it until the bundle ends, while the stages fused after this one (the token index
        # build) run; the parts were ~2M tokens at 10x the full bench beside the index.
        parts[:] = [total] if len(total) else []
        return FileSample(total, lines, chars, error, size)
