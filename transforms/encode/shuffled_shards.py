"""WriteShuffledShards: the deterministic global shuffle and the sharded write, in the run's
record format (`transforms.shards.record_formats`).

Every record has a 64-bit key derived from the seed and its position (see
`pair_encoding.shuffle_key`); a shard is a contiguous range of the key space and its records are
written sorted by key. The encode pass leaves each shard's records in sorted fragment files
(`transforms.shards.shard_fragments`); here the fragments of a shard are grouped by name and merged
into the shard file. Neither the keys nor the merge depend on bundles, workers or the runner,
so the same input and seed give byte-identical files everywhere. Files are written under a
temporary directory; the driver renames them into place only after the whole job succeeded.

A retried bundle (a cluster runner's restart after a lost worker) rewrites the same fragment,
shard and rejects names with the same bytes, each attempt under a temporary name of its own
(`file_io.write_chunks`: one upload on a store, a temporary name elsewhere), and a fragment
reported twice is merged once, so a retry never
leaves a duplicate or a half-written file that a later stage reads.

Each shard's report carries its record count, byte size and the crc32c of the whole file,
summed as the bytes stream to the store (no second read): the summary records them, and
readers, `inspect` and reruns compare the files with them (`pipeline.output.complete_check`).

The fragments hold serialized Examples; the merge streams them, in order, to the format's
`write_shard` (for TFRecord: each framed with its length and masked CRC32Cs, today's bytes).
With --packed_length the merged records go through the packer first
(`transforms.formats.packed_examples`, T2T's `pack_examples`): T2T packs each shard after its
shuffle, and here a shard's merged order is its shuffled order, so each shard is packed on
its own, in that order, and the result depends on nothing but the seed and the input.
"""

import heapq
import json
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

import apache_beam as beam
import google_crc32c
from apache_beam.io.filesystems import FileSystems

from transforms.contracts.elements import (FragmentReport, RejectRecord, RejectsReport, ShardKey,
                                 ShardReport)

from transforms.storage import file_io
from transforms.reporting.job_metrics import JobCounters
from transforms.storage.object_stores import ObjectStores, StoreSettings
from transforms.formats.packed_examples import (PACKED_FEATURES, PAIR_FEATURES, PackingTally,
                                                pack_records)
from transforms.formats.rejects import reject_line
from transforms.formats.text_lines import iter_raw_lines
from transforms.shards.format_base import DEFAULT_LANGS
from transforms.shards.record_formats import DEFAULT_FORMAT, Langs, ShardNames, record_format
from transforms.shards.shard_fragments import merge_fragments
from transforms.encode.shard_manifests import REUSED, ShardResume, kept_shard, record_shard


PairShards = Mapping[str, List[Tuple[str, int, int]]]
"""{split: [(pair, first shard, shards)]}: with several language pairs, the range of a split's
shards each pair's records go to (`pipeline.driver.encode.plan_pair_shards`); a split without
an entry is one set of shards named without a pair."""


def shard_of_pair(pair_shards: PairShards, split: str, shard: int, num_shards: int
                  ) -> Tuple[Optional[str], int, int]:
    """(pair or None, shard within it, its shards) of shard `shard` of `split`'s
    `num_shards` (a pair's range in `pair_shards`, else the split's one set)."""
    for pair, first, count in pair_shards.get(split, ()):
        if first <= shard < first + count:
            return pair, shard - first, count
    return None, shard, num_shards


