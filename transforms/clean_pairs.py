"""CleanPairs: which pairs the `--filters` and `--dedup` settings drop, and why, in one pass.

The chunks are the encode pass's own (`encode_pairs.plan_chunks` of the prepared datasets),
each with its files' line and byte counts. `_ScoreChunkFn` reads a chunk as the encoder does
and decides each pair with the configured filters (`transforms.cleaning`), in parallel on
every worker; the filters see each line as OpusFilter sees it (right-stripped). With
de-duplication on, every pair then goes, keyed by its 16-byte de-duplication key, through one
`GroupByKey`, so no worker ever holds more than the pairs of one key: the first occurrence in
input order (dataset, then line, within a split) is kept and the others are dropped as
`duplicate` with the first one named (`duplicate_of`; a filter may drop that one too); with
`--drop_dev_overlap` a train pair whose key occurs in dev is dropped as `dev_overlap`. A
pair dropped for a duplicate is not also charged to a filter (OpusFilter's recipe
de-duplicates first); otherwise the first failing filter in the file's order is the reason.
Only positions and sizes go through that shuffle, not the texts.

The drops are grouped per dataset and `_WriteDroppedFn` writes, under `work_dir`, a bitmap of
the dropped line numbers (`transforms.cleaning.dropped_lines`: read by the vocab sample and
the encoder to skip exactly those lines) and the rejects records (JSON lines,
`transforms.formats.rejects`), and reports per dataset the drops per reason and the bytes of
the dropped lines per side (the sampler sizes a cleaned file's sample from what is left).
"""

from typing import IO, Any, Dict, Iterable, Iterator, List, Optional, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from transforms.cleaning.config import CleaningConfig
from transforms.cleaning.dropped_lines import mark, new_bitmap
from transforms.elements import Chunk, DatasetSpec, FileFacts
from transforms.formats.rejects import REJECT_TEXT_CHARS, reject_line, reject_record
from transforms.formats.text_lines import decode_line, iter_raw_lines
from transforms.job_metrics import JobCounters
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores, StoreSettings

KEYED = "keyed"
BATCHES = "batches"
SCORE_BATCH_PAIRS = 10000  # the default --encode_chunk_lines: plain files' chunks stay whole
DUPLICATE = "duplicate"
DEV_OVERLAP = "dev_overlap"
SPLIT_ORDER = {"train": 0, "dev": 1}  # the order splits are read in
# (number, source, target, source newline, target newline, source bytes, target bytes)
ReadPair = Tuple[int, str, str, str, str, int, int]
# (split order, split, dataset index, number, filter reason, source text, target text,
# source bytes, target bytes): a pair in its dedup group
Occurrence = Tuple[Any, ...]
# (number, reason, first occurrence [split, dataset index, line] or None, source text,
# target text, source bytes, target bytes)
Drop = Tuple[Any, ...]
# (dataset dict, its line count, source line file, target line file)
DatasetLines = Tuple[DatasetSpec, int, str, str]


def dropped_paths(work_dir: str, split: str, index: int) -> Tuple[str, str]:
    """(bitmap, rejects) paths of dataset `index` of `split` under `work_dir`."""
    base = FileSystems.join(work_dir, "%s-%d" % (split, index))
    return base + ".dropped", base + ".rejects.jsonl"


def with_chunk_facts(chunk: Chunk, source_facts: FileFacts, target_facts: FileFacts) -> Chunk:
    """A `plan_chunks` chunk with its files' line and byte counts (a line's newline is known
    from them: only the last line of a file may lack one, and it changes the dedup key)."""
    with_facts = Chunk(**chunk)
    with_facts["source_file"] = [source_facts["lines"], source_facts["bytes"]]
    with_facts["target_file"] = [target_facts["lines"], target_facts["bytes"]]
    return with_facts


