"""NearDuplicates: `--dedup minhash` as Beam stages, and what `--decontaminate` adds to scoring.

MinHash-LSH in five steps, none holding more than a bounded share of the corpus in a process:

1. `_BandsFn` reads each chunk and gives every pair with a signature (`MinHasher`) an entry
   per LSH band: its band key (which holds its split and language pair), then its position
   (split, dataset, line: bytes that sort in input order, with its chunk and byte sizes) and
   an 8-byte digest of its signature. The chunk's entries go, sorted, to one run file in the
   work directory (`band_runs`), not through a `GroupByKey`: the in-process runners hold a
   shuffle's whole input in the driver, 9 elements a pair.
2. The buckets (equal band keys) are grouped in rounds of at most `round_entries` entries
   (`band_runs.plan_rounds`, `key_groups`); `candidate_edges` links, in a bucket, the pairs
   with equal signatures to the first of them (estimated Jaccard 1: no check needed), and
   every two distinct signatures' first pairs as candidates. Only candidates go on.
3. The candidates' signatures are computed again where their chunks are read
   (`_SignaturesFn`, the chunk joined with the candidates' line numbers): signatures never
   travel for the pairs that have no candidate, nearly all of them.
4. Two joins bring both signatures to each candidate edge; `near_duplicates.similar` keeps
   it when the estimated Jaccard reaches the threshold, as a check of datasketch's
   `MinHashLSH.query` candidates with `MinHash.jaccard` would.
5. The kept edges of a split meet in one `GroupByKey`, whose union-find (`components`)
   holds only the duplicates (an edge never joins two language pairs: their band keys
   differ): each connected component keeps its
   first pair in input order and drops the others as `near_duplicate`, naming it.

The result depends only on the input, the options and the seed, never on the runner, how
the work was split or the number of rounds. The drops join the filters' in `CleanPairs`: a
line dropped twice keeps one reason (`one_drop_a_line`).
"""

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
DIGEST = 8
ENTRY = KEY_BYTES + POSITION.size + DIGEST  # a band run's entry: band key, position, digest


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


class _ChunkPairsFn(beam.DoFn):
    """What the DoFns reading chunks for signatures share."""

    def __init__(self, options: MinhashOptions, on_invalid: str, settings: StoreSettings,
                 splits: Sequence[str]) -> None:
        self._options = options
        self._on_invalid = on_invalid
        self._settings = settings
        self._positions = _Positions(splits)

    def setup(self) -> None:
        self._stores = ObjectStores(self._settings)
        self._hasher = MinHasher(self._options)  # the permutations, drawn once

    def _signatures(self, chunk: Chunk, wanted: Optional[set] = None
                    ) -> Iterator[Tuple[bytes, Any]]:
        """(position, signature) of the chunk's pairs with one (of `wanted` lines only)."""
        ds = chunk["ds"]
        for number, source, target, _, _, src_bytes, tgt_bytes in read_pairs(
                chunk, self._stores, self._on_invalid):
            if wanted is not None and number not in wanted:
                continue
            signature = self._hasher.pair_signature((source.rstrip(), target.rstrip()))
            if signature is not None:
                yield self._positions.pack(ds["split"], ds["index"], number,
                                           chunk["first_line"], src_bytes, tgt_bytes), signature


def group_of(chunk: Chunk) -> str:
    """Where near duplicates are looked for: within a split and a language pair."""
    return chunk["ds"]["split"] + "\0" + chunk["ds"].get("pair", "")


class _BandsFn(_ChunkPairsFn):
    """chunk -> (its band run's path, entries per bucket): each pair's entry per band (band
    key, position, signature digest) written sorted to the run (`band_runs.write_run`)."""

    def __init__(self, options: MinhashOptions, on_invalid: str, settings: StoreSettings,
                 splits: Sequence[str], run_dir: str) -> None:
        super().__init__(options, on_invalid, settings, splits)
        self._run_dir = run_dir

    def process(self, chunk: Chunk) -> Iterator[Tuple[str, List[int]]]:
        if chunk.get("unmatched"):
            return
        group = group_of(chunk).encode("utf-8")
        entries = []
        for position, signature in self._signatures(chunk):
            member = position + hashlib.blake2b(signature.tobytes(), digest_size=DIGEST).digest()
            entries += [key + member for key in self._hasher.band_keys(group, signature)]
        path = FileSystems.join(self._run_dir, "%s-%d-%d.bands" % chunk_key(chunk))
        counts = write_run(path, entries, self._stores)
        if counts:
            yield path, counts


class _RoundFn(beam.DoFn):
    """[run part] -> `candidate_edges` of every bucket of the round's band runs."""

    def __init__(self, settings: StoreSettings) -> None:
        self._settings = settings

    def setup(self) -> None:
        self._stores = ObjectStores(self._settings)

    def process(self, parts: List[RunPart]) -> Iterator[Any]:
        for key, members in key_groups(read_round(parts, self._stores), ENTRY):
            yield from candidate_edges((key, members))


