"""EncodePairs: read line-aligned chunks of source/target files and encode them in parallel.

Each element is one chunk: a range of lines of a source/target file pair, with the byte offsets
where the range starts in both files (found by `ScanTextFiles`), so chunks are read by
different workers. The DoFn here only wires the pure parts to Beam and the file systems: it
loads both vocabularies once per worker in `setup`, reads the chunk into its typed plan
(`transforms.encode.chunk_plans`: what to do is a field of the plan, not a key of the chunk),
opens the chunk's files, and hands their lines to `transforms.pairs.chunk_reading` (lines ->
blocks of pairs, or rejects with a reason: T2T drops pairs with an empty side silently; the
lines the cleaning stage dropped are skipped, or only measured, for the split's lengths before
cleaning) and each block to `transforms.pairs.pair_encoding` (a block's pairs -> an
`EncodedBlock`: serialized `tf.train.Example`s keyed for the deterministic shuffle, by shard,
and their counts, which the DoFn adds up over the chunk; with
--max_length the train pairs T2T's length filter would drop are rejected there, and the
split's lengths before that drop measured too). A
chunk's records are written as one sorted fragment file per shard
(`transforms.shards.shard_fragments`), and only the fragments' names and counts go on to the shard
writer. With a `Resume`, each chunk writes its manifest after its fragments, and a chunk whose
manifest a killed run left and whose fragments check out is replayed, not encoded
(`transforms.encode.chunk_manifests`); either way the chunk says so on the `resume` output.
"""

from typing import Dict, Iterator, List, Literal, Optional, Tuple, TypeAlias, Union

import apache_beam as beam
from apache_beam.pvalue import DoOutputsTuple, TaggedOutput
from apache_beam.typehints.decorators import no_annotations
from apache_beam.io.filesystems import FileSystems

from transforms.pairs.chunk_reading import LineReject, LinePair, read_chunk, read_unmatched
from transforms.codecs.varints import encode_varints
from transforms.codecs.vocabulary import VocabularyLoader
from transforms.storage import file_io
from transforms.contracts.config import DatagenConfig
from transforms.contracts.elements import (Chunk, ChunkLengths, DatasetSpec, FileFacts, FragmentEntry,
                                 FragmentReport, RejectRecord, ShardKey, TokenCounts)
from transforms.formats.example_proto import PAIR_FEATURE, Int64FeaturesWriter, PairExampleWriter
from transforms.shards.record_formats import TEXT_FORMATS
from transforms.encode.length_stats import chunk_lengths
from transforms.formats.rejects import OVER_MAX_LENGTH, max_length_of, reject_record
from transforms.pairs.mixing import take_count
from transforms.pairs.pair_encoding import (BlockPlan, PairEncoder, PairTally, copy_keys,
                                            order_keys, shard_of, shuffle_keys)
from transforms.pairs.text_pairs import TextPairs
from transforms.storage.object_stores import ObjectStores, StoreSettings
from transforms.shards.fragment_groups import FragmentGroup, flush_bytes
from transforms.shards.shard_fragments import fragment_name
from transforms.encode.chunk_plans import (Cleaned, Copies, PairsPlan, UnmatchedPlan,
                                           plan_of)
from transforms.encode.chunk_manifests import (ChunkRecorder, FinishedChunk, ManifestIndex,
                                               Resume, replay, write_manifest)
from transforms.formats.text_lines import iter_raw_lines
from transforms.storage.vocab_files import VocabularyFiles

REJECTS = "rejects"
COPY_BATCH_RECORDS = 1 << 16  # --mix_shards: repeated records written per fragment batch
BEFORE_CLEANING = " before cleaning"  # the length figures' key of a split's pairs before it
# ... and with --max_length but no cleaning, of the split's pairs before that filter
BEFORE_MAX_LENGTH = " before max_length"
STATS = "stats"
LENGTHS = "lengths"
RESUME = "resume"  # ("chunks_reused" | "chunks_encoded", 1) per line-aligned chunk


def pair_lengths_key(split: str, pair: str) -> str:
    """The length figures' key of a language pair's pairs of a split (several corpora)."""
    return "%s\t%s" % (split, pair)