def _lines(stream: IO[bytes], first_number: int, offset: int,
           file_facts: List[int]) -> Iterator[Tuple[int, bytes, str]]:
    """(1-based number, raw bytes, newline) of the lines from `stream`, which starts at line
    `first_number` and byte `offset` of a file of `file_facts` [lines, bytes]."""
    lines, size = file_facts
    position = offset
    for number, raw in enumerate(iter_raw_lines(stream), first_number):
        position += len(raw) + 1
        yield number, raw, "\n" if number < lines or position <= size else ""


class _Scorer(beam.DoFn):
    """What the two scoring DoFns share (`_ScoreChunkFn`, `_ScoreBatchFn`).

    chunk -> drops ((split, dataset index), drop) decided by the filters alone, or with
    de-duplication on, every pair keyed for the dedup group (KEYED output). A chunk of more
    than SCORE_BATCH_PAIRS lines (a compressed file is one chunk: it cannot be split) is only
    read here, its pairs going out in batches (BATCHES output) that `_ScoreBatchFn` scores on
    any worker.

    A drop is (line number, reason, first occurrence or None, source text, target text,
    source bytes, target bytes): the texts cut as rejects keep them, the bytes the raw
    line's with its newline."""

    def __init__(self, cleaning: CleaningConfig, on_invalid: str,
                 store_settings: StoreSettings) -> None:
        self._cleaning = cleaning  # transforms.cleaning.config.CleaningConfig
        self._on_invalid = on_invalid
        self._store_settings = store_settings

    def setup(self) -> None:
        self._stores = ObjectStores(self._store_settings)
        self._filters = self._cleaning.build_filters()
        for f in self._filters:
            f.setup()
        self._dedup = self._cleaning.key_options
        self._counters = JobCounters()

    def _reason(self, source: str, target: str) -> Optional[str]:
        for f in self._filters:
            if not f.accept(source, target):
                return f.reason
        return None

    def _read(self, chunk: Chunk) -> Iterator[ReadPair]:
        """(number, source, target, source newline, target newline, source bytes, target
        bytes) of each pair of the chunk that decodes (an invalid UTF-8 line's pair is the
        encoder's to reject)."""
        src_path, tgt_path = chunk["source"], chunk["target"]
        first = chunk["first_line"] + 1
        with file_io.open_text_source(src_path, self._stores, chunk["source_offset"]) as s, \
                file_io.open_text_source(tgt_path, self._stores, chunk["target_offset"]) as t:
            pairs = zip(_lines(s, first, chunk["source_offset"], chunk["source_file"]),
                        _lines(t, first, chunk["target_offset"], chunk["target_file"]))
            for _ in range(chunk["num_lines"]):
                (number, raw_s, end_s), (_, raw_t, end_t) = next(pairs)
                source = decode_line(raw_s, src_path, number, self._on_invalid)
                target = decode_line(raw_t, tgt_path, number, self._on_invalid)
                if source is not None and target is not None:
                    yield (number, source, target, end_s, end_t, len(raw_s) + len(end_s),
                           len(raw_t) + len(end_t))

    def _score(self, ds: DatasetSpec, pairs: Iterable[ReadPair]) -> Iterator[Any]:
        where = (ds["split"], ds["index"])
        order = SPLIT_ORDER.get(ds["split"], 2)
        scored = 0
        for number, source, target, end_s, end_t, src_bytes, tgt_bytes in pairs:
            scored += 1
            reason = self._reason(source.rstrip(), target.rstrip())
            if self._dedup is not None:
                # no texts through the shuffle: the writer reads the dropped ones again
                key = self._dedup.key((source + end_s, target + end_t))
                yield beam.pvalue.TaggedOutput(KEYED, (key, (
                    order, ds["split"], ds["index"], number, reason, None, None, src_bytes,
                    tgt_bytes)))
            elif reason:
                yield where, (number, reason, None, source.strip()[:REJECT_TEXT_CHARS],
                              target.strip()[:REJECT_TEXT_CHARS], src_bytes, tgt_bytes)
        self._counters.inc("cleaning.pairs_scored", scored)



