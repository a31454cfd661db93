"""Shard fragments: one encode bundle's records of one shard, sorted, in a work file.

The global shuffle needs every record of a shard in one place, in shuffle-key order. Sending
the records themselves through a GroupByKey costs a pickle per record, a round trip through the
runner (which, on local runners, holds all of them in memory) and a copy into the writer. So an
encode bundle writes, per shard, one file of its records sorted by key, and only the file's name
and counts cross the shuffle; the shard writer merges the fragments of its shard (`heapq.merge`),
streaming, in memory bounded by one record per fragment.

A fragment is a sequence of entries: a 20-byte header (shuffle key u64, dataset index u32, line
number u32, record length u32, little-endian) and the serialized record, stored gzip-compressed
(zlib level 1, `stored`): uncompressed, the fragments were ~1.2x the output, and they sit on
the work disk beside the shards being written (temporary disk at most 1.2x the output, issue
49); the records' varint ids compress to about two thirds, for some CPU that every pair pays
alike. Entries are ordered by (key, dataset index, line number), the order of
the final shard file; the line number breaks ties, so the order never depends on the runner.

A shard has a fragment per encode chunk: thousands at a large job's size, and a merge that
opened them all at once would end with `Too many open files` under a worker's `ulimit -n`
(1024, often, and SLURM passes the submitting shell's on). So a merge reads at most
`MERGE_FAN_IN` streams at once: with more fragments, consecutive groups of them are first
merged into runs (the same entry format) in the work directory, level after level, and the
runs removed as soon as they are merged on. `heapq.merge` is stable and the groups keep the
fragments' order, so the records come out exactly as one merge of all would give them.
"""

import heapq
import struct
import uuid
import zlib
from typing import IO, Iterable, Iterator, List, Optional, Tuple

from transforms.contracts.elements import EntryKey, FragmentEntry
from transforms.storage import file_io, paths as path_syntax
from transforms.storage.object_stores import ObjectStores

_HEADER = struct.Struct("<QIII")

MERGE_FAN_IN = 64
"""The most fragments (or runs) one merge reads at once: its open files or store streams are
these and the one it writes."""

COMPRESS_LEVEL = 1  # zlib's fastest: ~2/3 of the bytes at ~50 MB/s of one loaded core
_RUN_CHUNK = 1 << 20  # bytes of entries a run's writer hands on at once
_READ_BLOCK = 1 << 16  # compressed bytes a fragment's reader takes at once
RUNS_DIR = "merge-runs"  # beside the fragments: each merge's runs in a directory of its own


def fragment_name(split: str, shard: int, dataset_index: int, first_line: int,
                  copies: int = 0) -> str:
    """One name per (shard, encode chunk): a retried bundle rewrites the same file; `copies`
    (> 0): the chunk's batch of repeated records starting at that copy (--mix_shards)."""
    return "%s-%05d-d%d-l%d%s.frag" % (split, shard, dataset_index, first_line,
                                       "-c%d" % copies if copies else "")


def write_fragment(path: str, entries: Iterable[FragmentEntry],
                   stores: Optional[ObjectStores] = None) -> bytes:
    """Writes `entries` [(key, dataset index, line number, record bytes)] sorted, atomically,
    so a fragment that exists is whole: on a local disk under a temporary name, then renamed;
    on an object store in one PUT of the final bytes (`stores`: the worker's ObjectStores;
    a rename there would be a copy and a delete). Either way a retried bundle and the attempt
    it replaces, writing the same fragment at once, leave one whole file. Returns the bytes
    written (a chunk's manifest records their checksum: `transforms.encode.chunk_manifests`)."""
    data = b"".join(stored([fragment_bytes(entries)]))
    file_io.write_bytes_atomically(path, data, stores)
    return data


def read_fragment(path: str, stores: Optional[ObjectStores] = None
                  ) -> Iterator[Tuple[EntryKey, bytes]]:
    """Yields ((key, dataset index, line number), record bytes) in file order.

    The file is decompressed a block at a time and its entries cut from memory: read
    through a GzipFile, two reads an entry were most of a shard merge's cost, which a
    rerun after a kill pays in full (issue 49). Memory: a block of the file and what it
    inflates to, per open fragment."""
    with file_io.open_for_read(path, stores) as raw:
        try:
            yield from _block_entries(raw, path)
        except zlib.error as e:  # damaged
            raise ValueError("%s: fragment damaged or cut short (%s)" % (path, e)) from None


def _cut(buffer: bytes, pos: int, cut_to: List[int]) -> Iterator[Tuple[EntryKey, bytes]]:
    """The whole entries of `buffer` from `pos` on, cut from memory; `cut_to[0]`: where the
    first incomplete one (or the end) is."""
    unpack, header, end = _HEADER.unpack_from, _HEADER.size, len(buffer)
    while end - pos >= header:
        key, dataset_index, number, length = unpack(buffer, pos)
        stop = pos + header + length
        if stop > end:
            break
        yield (key, dataset_index, number), buffer[pos + header:stop]
        pos = stop
    cut_to[0] = pos