# What the encode DoFn yields: a fragment report (main output) and, tagged, rejects, token
# counts and length counts, each keyed by split. Beam reads these hints (`TaggedOutput[...]`)
# for the tagged outputs' element types.
RejectOut: TypeAlias = TaggedOutput[Literal["rejects"], Tuple[str, RejectRecord]]
StatsOut: TypeAlias = TaggedOutput[Literal["stats"], Tuple[str, TokenCounts]]
LengthsOut: TypeAlias = TaggedOutput[Literal["lengths"], Tuple[str, ChunkLengths]]
ResumeOut: TypeAlias = TaggedOutput[Literal["resume"], Tuple[str, int]]
EncodeOut = Union[Tuple[ShardKey, FragmentReport], RejectOut, StatsOut, LengthsOut, ResumeOut]


class _EncodeChunkFn(beam.DoFn):
    """One chunk -> its shard fragments written, its rejects and its counts; `loader`: the
    run's Vocabulary class and its options (the class pickles by reference), whose files
    are read in `setup`."""

    def __init__(self, loader: VocabularyLoader, source_vocab_path: str,
                 target_vocab_path: str, seed: int, num_shards: Dict[str, int],
                 fragment_dir: str, config: DatagenConfig,
                 store_settings: Optional[StoreSettings] = None,
                 prefixes: Optional[Dict[str, List[int]]] = None,
                 resume: Optional[Resume] = None,
                 target_prefixes: Optional[Dict[str, List[int]]] = None,
                 pass_bytes: Optional[int] = None) -> None:
        self._store_settings = store_settings or StoreSettings()
        self._resume = resume  # where chunk manifests are kept and looked for
        # {pair ("" with one corpus): ids put before every input: its language tag}
        self._prefixes = dict(prefixes or {})
        self._target_prefixes = dict(target_prefixes or {})  # before every target (NLLB)
        self._paths = (source_vocab_path, target_vocab_path)
        self._fragment_dir = fragment_dir
        self._seed = seed
        self._num_shards = num_shards  # {split: number of shards}
        self._on_invalid = config.read.on_invalid_utf8
        self._max_chars = config.read.max_line_chars
        self._max_length = config.read.max_length
        # a group is written at --fragment_group_mb, or sooner in a pass of known size
        # (`fragment_groups.flush_bytes`: a kill loses little of it)
        self._group_bytes = int(config.read.fragment_group_mb * 2 ** 20)
        if pass_bytes is not None:
            self._group_bytes = flush_bytes(self._group_bytes, pass_bytes)
        self._loader = loader
        # --output_format text: records of the pairs' text (`text_format.text_record`),
        # the lines right-stripped as read; --keep_order: keyed by position, not shuffled
        self._text = config.job.output_format in TEXT_FORMATS
        self._keep_order = config.job.keep_order

    def setup(self) -> None:
        # Fragments go to an object store through one reused client (see FragmentGroup).
        self._stores = ObjectStores(self._store_settings)
        self._counters = ChunkRecorder()  # also what a chunk added, for its manifest
        self._index: Optional[ManifestIndex] = None  # a killed run's manifests, once asked
        self._examples = PairExampleWriter("inputs", "targets")  # without TensorFlow
        self._text_examples = Int64FeaturesWriter()
        self._pair_entries: Dict[str, bytes] = {}  # pair -> its `lang_pair` feature entry
        # bitmap path -> the cleaning stage's dropped lines of a dataset
        self._dropped: Dict[str, bytes] = {}
        self._prefix_varints = {pair: (encode_varints(ids), len(ids))
                                for pair, ids in self._prefixes.items()}
        self._target_prefix_varints = {pair: (encode_varints(ids), len(ids))
                                       for pair, ids in self._target_prefixes.items()}
        if self._text:  # no vocabulary: the pairs' characters are counted
            self._encoder: Union[PairEncoder, TextPairs] = TextPairs(self._text_examples)
            return
        vocabularies = VocabularyFiles(self._loader, self._stores)
        source = vocabularies.load(self._paths[0], for_encoding=True)
        target = (source if self._paths[1] == self._paths[0]
                  else vocabularies.load(self._paths[1], for_encoding=True))
        tags = {i for prefixes in (self._prefixes, self._target_prefixes)
                for ids in prefixes.values() for i in ids}
        if tags:  # a tag string inside a sentence is text, never the tag's id (the tags
            shared = source is target  # are ids of the one vocabulary of both sides)
            source = source.reserving(tags)
            target = source if shared else target
        self._encoder = PairEncoder(source, target, self._examples)

    def start_bundle(self) -> None:
        # a failed bundle's runs are not this one's
        self._group = FragmentGroup(self._stores, self._group_bytes)
        self._finished: List[FinishedChunk] = []  # chunks whose manifest waits for a flush
        self._checks: Dict[str, List[int]] = {}  # the bundle's files: path -> [size, crc]

    def finish_bundle(self) -> None:
        self._flush()

    def _flush(self) -> None:
        """Writes the group's files, then the manifest of the chunks finished since the last
        one (their runs are all in files now): the bundle's outputs name those files, and a
        runner passes them on only once this returns."""
        self._checks.update(self._group.flush())
        if self._resume is not None and self._finished:
            write_manifest(self._finished, self._checks, self._resume, self._stores)
            self._finished = []

    def _flush_if_full(self) -> None:
        if self._group.full():
            self._flush()

    def _reusable(self, chunk: Chunk) -> Optional[Dict]:
        resume = self._resume
        if resume is None or not resume.look:
            return None
        if self._index is None:
            self._index = ManifestIndex(resume, self._fragment_dir, self._stores)
        return self._index.reusable(chunk)

    def _dropped_lines(self, cleaned: Optional[Cleaned]) -> Optional[bytes]:
        """The dataset's dropped-lines bitmap (`transforms.clean.clean_pairs`), or None: the
        lines the cleaning stage dropped, whose rejects it wrote; read once per worker."""
        if cleaned is None or cleaned.bitmap is None:
            return None
        path = cleaned.bitmap
        if path not in self._dropped:
            self._dropped = {path: file_io.read_bytes(path, self._stores)}
        return self._dropped[path]

    def _reject(self, ds: DatasetSpec, reject: LineReject) -> RejectOut:
        self._counters.inc("%s.rejected.%s" % (ds["split"], reject.reason))
        return beam.pvalue.TaggedOutput(REJECTS, (ds["split"], reject_record(
            ds, reject.number, "line %d" % reject.number, reject.reason, reject.source,
            reject.target)))

    def _pair_entry(self, pair: Optional[str]) -> bytes:
        """The `lang_pair` feature entry of a pair's records (none with one corpus)."""
        if not pair:
            return b""
        if pair not in self._pair_entries:
            self._pair_entries[pair] = self._examples.bytes_entry(PAIR_FEATURE, pair.encode())
        return self._pair_entries[pair]

    def process(self, chunk: Chunk) -> Iterator[EncodeOut]:
        plan = plan_of(chunk, self._num_shards)
        if isinstance(plan, UnmatchedPlan):  # it only rejects: nothing to resume
            yield from self._unmatched(plan)
            self._flush_if_full()
            return
        if self._resume is None:
            yield from self._encode(plan)
            self._flush_if_full()
            return
        self._counters.take()
        manifest = self._reusable(chunk)
        if manifest is not None:
            for name, n in sorted(manifest["counters"].items()):
                self._counters.inc(name, n)
            yield from replay(manifest, self._fragment_dir)
            yield beam.pvalue.TaggedOutput(RESUME, ("chunks_reused", 1))
            return
        outputs = list(self._encode(plan))  # a chunk's: bounded by --encode_chunk_lines
        self._finished.append((chunk, outputs, self._counters.take()))
        yield from outputs
        yield beam.pvalue.TaggedOutput(RESUME, ("chunks_encoded", 1))
        self._flush_if_full()

    def _block_plan(self, plan: PairsPlan) -> BlockPlan:
        """How the chunk's blocks are encoded: keyed in order (--keep_order) or for the
        shuffle, over its range of shards, under its pair's tags."""
        ds = plan.ds
        split, pair = ds["split"], ds.get("pair", "")
        key_of = (order_keys(ds["index"]) if self._keep_order
                  else shuffle_keys(self._seed, split, ds["index"]))
        return BlockPlan(key_of, ds["index"], plan.num_shards,
                         max_length_of(split, self._max_length),
                         self._prefix_varints.get(pair, (b"", 0)), self._pair_entry(pair),
                         self._target_prefix_varints.get(pair, (b"", 0)))

    def _encode(self, plan: PairsPlan) -> Iterator[EncodeOut]:
        ds, span, cleaned = plan.ds, plan.span, plan.cleaned
        split = ds["split"]
        pair = ds.get("pair")
        block_plan = self._block_plan(plan)
        by_shard: Dict[int, List[FragmentEntry]] = {}  # shard -> [(key, dataset, line, record)]
        written = PairTally()
        too_long = PairTally()  # the pairs --max_length drops
        measure_before = cleaned is not None and cleaned.measure_before
        cleaned_away: List[LinePair] = []  # the pairs cleaning dropped that would be written
        with file_io.open_text_source(span.source_path, self._stores,
                                      plan.offsets[0]) as src, \
                file_io.open_text_source(span.target_path, self._stores,
                                         plan.offsets[1]) as tgt:
            for item in read_chunk(iter_raw_lines(src), iter_raw_lines(tgt), span,
                                   self._on_invalid, self._max_chars,
                                   self._dropped_lines(cleaned), measure_before, self._text):
                if isinstance(item, LineReject):
                    yield self._reject(ds, item)
                elif item.cleaned_away:
                    cleaned_away.extend(item.pairs)
                else:
                    pairs = item.pairs
                    if item.raw is not None:  # the text output's: the lines right-stripped
                        pairs = [(number, *raw) for (number, _, _), raw in
                                 zip(item.pairs, item.raw)]
                    block = self._encoder.encode(pairs, block_plan)
                    for shard, entries in block.by_shard.items():
                        by_shard.setdefault(shard, []).extend(entries)
                    written.add(block.written)
                    too_long.add(block.too_long)
                    for number, source, target in block.dropped:
                        yield self._reject(ds, LineReject(number, OVER_MAX_LENGTH, source,
                                                          target))
        self._counters.inc(split + ".pairs_read", span.num_lines)
        self._counters.inc(split + ".pairs_encoded", len(written.lengths))
        yield from self._write_fragments(split, ds["index"], span.first_line, by_shard,
                                         plan.first_shard)
        if plan.copies is not None:
            yield from self._write_copies(plan, plan.copies, by_shard)
        yield beam.pvalue.TaggedOutput(STATS, (split, written.token_counts()))
        lengths = chunk_lengths(written.lengths, written.chars, written.ids)
        yield beam.pvalue.TaggedOutput(LENGTHS, (split, lengths))
        if pair:  # and the pair's own figures
            yield beam.pvalue.TaggedOutput(LENGTHS, (pair_lengths_key(split, pair), lengths))
        if measure_before or block_plan.max_length:
            measured = self._encoder.measure(cleaned_away, block_plan)
            both = written.plus(measured).plus(too_long)
            label = BEFORE_CLEANING if measure_before else BEFORE_MAX_LENGTH
            yield beam.pvalue.TaggedOutput(LENGTHS, (split + label, chunk_lengths(
                both.lengths, both.chars, both.ids)))

    def _write_fragments(self, split: str, dataset_index: int, first_line: int,
                         by_shard: Dict[int, List[FragmentEntry]], first_shard: int = 0,
                         copies: int = 0) -> Iterator[Tuple[ShardKey, FragmentReport]]:
        """Adds each shard's entries as a run to the group (written when it is full, and at
        the bundle's end); yields its report, naming the group's file of the shard and the
        run. `by_shard` counts shards from `first_shard`; `copies` (> 0): they are repeated
        records, the batch from that copy on."""
        for shard, entries in sorted(by_shard.items()):
            shard += first_shard
            run = fragment_name(split, shard, dataset_index, first_line, copies)
            path = self._group.add(split, shard, FileSystems.join(self._fragment_dir, run),
                                   entries)
            report: FragmentReport = {"path": path, "run": run, "records": len(entries),
                                      "by_dataset": [[dataset_index, len(entries)]]}
            if copies:
                report["copies"] = [[dataset_index, len(entries)]]
            yield (split, shard), report

    def _write_copies(self, plan: PairsPlan, copies: Copies,
                      by_shard: Dict[int, List[FragmentEntry]]
                      ) -> Iterator[Tuple[ShardKey, FragmentReport]]:
        """--mix_shards: the chunk's records repeated as their pair's rate asks (a line gives
        `mixing.take_count` records), each copy with a key of its own, written in batches
        of about COPY_BATCH_RECORDS so memory stays bounded."""
        split, index = plan.ds["split"], plan.ds["index"]
        base = [entry for entries in by_shard.values() for entry in entries]
        extra = {number: take_count(copies.offset + number - 1, copies.lines,
                                    copies.records) - 1
                 for _, _, number, _ in base}
        key_of = copy_keys(self._seed, split, index)
        batch: Dict[int, List[FragmentEntry]] = {}
        size, start, most = 0, 1, max(extra.values(), default=0)
        for copy in range(1, most + 1):
            for _, _, number, record in base:
                if extra[number] >= copy:
                    key = key_of(number, copy)
                    batch.setdefault(shard_of(key, plan.num_shards), []).append(
                        (key, index, number, record))
                    size += 1
            if size >= COPY_BATCH_RECORDS or copy == most:
                yield from self._write_fragments(split, index, plan.span.first_line, batch,
                                                 plan.first_shard, start)
                self._flush_if_full()  # memory stays bounded however many copies
                self._counters.inc(split + ".records_repeated", size)
                batch, size, start = {}, 0, copy + 1

    def _unmatched(self, plan: UnmatchedPlan) -> Iterator[RejectOut]:
        """Lines of the longer file of a misaligned pair (--on_misaligned reject)."""
        read = 0
        ds = plan.chunk["ds"]
        with file_io.open_text_source(plan.path, self._stores, plan.offset) as f:
            for reject in read_unmatched(iter_raw_lines(f), plan.path, plan.side,
                                         plan.first_line, plan.skip):
                read += 1
                yield self._reject(ds, reject)
        self._counters.inc(plan.split + ".pairs_read", read)


