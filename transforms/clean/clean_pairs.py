"""CleanPairs: which pairs the `--filters` and `--dedup` settings drop, and why.

The chunks are the encode pass's own (`encode_pairs.plan_chunks` of the prepared datasets),
each with its files' line and byte counts. `_ScoreChunkFn` reads a chunk as the encoder does
and decides each pair with the configured filters (`transforms.cleaning`), in parallel on
every worker; the filters see each line as OpusFilter sees it (right-stripped). A costly
filter (language identification, `PairFilter.COSTLY`) and the filters after it run only on
the pairs that passed the filters before it and de-duplication, as OpusFilter's recipe
orders them (`remove_duplicates`, then `filter`), and in batches (`accept_many`): most of the
stage's time is that filter's, and a duplicate or a pair a cheap filter drops never needs it.
A pair's reason is the same as if every filter ran on every pair: a duplicate is `duplicate`
(not also charged to a filter), otherwise the first failing filter in the file's order.

With de-duplication on, every pair's 16-byte de-duplication key and packed position go
through one `GroupByKey` on a byte of the key (DEDUP_BUCKETS buckets), a list per chunk and
bucket: the runner handles an element per chunk and bucket, not one per pair (at ~760k pairs
the per-element cost of the local runner was most of the stage with a fast language ID).
`decide_bucket` groups a bucket's pairs by key: the first occurrence in input order
(dataset, then line, within a split) is kept and the others are dropped as `duplicate` with
the first one named (`duplicate_of`; a filter may drop that one too); with
`--drop_dev_overlap` a train pair whose key occurs in dev is dropped as `dev_overlap`. Only
positions and sizes go through that shuffle, not the texts. The kept pairs that still await
a costly filter go, as lists of line numbers per chunk, back to their chunk (`CoGroupByKey`
with the chunks), which `_LateScoreFn` reads again to run the rest of the filters on them.
Without de-duplication `_ScoreChunkFn` runs them itself, on the chunk's pairs that passed
the cheap filters. Drops travel as lists per dataset, too.

The drops are grouped per dataset and `_WriteDroppedFn` writes, under `work_dir`, a bitmap of
the dropped line numbers (`transforms.cleaning.dropped_lines`: read by the vocab sample and
the encoder to skip exactly those lines) and the rejects records (JSON lines,
`transforms.formats.rejects`), and reports per dataset the drops per reason and the bytes of
the dropped lines per side (the sampler sizes a cleaned file's sample from what is left).
"""

import hashlib
import itertools
import os
import tempfile
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from transforms.clean.dedup_groups import (DEDUP_BUCKETS, DEV_OVERLAP, LATER, PENDING, Drop,
                                           Occurrences, decide_bucket)
from transforms.clean.pair_reading import ChunkKey, ReadPair, chunk_key, read_pairs
from transforms.clean.near_dedup import NearDuplicates, load_test_sets, one_drop_a_line
from transforms.cleaning.config import CleaningConfig
from transforms.cleaning.dropped_lines import mark, new_bitmap
from transforms.contracts.elements import Chunk, DatasetSpec, FileFacts
from transforms.formats.rejects import REJECT_TEXT_CHARS, reject_line, reject_record
from transforms.formats.text_lines import decode_line, iter_raw_lines
from transforms.reporting.job_metrics import JobCounters
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores, StoreSettings

KEYED = "keyed"
BATCHES = "batches"
SCORE_BATCH_PAIRS = 10000  # the default --encode_chunk_lines: plain files' chunks stay whole
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


def local_model(f: Any, stores: ObjectStores) -> None:
    """A filter's model file in a bucket (`LanguageIDFilter`'s fastText model) copied once
    per machine to a local file, which the filter then loads: fastText reads only local
    files. Keyed by the path's hash, written under a temporary name and renamed."""
    path = getattr(f, "model_path", None)
    if not path or file_io.is_local(path):
        return
    local = os.path.join(tempfile.gettempdir(), "t2t-model-%s%s" % (
        hashlib.sha256(path.encode("utf-8")).hexdigest()[:24], os.path.splitext(path)[1]))
    if not os.path.exists(local):
        fd, temporary = tempfile.mkstemp(dir=os.path.dirname(local))
        with os.fdopen(fd, "wb") as out:
            out.write(file_io.read_bytes(path, stores))
        os.replace(temporary, local)
    f.model_path = local


