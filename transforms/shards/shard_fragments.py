"""Shard fragments: one encode bundle's records of one shard, sorted, in a work file.

The global shuffle needs every record of a shard in one place, in shuffle-key order. Sending
the records themselves through a GroupByKey costs a pickle per record, a round trip through the
runner (which, on local runners, holds all of them in memory) and a copy into the writer. So an
encode bundle writes, per shard, one file of its records sorted by key, and only the file's name
and counts cross the shuffle; the shard writer merges the fragments of its shard (`heapq.merge`),
streaming, in memory bounded by one record per fragment.

A fragment is a sequence of entries: a 20-byte header (shuffle key u64, dataset index u32, line
number u32, record length u32, little-endian) and the record already framed as TFRecord, so the
merge only copies bytes. Entries are ordered by (key, dataset index, line number), the order of
the final shard file; the line number breaks ties, so the order never depends on the runner.
"""

import heapq
import struct
from typing import Iterable, Iterator, Optional, Tuple

from transforms.contracts.elements import EntryKey, FragmentEntry
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores

_HEADER = struct.Struct("<QIII")


def fragment_name(split: str, shard: int, dataset_index: int, first_line: int,
                  copies: int = 0) -> str:
    """One name per (shard, encode chunk): a retried bundle rewrites the same file; `copies`
    (> 0): the chunk's batch of repeated records starting at that copy (--mix_shards)."""
    return "%s-%05d-d%d-l%d%s.frag" % (split, shard, dataset_index, first_line,
                                       "-c%d" % copies if copies else "")


def fragment_chunk(name: str) -> Optional[Tuple[str, int, int]]:
    """(split, dataset index, first line) of the encode chunk that wrote fragment `name`
    (a file name of `fragment_name`), or None for another name."""
    if not name.endswith(".frag"):
        return None
    stem = name[:-len(".frag")]
    head, _, last = stem.rpartition("-")
    if last.startswith("c"):  # a batch of repeated records
        stem = head
    try:
        split, _shard, dataset, first = stem.rsplit("-", 3)
        return split, int(dataset[1:]), int(first[1:])
    except ValueError:
        return None


def write_fragment(path: str, entries: Iterable[FragmentEntry],
                   stores: Optional[ObjectStores] = None) -> bytes:
    """Writes `entries` [(key, dataset index, line number, record bytes)] sorted, atomically,
    so a fragment that exists is whole: on a local disk under a temporary name, then renamed;
    on an object store in one PUT of the final bytes (`stores`: the worker's ObjectStores;
    a rename there would be a copy and a delete). Either way a retried bundle and the attempt
    it replaces, writing the same fragment at once, leave one whole file. Returns the bytes
    written (a chunk's manifest records their checksum: `transforms.encode.chunk_manifests`)."""
    data = b"".join(_HEADER.pack(key, dataset_index, number, len(record)) + bytes(record)
                    for key, dataset_index, number, record in sorted(entries))
    file_io.write_bytes_atomically(path, data, stores)
    return data


def read_fragment(path: str, stores: Optional[ObjectStores] = None
                  ) -> Iterator[Tuple[EntryKey, bytes]]:
    """Yields ((key, dataset index, line number), record bytes) in file order."""
    with file_io.open_for_read(path, stores) as f:
        while True:
            header = f.read(_HEADER.size)
            if not header:
                return
            if len(header) != _HEADER.size:
                raise ValueError("%s: fragment ends inside an entry header" % path)
            key, dataset_index, number, length = _HEADER.unpack(header)
            record = f.read(length)
            if len(record) != length:
                raise ValueError("%s: fragment ends inside a record" % path)
            yield (key, dataset_index, number), record


def merge_fragments(paths: Iterable[str], stores: Optional[ObjectStores] = None
                    ) -> Iterator[Tuple[EntryKey, bytes]]:
    """((key, dataset index, line number), record) of all fragments, in key order."""
    return heapq.merge(*(read_fragment(p, stores) for p in sorted(paths)),
                       key=lambda entry: entry[0])
