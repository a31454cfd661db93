"""Band runs: `--dedup minhash`'s LSH buckets grouped in rounds of bounded size, on disk between.

Why not one `GroupByKey` of (band key, member) elements: the in-process runners (the job's
worker pool, the DirectRunner) hold a shuffle's whole input in the driver, and every pair
sends one element per band (9 at the defaults): the largest process grew 3.7x for 10x the
pairs (470 -> 1,763 MB, 20k -> 200k bench pairs). Here the shuffle is a sort on disk instead:

1. each chunk's entries (a 16-byte band key, then a fixed-size member) are sorted and written
   as one run file (`write_run`), and the chunk reports how many entries fall in each of
   RUN_BUCKETS buckets (the key's first byte): one small element per chunk;
2. `plan_rounds` cuts the buckets into contiguous ranges of at most `round_entries` entries
   summed over every run (a bucket holding more is a round of its own) and names, per
   round, the byte range of each run it needs: a run is sorted, so a bucket range is one
   contiguous read;
3. a round reads its ranges (`read_round`) and `key_groups` gives each key held twice or
   more, with numpy (no Python object per entry).

A key lies in one bucket, so each key's group is whole in one round: the groups are those one
`GroupByKey` gives, for any number of rounds, and a process holds one round's entries at
most (about 100 bytes each in `key_groups`), whatever the corpus' size, up to RUN_BUCKETS
times `round_entries` entries; past that a round is one bucket and grows with the corpus.
"""

from typing import Iterable, Iterator, List, Sequence, Tuple, Union

import numpy as np

from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores

RUN_BUCKETS = 256  # a key's first byte
KEY_BYTES = 16
ROUND_ENTRIES = 1 << 19  # entries a round holds at most (~50 MB in `key_groups`)
# (run path, byte offset, byte length): the part of one run a round reads
RunPart = Tuple[str, int, int]


def write_run(path: str, entries: Iterable[bytes], stores: ObjectStores) -> List[int]:
    """Writes `entries` (key + member, one size) sorted to `path`; returns the count of
    entries in each of the RUN_BUCKETS buckets ([] when there are none: nothing written)."""
    ordered = sorted(entries)
    if not ordered:
        return []
    data = b"".join(ordered)
    first_bytes = np.frombuffer(data, dtype=np.uint8)[::len(ordered[0])]
    file_io.write_bytes_atomically(path, data, stores)
    return np.bincount(first_bytes, minlength=RUN_BUCKETS).tolist()


def bucket_ranges(totals: Sequence[int], round_entries: int) -> List[Tuple[int, int]]:
    """Contiguous [first, end) bucket ranges, in order, each of at most `round_entries`
    entries of `totals` (per bucket) unless one bucket alone holds more; empty ones left out."""
    ranges: List[Tuple[int, int]] = []
    start, held = 0, 0
    for bucket, count in enumerate(totals):
        if held and held + count > round_entries:
            ranges.append((start, bucket))
            start, held = bucket, 0
        if not held and not count:
            start = bucket + 1
            continue
        held += count
    if held:
        ranges.append((start, len(totals)))
    return ranges


def plan_rounds(runs: Iterable[Tuple[str, List[int]]], round_entries: int,
                record: int) -> Iterator[List[RunPart]]:
    """The rounds over `runs` ((path, counts per bucket) as `write_run` reports them, entries
    of `record` bytes): per round, the part of each run holding entries of its buckets."""
    ordered = sorted(runs)
    totals = np.zeros(RUN_BUCKETS, dtype=np.int64)
    for _, counts in ordered:
        totals += counts
    starts = [np.concatenate([[0], np.cumsum(counts)]) for _, counts in ordered]
    for first, end in bucket_ranges(totals.tolist(), round_entries):
        parts = []
        for (path, _), start in zip(ordered, starts):
            length = int(start[end] - start[first])
            if length:
                parts.append((path, int(start[first]) * record, length * record))
        yield parts


def read_round(parts: Iterable[RunPart], stores: ObjectStores) -> bytearray:
    """The entries of a round's run parts, one read each."""
    data = bytearray()
    for path, offset, length in parts:
        with file_io.open_for_read(path, stores, offset) as f:
            piece = f.read(length)
        if len(piece) != length:
            raise IOError("%s: %d bytes at %d expected, %d read (a run file was cut short)"
                          % (path, length, offset, len(piece)))
        data += piece
    return data


def key_groups(data: Union[bytes, bytearray],
               record: int) -> Iterator[Tuple[bytes, List[bytes]]]:
    """(key, [member]) of every key that two or more of the `record`-byte entries of `data`
    hold (members in no particular order)."""
    n = len(data) // record
    if n < 2:
        return
    rows = np.frombuffer(data, dtype=np.uint8).reshape(n, record)
    high = rows[:, :8].copy().view(">u8").ravel()
    low = rows[:, 8:KEY_BYTES].copy().view(">u8").ravel()
    order = np.lexsort((low, high))
    high, low = high[order], low[order]
    starts = np.flatnonzero(np.concatenate(
        [[True], (high[1:] != high[:-1]) | (low[1:] != low[:-1])]))
    ends = np.concatenate([starts[1:], [n]])
    shared = ends - starts > 1
    for start, end in zip(starts[shared].tolist(), ends[shared].tolist()):
        members = rows[order[start:end], KEY_BYTES:]
        yield rows[order[start], :KEY_BYTES].tobytes(), [m.tobytes() for m in members]