def _block_entries(raw: IO[bytes], path: str) -> Iterator[Tuple[EntryKey, bytes]]:
    unpacker = zlib.decompressobj(31)  # 31: gzip's framing, its trailer checked
    buffer, pos, ended, started, cut_to = b"", 0, False, False, [0]
    while True:
        yield from _cut(buffer, pos, cut_to)
        pos = cut_to[0]
        if ended:
            if pos != len(buffer):
                raise ValueError("%s: fragment ends inside an entry" % path)
            return
        block = raw.read(_READ_BLOCK)
        if not block and not started:  # an empty file: no entries (as GzipFile reads it)
            return
        started = True
        if block:
            data = unpacker.decompress(block)
            while unpacker.eof and unpacker.unused_data:  # another gzip member follows
                rest = unpacker.unused_data
                unpacker = zlib.decompressobj(31)
                data += unpacker.decompress(rest)
        else:
            if not unpacker.eof:
                raise ValueError("%s: fragment damaged or cut short (its gzip stream ends "
                                 "early)" % path)
            data, ended = unpacker.flush(), True
        buffer, pos = buffer[pos:] + data, 0


def stored(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Fragment bytes (`chunks`) as a fragment file holds them: one gzip stream."""
    packer = zlib.compressobj(COMPRESS_LEVEL, zlib.DEFLATED, 31)  # 31: gzip's framing
    for chunk in chunks:
        packed = packer.compress(chunk)
        if packed:
            yield packed
    yield packer.flush()


def entries_of(data: bytes) -> Iterator[Tuple[EntryKey, bytes]]:
    """Yields the entries of fragment bytes held in memory, as `read_fragment` does."""
    cut_to = [0]
    yield from _cut(data, 0, cut_to)
    if cut_to[0] != len(data):
        raise ValueError("a fragment in memory ends inside an entry")


def fragment_bytes(entries: Iterable[FragmentEntry]) -> bytes:
    """`entries` sorted, in the fragment format."""
    return b"".join(_HEADER.pack(key, dataset_index, number, len(record)) + bytes(record)
                    for key, dataset_index, number, record in sorted(entries))


def _merge(paths: List[str], stores: Optional[ObjectStores]
           ) -> Iterator[Tuple[EntryKey, bytes]]:
    # no key function: entries compare by their (key, dataset, line) first, which never ties
    return heapq.merge(*(read_fragment(p, stores) for p in paths))


def entry_chunks(entries: Iterator[Tuple[EntryKey, bytes]]) -> Iterator[bytes]:
    """`entries` in the fragment format, in chunks of about `_RUN_CHUNK` bytes."""
    pending: List[bytes] = []
    size = 0
    for (key, dataset_index, number), record in entries:
        pending.append(_HEADER.pack(key, dataset_index, number, len(record)))
        pending.append(record)
        size += _HEADER.size + len(record)
        if size >= _RUN_CHUNK:
            yield b"".join(pending)
            pending, size = [], 0
    if pending:
        yield b"".join(pending)


def _group_sizes(inputs: int) -> List[int]:
    """The sizes of the leading groups of `inputs` one level merges into a run each. Every
    run replaces its group by one input: the fewest inputs that leave MERGE_FAN_IN for the
    last merge (the first group smaller, as in an optimal merge pattern: with 76 fragments
    13 are merged into a run, not all 76 rewritten), or, when one level cannot get there,
    every whole group of MERGE_FAN_IN."""
    excess = inputs - MERGE_FAN_IN
    groups = -(-excess // (MERGE_FAN_IN - 1))
    if groups * MERGE_FAN_IN > inputs:
        return [MERGE_FAN_IN] * (inputs // MERGE_FAN_IN)
    return [excess - (groups - 1) * (MERGE_FAN_IN - 1) + 1] + [MERGE_FAN_IN] * (groups - 1)


def _merged_in_levels(paths: List[str], stores: Optional[ObjectStores], run_dir: str
                      ) -> Iterator[Tuple[EntryKey, bytes]]:
    fragments = set(paths)
    inputs = paths
    level = 0
    try:
        while len(inputs) > MERGE_FAN_IN:
            level += 1
            runs, start = [], 0
            for group, size in enumerate(_group_sizes(len(inputs))):
                members = inputs[start:start + size]
                start += size
                run = path_syntax.join(run_dir, "L%d-%05d.run" % (level, group))
                file_io.write_chunks(run, stored(entry_chunks(_merge(members, stores))), stores)
                runs.append(run)
                file_io.delete_files([p for p in members if p not in fragments], stores)
            inputs = runs + inputs[start:]
        yield from _merge(inputs, stores)
    finally:  # also when the consumer stops early
        file_io.delete_tree(run_dir, stores)


def merge_fragments(paths: Iterable[str], stores: Optional[ObjectStores] = None
                    ) -> Iterator[Tuple[EntryKey, bytes]]:
    """((key, dataset index, line number), record) of all fragments, in key order, reading
    at most MERGE_FAN_IN files at once: more are merged in levels, through runs written in a
    directory of this merge's own beside the fragments (`RUNS_DIR`; so a retried attempt of
    the same shard never reads another's), removed when the merge ends."""
    ordered = sorted(paths)
    if len(ordered) <= MERGE_FAN_IN:
        return _merge(ordered, stores)
    run_dir = path_syntax.join(path_syntax.split(ordered[0])[0], RUNS_DIR,
                              uuid.uuid4().hex)
    return _merged_in_levels(ordered, stores, run_dir)
