"""NearDuplicates: `--dedup minhash` as Beam stages, and what `--decontaminate` adds to scoring.

MinHash-LSH in four steps, none holding more than a bounded share of the corpus in a process
but the last, which holds the similar pairs:

1. `_BandsFn` reads each chunk and gives every pair with a signature (`MinHasher`) an entry
   per LSH band: its band key (which holds its split and language pair), then its position
   (split, dataset, line: bytes that sort in input order, with its chunk and byte sizes) and
   an 8-byte digest of its signature. The chunk's entries go, sorted, to one run file in the
   work directory (`band_runs`), and its signatures to a file of one slot a line, not
   through a shuffle: the in-process runners hold a shuffle's whole input in the driver (9
   elements a pair for the bands, and the candidates' signatures for their joins).
2. The buckets (equal band keys) are grouped in rounds of at most `round_entries` entries
   (`band_runs.plan_rounds`, `key_groups`); `candidate_edges` links, in a bucket, the pairs
   with equal signatures to the first of them (estimated Jaccard 1: no check needed), and
   every two distinct signatures' first pairs as candidates.
3. The round reads a candidate's two signatures from their chunks' files and keeps it when
   `near_duplicates.similar` says the estimated Jaccard reaches the threshold, as a check of
   datasketch's `MinHashLSH.query` candidates with `MinHash.jaccard` would. Only similar
   pairs go on, one bytes value each.
4. The similar pairs of a split meet in one `GroupByKey`, whose union-find (`components`)
   holds only the duplicates (an edge never joins two language pairs: their band keys
   differ): each connected component keeps its
   first pair in input order and drops the others as `near_duplicate`, naming it.

The result depends only on the input, the options and the seed, never on the runner, how
the work was split or the number of rounds. The drops join the filters' in `CleanPairs`: a
line dropped twice keeps one reason (`one_drop_a_line`).
"""

import collections
import hashlib
import struct
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from transforms.clean.band_runs import (KEY_BYTES, ROUND_ENTRIES, RunPart, key_groups,
                                       plan_rounds, read_round, write_run)
from transforms.clean.pair_reading import ChunkKey, chunk_key, read_pairs
from transforms.cleaning.config import CleaningConfig
from transforms.cleaning.decontaminate import REASON_PREFIX, OverlapIndex
from transforms.cleaning.near_duplicates import MinHasher, MinhashOptions, components, similar
from transforms.contracts.elements import Chunk
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores, StoreSettings

NEAR_DUPLICATE = "near_duplicate"
SAME = "same"
CHECK = "check"
POSITION = struct.Struct(">BIQQQQ")  # split, dataset index, line, chunk's first line, bytes
POSITION_BYTES = POSITION.size
DIGEST = 8
ENTRY = KEY_BYTES + POSITION_BYTES + DIGEST  # a band run's entry: band key, position, digest


def load_test_sets(cleaning: CleaningConfig, stores: ObjectStores) -> Optional[OverlapIndex]:
    """The --decontaminate index of `cleaning`'s test files (read now), or None."""
    if not cleaning.decontaminate:
        return None
    texts = [(reason, file_io.read_bytes(path, stores).decode("utf-8", "replace"))
             for path, reason in zip(cleaning.decontaminate, cleaning.extra_reasons)]
    return OverlapIndex(texts, cleaning.decontaminate_ngram)


def outranks_duplicate(reason: Optional[str]) -> bool:
    """Whether a pair's filter reason stands even when it duplicates an earlier pair: a test
    set overlap is counted against its test file."""
    return bool(reason) and reason.startswith(REASON_PREFIX)  # type: ignore[union-attr]


def one_drop_a_line(drops: Iterable[Tuple[Any, ...]], first: Sequence[str] = ()
                    ) -> List[Tuple[Any, ...]]:
    """The drops in line order, one a line: a test set overlap (or a reason of `first`)
    first, then a near duplicate (as an exact duplicate is not charged to a filter), then a
    filter's."""
    def rank(drop: Tuple[Any, ...]) -> Tuple[int, int]:
        reason = drop[1]
        return drop[0], (0 if outranks_duplicate(reason) or reason in first else
                         1 if reason == NEAR_DUPLICATE else 2)
    chosen: Dict[int, Tuple[Any, ...]] = {}
    for drop in sorted(drops, key=rank):
        chosen.setdefault(drop[0], drop)
    return [chosen[number] for number in sorted(chosen)]