class _ScoreChunkFn(_Scorer):
    """chunk -> drops or keyed pairs, or, for a long chunk, batches of its pairs."""

    def process(self, chunk: Chunk) -> Iterator[Any]:
        if chunk.get("unmatched"):
            return
        pairs = self._read(chunk)
        if chunk["num_lines"] <= SCORE_BATCH_PAIRS:
            yield from self._score(chunk["ds"], pairs)
            return
        batch = []
        for pair in pairs:
            batch.append(pair)
            if len(batch) == SCORE_BATCH_PAIRS:
                yield beam.pvalue.TaggedOutput(BATCHES, (chunk["ds"], batch))
                batch = []
        if batch:
            yield beam.pvalue.TaggedOutput(BATCHES, (chunk["ds"], batch))


class _ScoreBatchFn(_Scorer):
    """(dataset, [pair as `_ScoreChunkFn._read` gives it]) -> drops or keyed pairs."""

    def process(self, batch: Tuple[DatasetSpec, List[ReadPair]]) -> Iterator[Any]:
        yield from self._score(*batch)


def decide_group(occurrences: Iterable[Occurrence], dedup_on: bool,
                 drop_dev_overlap: bool) -> Iterator[Tuple[Tuple[str, int], Drop]]:
    """The drops among the `occurrences` of one dedup key: each is (split order, split,
    dataset index, line number, filter reason, None, None, source bytes, target bytes).
    Yields ((split, dataset index), drop) as `_ScoreChunkFn` does, the texts None (the
    writer reads them)."""
    occurrences = sorted(occurrences, key=lambda o: o[:4])
    kept: Dict[str, Occurrence] = {}  # split -> its first occurrence
    for o in occurrences:
        kept.setdefault(o[1], o)
    dev_first = kept.get("dev") if drop_dev_overlap else None
    for o in occurrences:
        split, index, number, reason = o[1], o[2], o[3], o[4]
        first = None
        if dev_first is not None and split == "train":
            reason, first = DEV_OVERLAP, dev_first
        elif dedup_on and kept[split] is not o:
            reason, first = DUPLICATE, kept[split]
        if reason:
            named = None if first is None else [first[1], first[2], first[3]]
            yield (split, index), (number, reason, named) + o[5:]


class _WriteDroppedFn(beam.DoFn):
    """((split, dataset index), drops) -> the dataset's bitmap and rejects file (in line
    order), and its report {split, index, dropped, reasons, dropped_bytes, bitmap, rejects}.

    With de-duplication on, the drops come without their texts (every pair went through the
    dedup shuffle; carrying its text there made the local runner hold the corpus twice, 4 GB
    at full bench size), so the dataset's line files are read once more, up to the last
    dropped line, for the texts the rejects keep."""

    def __init__(self, work_dir: str, datasets: Dict[str, DatasetLines],
                 store_settings: StoreSettings) -> None:
        self._work_dir = work_dir
        self._datasets = datasets  # {"split/index": (dataset dict, lines, line files)}
        self._store_settings = store_settings

    def setup(self) -> None:
        self._stores = ObjectStores(self._store_settings)

    def _texts(self, paths: Tuple[str, str], numbers: List[int]) -> Dict[int, Tuple[str, str]]:
        """{number: (source, target) as rejects keep them} of the sorted line `numbers`."""
        texts: Dict[int, Tuple[str, str]] = {}
        if not numbers:
            return texts
        wanted = iter(numbers)
        next_number: Optional[int] = next(wanted)
        with file_io.open_text_source(paths[0], self._stores) as s, \
                file_io.open_text_source(paths[1], self._stores) as t:
            for number, (raw_s, raw_t) in enumerate(zip(iter_raw_lines(s), iter_raw_lines(t)),
                                                    1):
                if number == next_number:
                    texts[number] = (
                        decode_line(raw_s, paths[0], number, "replace").strip()[:REJECT_TEXT_CHARS],
                        decode_line(raw_t, paths[1], number, "replace").strip()[:REJECT_TEXT_CHARS])
                    next_number = next(wanted, None)
                    if next_number is None:
                        break
        return texts

    def process(self, item: Tuple[Tuple[str, int], Iterable[Drop]]) -> Iterator[Dict[str, Any]]:
        (split, index), unsorted = item
        ds, lines, source_lines, target_lines = self._datasets["%s/%d" % (split, index)]
        drops = sorted(unsorted, key=lambda drop: drop[0])
        texts = self._texts((source_lines, target_lines),
                            [drop[0] for drop in drops if drop[3] is None])
        bitmap = new_bitmap(lines)
        reasons: Dict[str, int] = {}
        dropped_bytes = [0, 0]
        bitmap_path, rejects_path = dropped_paths(self._work_dir, split, index)

        def records() -> Iterator[bytes]:
            for number, reason, first, source, target, src_bytes, tgt_bytes in drops:
                if source is None:
                    source, target = texts[number]
                mark(bitmap, number)
                reasons[reason] = reasons.get(reason, 0) + 1
                dropped_bytes[0] += src_bytes
                dropped_bytes[1] += tgt_bytes
                record = reject_record(ds, number, "line %d" % number, reason, source, target)
                if first is not None:
                    known = self._datasets.get("%s/%d" % (first[0], first[1]))
                    record["duplicate_of"] = {"split": first[0], "line": first[2],
                                              "dataset": known[0]["name"] if known else None}
                yield reject_line(record)

        file_io.write_chunks(rejects_path, records(), self._stores)
        file_io.write_bytes_atomically(bitmap_path, bytes(bitmap), self._stores)
        yield {"split": split, "index": index, "dropped": sum(reasons.values()),
               "reasons": sorted(reasons.items()), "dropped_bytes": dropped_bytes,
               "bitmap": bitmap_path, "rejects": rejects_path}