class _Scorer(beam.DoFn):
    """What the scoring DoFns share (`_ScoreChunkFn`, `_ScoreBatchFn`, `_LateScoreFn`).

    chunk -> drops ((split, dataset index), [drop]) decided by the filters alone, or with
    de-duplication on, every pair keyed for the dedup group (KEYED output), its reason LATER
    when it passed the cheap filters and awaits the costly ones. A chunk of more than
    SCORE_BATCH_PAIRS lines (a compressed file is one chunk: it cannot be split) is only
    read here, its pairs going out in batches (BATCHES output) that `_ScoreBatchFn` scores on
    any worker.

    A drop is (line number, reason, first occurrence or None, source text, target text,
    source bytes, target bytes): the texts cut as rejects keep them, the bytes the raw
    line's with its newline."""

    def __init__(self, cleaning: CleaningConfig, on_invalid: str,
                 store_settings: StoreSettings, occurrences: Occurrences) -> None:
        self._cleaning = cleaning  # transforms.cleaning.config.CleaningConfig
        self._on_invalid = on_invalid
        self._store_settings = store_settings
        self._occurrences = occurrences

    def setup(self) -> None:
        self._stores = ObjectStores(self._store_settings)
        # (cheap, costly and after) filters of the job (None) and of each corpus with its own
        self._sets: Dict[Optional[int], Tuple[List[Any], List[Any]]] = {}
        for corpus in [None] + [number for number, _ in self._cleaning.per_corpus]:
            filters = self._cleaning.build_filters(corpus)
            for f in filters:
                local_model(f, self._stores)
            costly = next((i for i, f in enumerate(filters) if f.COSTLY), len(filters))
            self._sets[corpus] = filters[:costly], filters[costly:]
            for f in filters[:costly]:  # the costly ones when first used (`_late_reasons`):
                f.setup()  # DoFns of the dedup path that do not run them load no model
        self._dedup = self._cleaning.key_options
        self._counters = JobCounters()
        self._tests = load_test_sets(self._cleaning, self._stores)

    def _filters(self, ds: DatasetSpec) -> Tuple[List[Any], List[Any]]:
        """(cheap, costly and after) filters of the dataset's corpus."""
        return self._sets.get(ds.get("corpus", 0), self._sets[None])  # one corpus: 0

    @staticmethod
    def _reason(filters: Tuple[List[Any], List[Any]], source: str,
                target: str) -> Optional[str]:
        """The first cheap filter of `filters` (`_filters`) that drops the pair, else LATER
        (costly filters follow) or None."""
        for f in filters[0]:
            if not f.accept(source, target):
                return f.reason
        return LATER if filters[1] else None

    def _late_reasons(self, ds: DatasetSpec, pairs: List[Tuple[str, str]],
                      languages: Optional[Tuple[str, str]] = None) -> List[Optional[str]]:
        """Per (source, target), the first of the costly filters and those after them that
        drops it, or None: each filter runs on the pairs all earlier ones passed."""
        reasons: List[Optional[str]] = [None] * len(pairs)
        left = list(range(len(pairs)))
        for f in self._filters(ds)[1]:
            if not left:
                break
            f.setup()
            verdicts = f.accept_many([pairs[i] for i in left], languages)
            for i, ok in zip(left, verdicts):
                if not ok:
                    reasons[i] = f.reason
            left = [i for i, ok in zip(left, verdicts) if ok]
        self._counters.inc("cleaning.pairs_scored_late", len(pairs))
        return reasons

    def _score_late(self, ds: DatasetSpec, pairs: List[ReadPair]) -> Iterator[Any]:
        """((split, dataset index), [drop]) of the drops among `pairs` by the costly filters
        and those after them."""
        reasons = self._late_reasons(ds, [(p[1].rstrip(), p[2].rstrip()) for p in pairs],
                                     (ds.get("source_lang", ""), ds.get("target_lang", "")))
        drops = [(number, reason, None, source.strip()[:REJECT_TEXT_CHARS],
                  target.strip()[:REJECT_TEXT_CHARS], src_bytes, tgt_bytes)
                 for (number, source, target, _, _, src_bytes, tgt_bytes), reason
                 in zip(pairs, reasons) if reason]
        if drops:
            yield (ds["split"], ds["index"]), drops

    def _read(self, chunk: Chunk) -> Iterator[ReadPair]:
        return read_pairs(chunk, self._stores, self._on_invalid)

    def _score(self, ds: DatasetSpec, chunk_first: int,
               pairs: Iterable[ReadPair]) -> Iterator[Any]:
        """Drops ((split, dataset index), [drop]) and keyed pairs (KEYED: (bucket, [(key,
        packed occurrence)])) of `pairs`, read from the chunk at line `chunk_first`: one
        element per bucket and chunk, not per pair (an element costs the runner more than
        the pair's own scoring)."""
        pack = self._occurrences.pack
        scored = 0
        later: List[ReadPair] = []  # without dedup: the pairs for the costly filters
        drops: List[Drop] = []
        buckets: Dict[int, List[Tuple[bytes, bytes]]] = {}
        prefix = ds["pair"].encode() + b"\0" if "pair" in ds else b""
        filters = self._filters(ds)
        for pair in pairs:
            number, source, target, end_s, end_t, src_bytes, tgt_bytes = pair
            scored += 1
            reason = None
            if self._tests is not None and ds["split"] == "train":
                reason = self._tests.reason(source, target)
            reason = reason or self._reason(filters, source.rstrip(), target.rstrip())
            if self._dedup is not None:
                # no texts through the shuffle: the writer reads the dropped ones again;
                # several language pairs: duplicates within a pair only (`prefix`)
                key = self._dedup.key((source + end_s, target + end_t))
                buckets.setdefault(key[-1] % DEDUP_BUCKETS, []).append((prefix + key, pack(
                    ds["split"], ds["index"], number, reason, chunk_first, src_bytes,
                    tgt_bytes)))
            elif reason == LATER:
                later.append(pair)
            elif reason:
                drops.append((number, reason, None, source.strip()[:REJECT_TEXT_CHARS],
                              target.strip()[:REJECT_TEXT_CHARS], src_bytes, tgt_bytes))
        self._counters.inc("cleaning.pairs_scored", scored)
        for bucket in sorted(buckets):
            yield beam.pvalue.TaggedOutput(KEYED, (bucket, buckets[bucket]))
        if drops:
            yield (ds["split"], ds["index"]), drops
        if later:
            yield from self._score_late(ds, later)