class _Positions:
    """A pair's position as bytes (`POSITION`), and back; `splits` in their order."""

    def __init__(self, splits: Sequence[str]) -> None:
        self.splits = list(splits)

    def pack(self, split: str, index: int, number: int, chunk_first: int, src_bytes: int,
             tgt_bytes: int) -> bytes:
        return POSITION.pack(self.splits.index(split), index, number, chunk_first, src_bytes,
                             tgt_bytes)

    def unpack(self, packed: bytes) -> Tuple[str, int, int, int, int, int]:
        split, index, number, chunk_first, src_bytes, tgt_bytes = POSITION.unpack(packed)
        return self.splits[split], index, number, chunk_first, src_bytes, tgt_bytes


def group_of(chunk: Chunk) -> str:
    """Where near duplicates are looked for: within a split and a language pair."""
    return chunk["ds"]["split"] + "\0" + chunk["ds"].get("pair", "")


def _run_paths(run_dir: str, chunk: ChunkKey) -> Tuple[str, str]:
    """(band run, signatures) file paths of a chunk."""
    base = FileSystems.join(run_dir, "%s-%d-%d" % chunk)
    return base + ".bands", base + ".signatures"


class _BandsFn(beam.DoFn):
    """chunk -> (its band run's path, entries per bucket): each pair's entry per band (band
    key, position, signature digest) written sorted to the run (`band_runs.write_run`), and
    the chunk's signatures to a file of one slot a line (`_Signatures` reads them back)."""

    def __init__(self, options: MinhashOptions, on_invalid: str, settings: StoreSettings,
                 splits: Sequence[str], run_dir: str) -> None:
        self._options = options
        self._on_invalid = on_invalid
        self._settings = settings
        self._positions = _Positions(splits)
        self._run_dir = run_dir

    def setup(self) -> None:
        self._stores = ObjectStores(self._settings)
        self._hasher = MinHasher(self._options)  # the permutations, drawn once

    def process(self, chunk: Chunk) -> Iterator[Tuple[str, List[int]]]:
        if chunk.get("unmatched"):
            return
        ds, first_line = chunk["ds"], chunk["first_line"]
        group = group_of(chunk).encode("utf-8")
        size = 4 * self._options.permutations
        entries = []
        slots = bytearray(size * chunk["num_lines"])
        for number, source, target, _, _, src_bytes, tgt_bytes in read_pairs(
                chunk, self._stores, self._on_invalid):
            signature = self._hasher.pair_signature((source.rstrip(), target.rstrip()))
            if signature is None:
                continue
            raw = signature.tobytes()
            slot = (number - first_line - 1) * size
            slots[slot:slot + size] = raw
            member = self._positions.pack(ds["split"], ds["index"], number, first_line,
                                          src_bytes, tgt_bytes) + hashlib.blake2b(
                                              raw, digest_size=DIGEST).digest()
            entries += [key + member for key in self._hasher.band_keys(group, signature)]
        bands, signatures = _run_paths(self._run_dir, chunk_key(chunk))
        counts = write_run(bands, entries, self._stores)
        if counts:
            file_io.write_bytes_atomically(signatures, bytes(slots), self._stores)
            yield bands, counts


def candidate_edges(bucket: Tuple[bytes, Iterable[bytes]]) -> Iterator[Tuple[str, bytes, bytes]]:
    """The edges of one LSH bucket: (SAME, first, other) for equal signatures, (CHECK, first,
    other) for every two distinct signatures' first pairs (positions sort in input order)."""
    _, members = bucket
    distinct = sorted(set(members))
    if len(distinct) < 2:
        return
    firsts: Dict[bytes, bytes] = {}  # signature digest -> its first position
    for member in distinct:
        position, digest = member[:-DIGEST], member[-DIGEST:]
        first = firsts.setdefault(digest, position)
        if first != position:
            yield SAME, first, position
    reps = sorted(firsts.values())
    for i, a in enumerate(reps):
        for b in reps[i + 1:]:
            yield CHECK, a, b