def plan_chunks(ds: DatasetSpec, source_path: str, target_path: str, source_scan: FileFacts,
                target_scan: FileFacts) -> List[Chunk]:
    """Chunks of a line-aligned file pair of dataset `ds` (a dict).

    Line ranges start at a seek point present in both files. When the files have different
    line counts, a last chunk covers the extra lines of the longer one (they are rejected).
    """
    total = min(source_scan["lines"], target_scan["lines"])
    src_points = {line: offset for line, offset in source_scan["checkpoints"]}
    tgt_points = {line: offset for line, offset in target_scan["checkpoints"]}
    starts = sorted(set(src_points) & set(tgt_points) | {0})
    starts = [s for s in starts if s < total] or [0]
    chunks: List[Chunk] = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else total
        chunks.append({"ds": ds, "source": source_path, "target": target_path,
                       "first_line": start, "num_lines": end - start,
                       "source_offset": src_points.get(start, 0),
                       "target_offset": tgt_points.get(start, 0)})
    if source_scan["lines"] != target_scan["lines"]:
        side, points = (("source", src_points) if source_scan["lines"] > total
                        else ("target", tgt_points))
        start = max(line for line in points if line <= total)
        chunks.append({"ds": ds, "source": source_path, "target": target_path, "unmatched": side,
                       "first_line": total, "offset": points[start], "skip": total - start})
    return chunks