class _ScoreChunkFn(_Scorer):
    """chunk -> drops or keyed pairs, or, for a long chunk, batches of its pairs."""

    def process(self, chunk: Chunk) -> Iterator[Any]:
        if chunk.get("unmatched"):
            return
        pairs = self._read(chunk)
        if chunk["num_lines"] <= SCORE_BATCH_PAIRS:
            yield from self._score(chunk["ds"], chunk["first_line"], pairs)
            return
        yield from _batches(chunk, False, pairs)


def _batches(chunk: Chunk, late: bool, pairs: Iterable[ReadPair]) -> Iterator[Any]:
    """BATCHES output: (dataset, chunk's first line, late, [pair]) of SCORE_BATCH_PAIRS
    `pairs` each; `late`: for the costly filters only."""
    batch: List[ReadPair] = []
    for pair in pairs:
        batch.append(pair)
        if len(batch) == SCORE_BATCH_PAIRS:
            yield beam.pvalue.TaggedOutput(BATCHES, (chunk["ds"], chunk["first_line"], late,
                                                     batch))
            batch = []
    if batch:
        yield beam.pvalue.TaggedOutput(BATCHES, (chunk["ds"], chunk["first_line"], late, batch))


class _ScoreBatchFn(_Scorer):
    """(dataset, chunk's first line, late, [pair as `_ScoreChunkFn._read` gives it]) ->
    drops or keyed pairs (late: drops by the costly filters)."""

    def process(self, batch: Tuple[DatasetSpec, int, bool, List[ReadPair]]) -> Iterator[Any]:
        ds, chunk_first, late, pairs = batch
        if late:
            yield from self._score_late(ds, pairs)
        else:
            yield from self._score(ds, chunk_first, pairs)


class _LateScoreFn(_Scorer):
    """(chunk key, {"chunk": [chunk], "numbers": [[line number]]}) -> the drops among those
    lines of the chunk (pairs de-duplication kept, awaiting the costly filters) by the
    costly filters and those after them; a long chunk's pairs go out in batches."""

    def process(self, item: Tuple[ChunkKey, Dict[str, List[Any]]]) -> Iterator[Any]:
        _, joined = item
        if not joined["numbers"] or not joined["chunk"]:
            return
        chunk = joined["chunk"][0]
        wanted = set(itertools.chain.from_iterable(joined["numbers"]))
        pairs = read_pairs(chunk, self._stores, self._on_invalid, wanted)
        if chunk["num_lines"] <= SCORE_BATCH_PAIRS:
            yield from self._score_late(chunk["ds"], list(pairs))
        else:
            yield from _batches(chunk, True, pairs)


