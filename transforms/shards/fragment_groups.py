"""Fragment groups: the runs of many encode chunks of one shard in one fragment file.

A fragment per encode chunk and shard made the objects of a job grow with chunks x shards
(about one object per 1,000 pairs on S3: ~1M at 1B pairs, all under one prefix, each a PUT,
and as many inputs for each shard's merge). So an encode DoFn gathers, per shard, the sorted
run each of its chunks gives (a `FragmentGroup`), in memory as fragment bytes, and writes a
shard's runs merged into one fragment file (the same entry format, sorted) when the group
holds `FLUSH_BYTES`, and at the end of every bundle. The files of a job are then about
(bundles + output bytes / FLUSH_BYTES) x shards, whatever the chunks: each worker writes a
file per shard per bundle, and a large bundle one per FLUSH_BYTES.

A bound in bytes alone made a kill lose a lot of a job of moderate size: at the full bench
(200 MB of input, 76 chunks, 2 workers) each worker's 64 MiB held half its chunks, and its
first group was written near the end of its bundle, so a run killed at 80% of its encode pass
had kept nothing. So a group is also written once it holds a `GROUPS_PER_PASS`-th of the
pass's input bytes (`flush_bytes`; at least `MIN_FLUSH_BYTES`, so a small job still writes
a file a shard per bundle): a kill loses at most about that share of the pass per worker,
and the files of a job are at most about (GROUPS_PER_PASS + bundles + output bytes /
FLUSH_BYTES) x shards, still not growing with the chunks.

The global order is untouched: entries are ordered by (key, dataset index, line number),
which never ties, so merging runs here and their files in the shard writer gives the order a
merge of the per-chunk fragments gave, byte for byte. A group's file of a shard is named
after its first run (`shard_fragments.fragment_name`), so a retried bundle that processes
the same chunks in the same order writes the same names with the same bytes. Memory is
bounded by FLUSH_BYTES plus one chunk's records.
"""

import heapq
from typing import Dict, Iterable, Iterator, List, Optional

import google_crc32c

from transforms.contracts.elements import FragmentEntry, ShardKey
from transforms.shards.shard_fragments import (MERGE_FAN_IN, entries_of, entry_chunks,
                                               fragment_bytes, stored)
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores

FLUSH_BYTES = 64 << 20
"""The fragment bytes an encode DoFn holds before it writes them: a file per shard."""

GROUPS_PER_PASS = MERGE_FAN_IN
"""A group is written once it holds this share of the pass's input bytes: a kill loses at
most about 1/64 of the pass a worker. Fragment bytes are ~0.7x the input's for subword ids,
so a worker's groups of a shard stay under MERGE_FAN_IN and a shard's merge of a one-worker
pass stays one level (smaller groups cost the merge a level and the job more files)."""

MIN_FLUSH_BYTES = 1 << 20
"""... but never below this, so a small job keeps a file a shard per bundle."""


def flush_bytes(most: int, pass_bytes: int) -> int:
    """The fragment bytes after which an encode worker writes its group: `most`
    (--fragment_group_mb), or a GROUPS_PER_PASS-th of the pass's input bytes `pass_bytes`
    (both sides of every dataset) when that is smaller, but at least MIN_FLUSH_BYTES (or
    `most`, when that is smaller still). Depends only on the job, never on time, so a retried
    bundle groups its chunks as the first attempt did (same names, same bytes)."""
    return min(most, max(MIN_FLUSH_BYTES, pass_bytes // GROUPS_PER_PASS))


class FragmentGroup:
    """Sorted runs of several chunks, per (split, shard), until `flush` writes each shard's
    as one fragment file."""

    def __init__(self, stores: Optional[ObjectStores], flush_bytes: int = FLUSH_BYTES
                 ) -> None:
        self._stores = stores
        self._flush_bytes = flush_bytes
        self._paths: Dict[ShardKey, str] = {}
        self._runs: Dict[ShardKey, List[bytes]] = {}
        self._size = 0

    def add(self, split: str, shard: int, run_path: str, entries: Iterable[FragmentEntry]
            ) -> str:
        """Adds a chunk's entries of a shard (`run_path`: the fragment path the run would
        have on its own); returns the path of the file they will be written to."""
        data = fragment_bytes(entries)
        key = (split, shard)
        if key not in self._runs:
            self._paths[key], self._runs[key] = run_path, []
        self._runs[key].append(data)
        self._size += len(data)
        return self._paths[key]

    def full(self) -> bool:
        return self._size >= self._flush_bytes

    def flush(self) -> Dict[str, List[int]]:
        """Writes each shard's runs merged into its file (atomically, see
        `file_io.write_chunks`) and empties the group; returns {path: [size, crc32c]}."""
        checks: Dict[str, List[int]] = {}
        for key in sorted(self._runs):
            runs = self._runs[key]
            chunks: Iterable[bytes] = runs if len(runs) == 1 else entry_chunks(heapq.merge(
                *(entries_of(run) for run in runs)))  # entries never tie on (key, ds, line)
            check = [0, 0]

            def checked(chunks: Iterable[bytes] = chunks, check: List[int] = check
                        ) -> Iterator[bytes]:
                for chunk in stored(chunks):
                    check[0] += len(chunk)
                    check[1] = google_crc32c.extend(check[1], chunk)
                    yield chunk
            file_io.write_chunks(self._paths[key], checked(), self._stores)
            checks[self._paths[key]] = check
        self._paths, self._runs, self._size = {}, {}, 0
        return checks