class _WriteShardFn(beam.DoFn):
    """Merges a shard's fragments into its file in the run's format. An empty shard is a
    0-byte object, which Beam's S3 writer cannot make: that one goes through the store's own
    client."""

    def __init__(self, problem: str, num_shards: Dict[str, int], tmp_dir: str,
                 store_settings: StoreSettings, output_format: str = DEFAULT_FORMAT,
                 pair_shards: Optional[PairShards] = None, packed_length: int = 0,
                 resume: Optional[ShardResume] = None, langs: Langs = DEFAULT_LANGS) -> None:
        self._names = ShardNames(problem, record_format(output_format), langs)
        self._resume = resume  # where shard manifests go and a killed run's are looked for
        self._num_shards = num_shards
        self._pair_shards = pair_shards or {}
        self._tmp_dir = tmp_dir
        self._store_settings = store_settings
        self._stores: Optional[ObjectStores] = None
        self._packed_length = packed_length  # 0: one pair per record

    def setup(self) -> None:
        self._stores = ObjectStores(self._store_settings)
        self._counters = JobCounters()

    def process(self, item: Tuple[ShardKey, Dict[str, Iterable[Any]]]
                ) -> Iterator[ShardReport]:
        """`item`: a shard's key and what CoGroupByKey gathered for it: its `fragments`
        (FragmentReport) and an `expected` None."""
        (split, shard), grouped = item
        # One report per run of a fragment file (a group's file holds several chunks' runs):
        # a runner that retried an encode bundle and kept both attempts' outputs would
        # name a run twice, and its records would be counted twice; each file is merged once.
        reported: Iterable[FragmentReport] = grouped["fragments"]
        fragments = list({(frag["path"], frag.get("run")): frag for frag in reported}.values())
        pair, local, count = shard_of_pair(self._pair_shards, split, shard,
                                           self._num_shards[split])
        name = self._names.name(split, local, count, pair)
        path = FileSystems.join(self._tmp_dir, name)
        fmt = self._names.format_of_pair(pair)
        kept = None if self._resume is None else kept_shard(self._resume, path, fragments,
                                                            self._stores, fmt.files(path))
        if kept is not None:  # merged by a killed run from these fragments, and whole
            self._counters.inc(split + ".records_written", kept["records"])
            self._counters.inc(split + ".bytes_written", kept["bytes"])
            self._counters.inc(REUSED)
            yield kept
            return
        by_dataset: Dict[int, int] = {}
        copies: Dict[int, int] = {}
        for frag in fragments:
            for dataset_index, count in frag["by_dataset"]:
                by_dataset[dataset_index] = by_dataset.get(dataset_index, 0) + count
            for dataset_index, count in frag.get("copies", ()):
                copies[dataset_index] = copies.get(dataset_index, 0) + count
        # Streamed (memory stays bounded); an empty shard is a 0-byte object, which Beam's
        # S3 writer cannot make, the store's own client can.
        files = sorted({frag["path"] for frag in fragments})
        merged = merge_fragments(files, self._stores)
        records: Iterable[bytes] = (record for _, record in merged)
        features: Sequence[str] = PAIR_FEATURES
        packing: Optional[PackingTally] = None
        if self._packed_length:
            features, packing = PACKED_FEATURES, PackingTally()
            records = pack_records(records, self._packed_length, packing)
        checksum = google_crc32c.Checksum()  # of the whole file, as it streams past
        written, size = fmt.write_shard(
            path, records, self._stores, checksum, features)
        self._counters.inc(split + ".records_written", written)
        self._counters.inc(split + ".bytes_written", size)
        pairs = written if packing is None else packing.pairs
        if pairs != sum(by_dataset.values()):
            raise ValueError("%s: merged %d records, its fragments list %d"
                             % (name, pairs, sum(by_dataset.values())))
        report: ShardReport = {
            "split": split, "shard": shard, "name": name, "records": written, "bytes": size,
            "crc32c": checksum.hexdigest().decode("ascii"), "by_dataset": sorted(by_dataset.items())}
        if packing is not None:
            report["packing"] = packing.report()
        if pair:
            report["pair"] = pair
        if copies:
            report["copies_by_dataset"] = sorted(copies.items())
        if self._resume is not None:
            record_shard(self._resume, path, fragments, report, self._stores)
        # The shard is whole (and its manifest written): its fragment files are consumed, and
        # go now rather than with the work directory, so the work files never hold the output
        # twice (temporary disk stays near the output's size). A rerun after a kill from here
        # on encodes the chunks whose files went again, and keeps this shard if those come
        # out the same (docs/scaling.md, Temporary disk).
        file_io.delete_files(files, self._stores)
        yield report


REJECTS_FILE = "rejects_file"  # a WriteRejects element {REJECTS_FILE: path}: a whole file


def _position(record: RejectRecord) -> Tuple[int, int]:
    return record["dataset_index"], record["ordinal"]


def rejects_file_split(path: str) -> Iterator[Tuple[str, Dict[str, str]]]:
    """(split, {REJECTS_FILE: path}) of an earlier step's rejects file (one dataset's, so
    one split: its first record's), for WriteRejects; nothing for an empty file."""
    with file_io.open_text_source(path) as f:
        first = next((line for line in iter_raw_lines(f) if line), None)
    if first is not None:
        yield json.loads(first)["split"], {REJECTS_FILE: path}