class _Signatures:
    """A position's signature, read from its chunk's signatures file: one read of its slot,
    local files kept open (OPEN_FILES at most)."""

    OPEN_FILES = 64

    def __init__(self, run_dir: str, positions: _Positions, size: int,
                 stores: ObjectStores) -> None:
        self._run_dir, self._positions, self._size, self._stores = (
            run_dir, positions, size, stores)
        self._open: "collections.OrderedDict[str, Any]" = collections.OrderedDict()

    def read(self, position: bytes) -> bytes:
        split, index, number, chunk_first, _, _ = self._positions.unpack(position)
        path = _run_paths(self._run_dir, (split, index, chunk_first))[1]
        offset = (number - chunk_first - 1) * self._size
        if not file_io.is_local(path):
            with file_io.open_for_read(path, self._stores, offset) as f:
                return f.read(self._size)
        f = self._open.pop(path, None) or file_io.open_for_read(path, self._stores)
        self._open[path] = f
        if len(self._open) > self.OPEN_FILES:
            self._open.popitem(last=False)[1].close()
        f.seek(offset)
        return f.read(self._size)

    def close(self) -> None:
        while self._open:
            self._open.popitem()[1].close()


class _RoundFn(beam.DoFn):
    """[run part] -> (split, first + other) of every similar pair of the round's buckets:
    equal signatures, and candidates whose signatures (`_Signatures`) estimate a Jaccard of
    at least the threshold (`similar`), each checked once a round."""

    def __init__(self, settings: StoreSettings, splits: Sequence[str], run_dir: str,
                 options: MinhashOptions) -> None:
        self._settings = settings
        self._positions = _Positions(splits)
        self._run_dir = run_dir
        self._options = options

    def setup(self) -> None:
        self._stores = ObjectStores(self._settings)

    def process(self, parts: List[RunPart]) -> Iterator[Tuple[bytes, bytes]]:
        signatures = _Signatures(self._run_dir, self._positions, 4 * self._options.permutations,
                                 self._stores)
        done = set()
        try:
            for key, members in key_groups(read_round(parts, self._stores), ENTRY):
                for kind, a, b in candidate_edges((key, members)):
                    if a + b in done:
                        continue
                    done.add(a + b)
                    if kind == SAME or similar(signatures.read(a), signatures.read(b),
                                               self._options.threshold):
                        yield a[:1], a + b
        finally:
            signatures.close()


class NearDuplicates(beam.PTransform):
    """Chunks -> ((split, dataset index), [drop]) of the near duplicates (`--dedup minhash`)
    per dataset: each drop as `CleanPairs` writes it, naming its component's first pair,
    texts None."""

    def __init__(self, options: MinhashOptions, on_invalid: str, splits: Sequence[str],
                 work_dir: str, round_entries: int = ROUND_ENTRIES) -> None:
        super().__init__()
        self._options = options
        self._on_invalid = on_invalid
        self._splits = list(splits)
        self._run_dir = FileSystems.join(work_dir, "minhash-bands")
        self._round_entries = round_entries

    def expand(self, chunks: beam.PCollection) -> beam.PCollection:
        settings = StoreSettings.from_options(chunks.pipeline.options)
        positions = _Positions(self._splits)
        similar_pairs = (
            chunks
            | "SpreadMinhash" >> beam.Reshuffle()
            | "BandRuns" >> beam.ParDo(_BandsFn(self._options, self._on_invalid, settings,
                                                self._splits, self._run_dir))
            | "AllRuns" >> beam.combiners.ToList()
            | "Rounds" >> beam.FlatMap(plan_rounds, self._round_entries, ENTRY)
            | "SpreadRounds" >> beam.Reshuffle()
            | "Similar" >> beam.ParDo(_RoundFn(settings, self._splits, self._run_dir,
                                               self._options)))

        def drops(item: Tuple[bytes, Iterable[bytes]]) -> Iterator[Any]:
            by_dataset: Dict[Tuple[str, int], List[Tuple[Any, ...]]] = {}
            ends = ((edge[:POSITION_BYTES], edge[POSITION_BYTES:]) for edge in item[1])
            for member, root in sorted(components(ends).items()):
                split, index, number, _, src_bytes, tgt_bytes = positions.unpack(member)
                first = list(positions.unpack(root)[:3])
                by_dataset.setdefault((split, index), []).append(
                    (number, NEAR_DUPLICATE, first, None, None, src_bytes, tgt_bytes))
            yield from by_dataset.items()
        return (similar_pairs
                | "BySplit" >> beam.GroupByKey()
                | "Components" >> beam.FlatMap(drops))