class _WriteDroppedFn(beam.DoFn):
    """((split, dataset index), [[drop]]) -> the dataset's bitmap and rejects file (in line
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

    def _texts(self, paths: Tuple[str, str],
               numbers: Iterator[int]) -> Iterator[Tuple[str, str]]:
        """(source, target) as rejects keep them of each of the ascending line `numbers`,
        in turn, read as they are asked for (the texts are not all held at once)."""
        next_number: Optional[int] = next(numbers, None)
        if next_number is None:
            return
        with file_io.open_text_source(paths[0], self._stores) as s, \
                file_io.open_text_source(paths[1], self._stores) as t:
            for number, (raw_s, raw_t) in enumerate(zip(iter_raw_lines(s), iter_raw_lines(t)),
                                                    1):
                if number == next_number:
                    yield (
                        decode_line(raw_s, paths[0], number, "replace").strip()[:REJECT_TEXT_CHARS],
                        decode_line(raw_t, paths[1], number, "replace").strip()[:REJECT_TEXT_CHARS])
                    next_number = next(numbers, None)
                    if next_number is None:
                        return

    def process(self, item: Tuple[Tuple[str, int], Iterable[List[Drop]]]
                ) -> Iterator[Dict[str, Any]]:
        (split, index), lists = item
        unsorted = itertools.chain.from_iterable(lists)
        ds, lines, source_lines, target_lines = self._datasets["%s/%d" % (split, index)]
        drops = one_drop_a_line(unsorted, (DEV_OVERLAP,))
        texts = self._texts((source_lines, target_lines),
                            (drop[0] for drop in drops if drop[3] is None))
        bitmap = new_bitmap(lines)
        reasons: Dict[str, int] = {}
        dropped_bytes = [0, 0]
        bitmap_path, rejects_path = dropped_paths(self._work_dir, split, index)

        def records() -> Iterator[bytes]:
            for number, reason, first, source, target, src_bytes, tgt_bytes in drops:
                if source is None:
                    source, target = next(texts)
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
        codec = Occurrences((key.split("/")[0] for key in self._datasets),
                            self._cleaning.reasons() + self._cleaning.extra_reasons)
        scored = (chunks
                  | "Spread" >> beam.Reshuffle()
                  | "Score" >> beam.ParDo(_ScoreChunkFn(
                      self._cleaning, self._on_invalid, settings, codec)).with_outputs(
                          KEYED, BATCHES, main="drops"))
        batches = (scored[BATCHES]
                   | "SpreadBatches" >> beam.Reshuffle()
                   | "ScoreBatches" >> beam.ParDo(_ScoreBatchFn(
                       self._cleaning, self._on_invalid, settings, codec)).with_outputs(
                           KEYED, main="drops"))
        drops = (scored.drops, batches.drops) | "FilterDrops" >> beam.Flatten()
        keyed = (scored[KEYED], batches[KEYED]) | "AllKeyed" >> beam.Flatten()
        if self._cleaning.key_options is not None:
            dedup_on = self._cleaning.dedup is not None
            overlap = self._cleaning.drop_dev_overlap
            decided = (keyed
                       | "GroupByKey" >> beam.GroupByKey()
                       | "Decide" >> beam.FlatMap(
                           decide_bucket, codec, dedup_on, overlap).with_outputs(
                           PENDING, main="drops"))
            by_chunk = chunks | "ByChunk" >> beam.FlatMap(
                lambda chunk: [] if chunk.get("unmatched") else [(chunk_key(chunk), chunk)])
            late = ({"chunk": by_chunk, "numbers": decided[PENDING]}
                    | "PendingByChunk" >> beam.CoGroupByKey()
                    | "ScoreLate" >> beam.ParDo(_LateScoreFn(
                        self._cleaning, self._on_invalid, settings, codec)).with_outputs(
                            BATCHES, main="drops"))
            late_batches = (late[BATCHES]
                            | "SpreadLateBatches" >> beam.Reshuffle()
                            | "ScoreLateBatches" >> beam.ParDo(_ScoreBatchFn(
                                self._cleaning, self._on_invalid, settings, codec)))
            drops = ((drops, decided.drops, late.drops, late_batches)
                     | "AllDrops" >> beam.Flatten())
        if self._cleaning.minhash is not None:
            near = chunks | "NearDuplicates" >> NearDuplicates(
                self._cleaning.minhash, self._on_invalid, codec.splits, self._work_dir)
            drops = (drops, near) | "WithNearDuplicates" >> beam.Flatten()
        return (drops
                | "GroupByDataset" >> beam.GroupByKey()
                | "WriteDropped" >> beam.ParDo(_WriteDroppedFn(self._work_dir, self._datasets,
                                                               settings)))
