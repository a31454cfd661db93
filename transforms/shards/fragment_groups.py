"""Fragment groups: the runs of many encode chunks of one shard in one fragment file.

A fragment per encode chunk and shard made the objects of a job grow with chunks x shards
(about one object per 1,000 pairs on S3: ~1M at 1B pairs, all under one prefix, each a PUT,
and as many inputs for each shard's merge). So an encode DoFn gathers, per shard, the sorted
run each of its chunks gives (a `FragmentGroup`), in memory as fragment bytes, and writes a
shard's runs merged into one fragment file (the same entry format, sorted) when the group
holds `FLUSH_BYTES`, and at the end of every bundle. The files of a job are then about
(bundles + output bytes / FLUSH_BYTES) x shards, whatever the chunks: each worker writes a
file per shard per bundle, and a large bundle one per FLUSH_BYTES.

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
from transforms.shards.shard_fragments import (entries_of, entry_chunks, fragment_bytes,
                                               stored)
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores

FLUSH_BYTES = 64 << 20
"""The fragment bytes an encode DoFn holds before it writes them: a file per shard."""


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
                *(entries_of(run) for run in runs), key=lambda entry: entry[0]))
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