@beam.typehints.with_input_types(Chunk)
class EncodePairs(beam.PTransform):
    """Chunks -> ((split, shard), fragment {path, records, by_dataset}) for each shard fragment
    written under `fragment_dir`, rejects, per-chunk token counts
    (split, [source tokens, source OOV, target tokens, target OOV]) and per-chunk length counts
    (split, `transforms.encode.length_stats.chunk_lengths`), for `LengthReportFn`.

    `loader`: how the run's vocabularies load (`VocabConfig.loader`: the kind's Vocabulary
    class and the options it is built with, its EOS token included), whose files are at the
    two paths; `config`: the run's `transforms.contracts.config.DatagenConfig` (how lines are read and
    rejected); `prefixes`: {pair: ids} put before every input of the pair's datasets (its
    language tag; "" is the pair of a one-corpus run), `target_prefixes` likewise before every
    target (`--lang_tags nllb`); `resume`: where chunk manifests are
    written and a killed run's looked for (and then the `resume` output says, per chunk,
    whether it was reused or encoded); `pass_bytes`: the input bytes of every chunk's files,
    which bound a worker's fragment group (`fragment_groups.flush_bytes`)."""

    def __init__(self, loader: VocabularyLoader, source_vocab_path: str,
                 target_vocab_path: str, seed: int, num_shards: Dict[str, int],
                 fragment_dir: str, config: DatagenConfig,
                 prefixes: Optional[Dict[str, List[int]]] = None,
                 resume: Optional[Resume] = None,
                 target_prefixes: Optional[Dict[str, List[int]]] = None,
                 pass_bytes: Optional[int] = None) -> None:
        super().__init__()
        self._pass_bytes = pass_bytes
        self._args = (loader, source_vocab_path, target_vocab_path, seed, num_shards,
                      fragment_dir, config)
        self._prefixes = prefixes
        self._target_prefixes = target_prefixes
        self._resume = resume

    @no_annotations  # Beam takes PCollection hints only here: the outputs' are `EncodeOut`
    def expand(self, chunks: beam.PCollection) -> DoOutputsTuple:
        fn = _EncodeChunkFn(*self._args, StoreSettings.from_options(chunks.pipeline.options),
                            self._prefixes, self._resume, self._target_prefixes,
                            self._pass_bytes)
        return (chunks
                | "Spread" >> beam.Reshuffle()
                | "Encode" >> beam.ParDo(fn).with_outputs(REJECTS, STATS, LENGTHS, RESUME,
                                                              main="records"))