class CleanPairs(beam.PTransform):
    """Chunks (`with_chunk_facts`) -> one report per dataset with drops, its bitmap and
    rejects file written under `work_dir`.

    `cleaning`: the run's CleaningConfig; `on_invalid`: --on_invalid_utf8; `datasets`:
    {"split/index": (dataset dict, its line count, source line file, target line file)} of
    every dataset."""

    def __init__(self, cleaning: CleaningConfig, on_invalid: str,
                 datasets: Dict[str, DatasetLines], work_dir: str) -> None:
        super().__init__()
        self._cleaning = cleaning
        self._on_invalid = on_invalid
        self._datasets = datasets
        self._work_dir = work_dir

    def expand(self, chunks: beam.PCollection) -> beam.PCollection:
        settings = StoreSettings.from_options(chunks.pipeline.options)
        scored = (chunks
                  | "Spread" >> beam.Reshuffle()
                  | "Score" >> beam.ParDo(_ScoreChunkFn(
                      self._cleaning, self._on_invalid, settings)).with_outputs(
                          KEYED, BATCHES, main="drops"))
        batches = (scored[BATCHES]
                   | "SpreadBatches" >> beam.Reshuffle()
                   | "ScoreBatches" >> beam.ParDo(_ScoreBatchFn(
                       self._cleaning, self._on_invalid, settings)).with_outputs(
                           KEYED, main="drops"))
        drops = (scored.drops, batches.drops) | "FilterDrops" >> beam.Flatten()
        keyed = (scored[KEYED], batches[KEYED]) | "AllKeyed" >> beam.Flatten()
        if self._cleaning.key_options is not None:
            dedup_on = self._cleaning.dedup is not None
            overlap = self._cleaning.drop_dev_overlap
            duplicates = (keyed
                          | "GroupByKey" >> beam.GroupByKey()
                          | "Decide" >> beam.FlatMap(
                              lambda kv: decide_group(kv[1], dedup_on, overlap)))
            drops = (drops, duplicates) | "AllDrops" >> beam.Flatten()
        return (drops
                | "GroupByDataset" >> beam.GroupByKey()
                | "WriteDropped" >> beam.ParDo(_WriteDroppedFn(self._work_dir, self._datasets,
                                                               settings)))