class _WriteRejectsFn(beam.DoFn):
    """(split, [reject record or {REJECTS_FILE: path}]) -> the split's rejects file, sorted
    by position, and its report.

    An earlier step's rejects (the prepare step's, the cleaning pass's: 285k pairs of the
    bench corpus) come as the name of their file, not as records: through the `GroupByKey`
    and into this DoFn whole, they made the local runner hold every record as a dict twice
    (~1 GB at full size). Such a file is one dataset's, written in line order, so it is
    streamed and merged with the others (`heapq.merge`); a record out of order there is a
    bug, and fails the pass."""

    def __init__(self, tmp_dir: str, store_settings: StoreSettings) -> None:
        self._tmp_dir = tmp_dir
        self._store_settings = store_settings

    def setup(self) -> None:
        self._stores = ObjectStores(self._store_settings)

    def _file_records(self, split: str, path: str) -> Iterator[RejectRecord]:
        last = (-1, -1)
        with file_io.open_text_source(path, self._stores) as f:
            for line in iter_raw_lines(f):
                if not line:
                    continue
                record = json.loads(line)
                if record["split"] != split or _position(record) < last:
                    raise ValueError("%s: record %s is not in order or not of split %s"
                                     % (path, _position(record), split))
                last = _position(record)
                yield record

    def process(self, item: Tuple[str, Iterable[Any]]) -> Iterator[RejectsReport]:
        split, grouped = item
        own: List[RejectRecord] = []
        files: List[str] = []
        for element in grouped:
            if REJECTS_FILE in element:
                files.append(element[REJECTS_FILE])
            else:
                own.append(element)
        own.sort(key=_position)
        by_reason: Dict[str, int] = {}
        name = "%s.jsonl" % split
        rejected = 0

        def lines() -> Iterator[bytes]:
            nonlocal rejected
            for reject in heapq.merge(own, *(self._file_records(split, path)
                                             for path in sorted(files)), key=_position):
                key = "%d\t%s" % (reject["dataset_index"], reject["reason"])
                by_reason[key] = by_reason.get(key, 0) + 1
                rejected += 1
                yield reject_line(reject)

        file_io.write_chunks(FileSystems.join(self._tmp_dir, name), lines(), self._stores)
        yield {"split": split, "name": name, "rejected": rejected,
               "by_dataset_reason": sorted(by_reason.items())}


class WriteShuffledShards(beam.PTransform):
    """((split, shard), fragment {path, records, by_dataset}) -> one report per shard file.

    Every shard of every split is written, empty ones included; a language pair's own shards
    (`pair_shards`) are named with it (`langs`: a one-pair output's languages); with `packed_length`, each shard's pairs packed (T2T's
    `pack_examples`, per language pair) into its records. With `resume`, each shard's manifest
    follows its file, and a shard a killed run merged from the same fragments is kept
    (`transforms.encode.shard_manifests`).
    """

    def __init__(self, problem: str, num_shards: Mapping[str, int], tmp_dir: str,
                 output_format: str = DEFAULT_FORMAT,
                 pair_shards: Optional[PairShards] = None, packed_length: int = 0,
                 resume: Optional[ShardResume] = None, langs: Langs = DEFAULT_LANGS) -> None:
        super().__init__()
        self._langs = tuple(langs)  # a one-pair output's: a text shard's files end with them
        self._resume = resume
        self._problem = problem
        self._format = output_format
        self._pair_shards = {split: list(ranges) for split, ranges in (pair_shards or {}).items()}
        self._packed_length = packed_length
        self._num_shards = dict(num_shards)
        self._tmp_dir = tmp_dir

    def expand(self, fragments: beam.PCollection[Tuple[ShardKey, FragmentReport]]
               ) -> beam.PCollection[ShardReport]:
        all_shards: List[Tuple[ShardKey, None]] = [((split, shard), None)
                      for split, n in sorted(self._num_shards.items()) for shard in range(n)]
        expected = fragments.pipeline | "AllShards" >> beam.Create(all_shards, reshuffle=False)
        settings = StoreSettings.from_options(fragments.pipeline.options)
        return ({"fragments": fragments, "expected": expected}
                | "GroupByShard" >> beam.CoGroupByKey()
                | "WriteShard" >> beam.ParDo(_WriteShardFn(self._problem, self._num_shards,
                                                           self._tmp_dir, settings,
                                                           self._format, self._pair_shards,
                                                           self._packed_length,
                                                           self._resume, self._langs)))


class WriteRejects(beam.PTransform):
    """(split, reject dict or {REJECTS_FILE: path} of an earlier step's file of them, see
    `rejects_file_split`) -> one JSON-lines file per split, sorted by position, and a
    report."""

    def __init__(self, tmp_dir: str) -> None:
        super().__init__()
        self._tmp_dir = tmp_dir

    def expand(self, rejects: beam.PCollection[Tuple[str, RejectRecord]]
               ) -> beam.PCollection[RejectsReport]:
        return (rejects
                | "GroupBySplit" >> beam.GroupByKey()
                | "WriteRejects" >> beam.ParDo(_WriteRejectsFn(
                    self._tmp_dir, StoreSettings.from_options(rejects.pipeline.options))))
