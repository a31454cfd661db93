"""The exact de-duplication's groups: a pair's occurrence packed for the dedup shuffle, and
the decision of a group of equal keys and of a bucket of groups (`clean_pairs.CleanPairs`
runs them; the module docstring there says how the shuffle is laid out)."""

import struct
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

import apache_beam as beam

from transforms.clean.near_dedup import outranks_duplicate
from transforms.clean.pair_reading import ChunkKey

PENDING = "pending"
LATER = "(later)"  # the reason of a pair that awaits the costly filters; never written
DEDUP_BUCKETS = 32  # dedup keys are grouped in this many buckets (by a byte of the hash)
DUPLICATE = "duplicate"
DEV_OVERLAP = "dev_overlap"
SPLIT_ORDER = {"train": 0, "dev": 1}  # the order splits are read in
# (split, dataset index, number, filter reason or LATER or None, first line of its chunk,
# source bytes, target bytes): a pair in its dedup group, packed by `Occurrences`
Occurrence = Tuple[str, int, int, Optional[str], int, int, int]
# (number, reason, first occurrence [split, dataset index, line] or None, source text,
# target text, source bytes, target bytes)
Drop = Tuple[Any, ...]


class Occurrences:
    """Packs an Occurrence into 39 bytes for the dedup shuffle, and back.

    Every pair of the corpus goes through the dedup `GroupByKey`, which the local runner holds in
    the driver as Python objects until the pass ends: a tuple of ten fields cost ~330 bytes a
    pair there (~250 MB at the bench corpus' 760k pairs), the packed bytes ~70. Big-endian,
    split (in SPLIT_ORDER), dataset index and line number first: the bytes sort in input
    order. `splits`: every split name of the job; `reasons`: the filters' reasons."""

    LAYOUT = struct.Struct(">BIQHQQQ")

    def __init__(self, splits: Iterable[str], reasons: Iterable[str]) -> None:
        self.splits = sorted(set(splits), key=lambda split: (SPLIT_ORDER.get(split, 2), split))
        self.reasons: List[Optional[str]] = [None, LATER] + list(dict.fromkeys(reasons))
        self._split_codes = {split: code for code, split in enumerate(self.splits)}
        self._reason_codes = {reason: code for code, reason in enumerate(self.reasons)}

    def pack(self, split: str, index: int, number: int, reason: Optional[str],
             chunk_first: int, src_bytes: int, tgt_bytes: int) -> bytes:
        return self.LAYOUT.pack(self._split_codes[split], index, number,
                                self._reason_codes[reason], chunk_first, src_bytes, tgt_bytes)

    def unpack(self, packed: bytes) -> Occurrence:
        split, index, number, reason, chunk_first, src_bytes, tgt_bytes = \
            self.LAYOUT.unpack(packed)
        return (self.splits[split], index, number, self.reasons[reason], chunk_first,
                src_bytes, tgt_bytes)


def decide_group(packed: Iterable[bytes], codec: Occurrences, dedup_on: bool,
                 drop_dev_overlap: bool) -> Iterator[Any]:
    """The drops among the occurrences of one dedup key (`packed` by `codec`). Yields
    ((split, dataset index), drop) as `_ScoreChunkFn` does, the texts None (the writer reads
    them), and for a kept occurrence that awaits the costly filters, (PENDING, ((split,
    dataset index, chunk's first line), line number))."""
    occurrences = [codec.unpack(o) for o in sorted(packed)]  # in input order
    kept: Dict[str, Occurrence] = {}  # split -> its first occurrence
    for o in occurrences:
        kept.setdefault(o[0], o)
    dev_first = kept.get("dev") if drop_dev_overlap else None
    for o in occurrences:
        split, index, number, reason, chunk_first, src_bytes, tgt_bytes = o
        first = None
        if dev_first is not None and split == "train":
            reason, first = DEV_OVERLAP, dev_first
        elif dedup_on and kept[split] is not o and not outranks_duplicate(reason):
            reason, first = DUPLICATE, kept[split]
        if reason == LATER:
            yield PENDING, ((split, index, chunk_first), number)
        elif reason:
            named = None if first is None else [first[0], first[1], first[2]]
            yield (split, index), (number, reason, named, None, None, src_bytes, tgt_bytes)


def decide_bucket(item: Tuple[int, Iterable[List[Tuple[bytes, bytes]]]], codec: Occurrences,
                  dedup_on: bool, drop_dev_overlap: bool) -> Iterator[Any]:
    """`decide_group` of every dedup key of one bucket ((bucket, [[(key, packed)]]) as
    `_Scorer._score` sends them): ((split, dataset index), [drop]) per dataset, and PENDING
    (chunk key, [line number]) per chunk, so what follows handles an element per dataset or
    chunk, not per pair. A bucket holds 1/DEDUP_BUCKETS of the pairs' keys and positions."""
    groups: Dict[bytes, List[bytes]] = {}
    for keyed in item[1]:
        for key, packed in keyed:
            groups.setdefault(key, []).append(packed)
    drops: Dict[Tuple[str, int], List[Drop]] = {}
    pending: Dict[ChunkKey, List[int]] = {}
    for packed_group in groups.values():
        if len(packed_group) == 1:  # most keys: the pair's own reason, as decide_group says
            split, index, number, reason, chunk_first, src_bytes, tgt_bytes = \
                codec.unpack(packed_group[0])
            if reason == LATER:
                pending.setdefault((split, index, chunk_first), []).append(number)
            elif reason:
                drops.setdefault((split, index), []).append(
                    (number, reason, None, None, None, src_bytes, tgt_bytes))
            continue
        for where, decided in decide_group(packed_group, codec, dedup_on, drop_dev_overlap):
            if where == PENDING:
                pending.setdefault(decided[0], []).append(decided[1])
            else:
                drops.setdefault(where, []).append(decided)
    for chunk, numbers in sorted(pending.items()):
        yield beam.pvalue.TaggedOutput(PENDING, (chunk, numbers))
    yield from sorted(drops.items())