def candidate_edges(bucket: Tuple[bytes, Iterable[bytes]]) -> Iterator[Any]:
    """The edges of one LSH bucket: (split, (first, other)) to SAME for equal signatures,
    (first, other) to CHECK for every two distinct signatures' first pairs (positions sort
    in input order; `split`: a position's first byte)."""
    _, members = bucket
    distinct = sorted(set(members))
    if len(distinct) < 2:
        return
    firsts: Dict[bytes, bytes] = {}  # signature digest -> its first position
    for member in distinct:
        position, digest = member[:-DIGEST], member[-DIGEST:]
        first = firsts.setdefault(digest, position)
        if first != position:
            yield beam.pvalue.TaggedOutput(SAME, (first[:1], (first, position)))
    reps = sorted(firsts.values())
    for i, a in enumerate(reps):
        for b in reps[i + 1:]:
            yield a, b


class _SignaturesFn(_ChunkPairsFn):
    """(chunk key, {"chunk": [chunk], "numbers": [line]}) -> (position, signature bytes) of
    those lines of the chunk."""

    def process(self, item: Tuple[ChunkKey, Dict[str, List[Any]]]) -> Iterator[Any]:
        _, joined = item
        if joined["chunk"] and joined["numbers"]:
            for position, signature in self._signatures(joined["chunk"][0],
                                                        set(joined["numbers"])):
                yield position, signature.tobytes()


def _first_halves(item: Tuple[bytes, Dict[str, List[Any]]]) -> Iterator[Any]:
    """(a, {"signature": [a's], "edges": [b]}) -> (b, (a, a's signature))."""
    a, joined = item
    for signature in joined["signature"][:1]:
        for b in joined["edges"]:
            yield b, (a, signature)


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
        fn_args = (self._options, self._on_invalid, settings, self._splits)
        positions = _Positions(self._splits)
        threshold = self._options.threshold
        edges = (chunks
                 | "SpreadMinhash" >> beam.Reshuffle()
                 | "BandRuns" >> beam.ParDo(_BandsFn(*fn_args, self._run_dir))
                 | "AllRuns" >> beam.combiners.ToList()
                 | "Rounds" >> beam.FlatMap(plan_rounds, self._round_entries, ENTRY)
                 | "SpreadRounds" >> beam.Reshuffle()
                 | "Candidates" >> beam.ParDo(_RoundFn(settings)).with_outputs(
                     SAME, main=CHECK))
        checks = edges[CHECK] | "DistinctCandidates" >> beam.Distinct()

        def ends(edge: Tuple[bytes, bytes]) -> Iterator[Tuple[ChunkKey, int]]:
            for position in edge:
                split, index, number, chunk_first, _, _ = positions.unpack(position)
                yield (split, index, chunk_first), number
        by_chunk = chunks | "MinhashByChunk" >> beam.FlatMap(
            lambda chunk: [] if chunk.get("unmatched") else [(chunk_key(chunk), chunk)])
        signatures = ({"chunk": by_chunk, "numbers": checks | "Ends" >> beam.FlatMap(ends)}
                      | "CandidatesByChunk" >> beam.CoGroupByKey()
                      | "Signatures" >> beam.ParDo(_SignaturesFn(*fn_args)))
        halves = ({"signature": signatures,
                   "edges": checks}
                  | "JoinFirst" >> beam.CoGroupByKey()
                  | "FirstHalves" >> beam.FlatMap(_first_halves))

        def verified(item: Tuple[bytes, Dict[str, List[Any]]]) -> Iterator[Any]:
            b, joined = item
            for signature in joined["signature"][:1]:
                for a, first in joined["halves"]:
                    if similar(first, signature, threshold):
                        yield a[:1], (a, b)
        kept = ({"signature": signatures, "halves": halves}
                | "JoinSecond" >> beam.CoGroupByKey()
                | "Verify" >> beam.FlatMap(verified))

        def drops(item: Tuple[bytes, Iterable[Tuple[bytes, bytes]]]) -> Iterator[Any]:
            by_dataset: Dict[Tuple[str, int], List[Tuple[Any, ...]]] = {}
            for member, root in sorted(components(item[1]).items()):
                split, index, number, _, src_bytes, tgt_bytes = positions.unpack(member)
                first = list(positions.unpack(root)[:3])
                by_dataset.setdefault((split, index), []).append(
                    (number, NEAR_DUPLICATE, first, None, None, src_bytes, tgt_bytes))
            yield from by_dataset.items()
        return ((kept, edges[SAME])
                | "AllSimilar" >> beam.Flatten()
                | "BySplit" >> beam.GroupByKey()
                | "Components" >> beam.FlatMap(drops))
