"""EncodePairs: read line-aligned chunks of source/target files and encode them in parallel.

Each element is one chunk: a range of lines of a source/target file pair, with the byte offsets
where the range starts in both files (found by `ScanTextFiles`), so chunks are read by
different workers. The DoFn loads both vocabularies once per worker in `setup`, strips each
line, encodes both sides and appends EOS, exactly as T2T's `text2text_generate_encoded`.
Pairs with an empty side are rejected with a reason (T2T drops them silently), the lines the
cleaning stage dropped (`chunk["dropped"]`, `transforms.clean_pairs`) are skipped (with
`chunk["lengths_before"]` only measured, for the split's lengths before cleaning); every other
pair becomes a serialized `tf.train.Example` keyed for the deterministic shuffle; a chunk's
records are written as one sorted fragment file per shard (`transforms.shard_fragments`), and
only the fragments' names and counts go on to the shard writer.
"""

import hashlib
from typing import Any, Callable, Dict, Iterator, List, Literal, Optional, Tuple, TypeAlias, Union

import apache_beam as beam
from apache_beam.pvalue import DoOutputsTuple, TaggedOutput
from apache_beam.typehints.decorators import no_annotations
from apache_beam.io.filesystems import FileSystems

from transforms.storage import file_io
from transforms.cleaning.dropped_lines import is_dropped
from transforms.codecs.varints import encode_varints
from transforms.config import DatagenConfig
from transforms.elements import (Chunk, ChunkLengths, DatasetSpec, FileFacts, FragmentEntry,
                                 FragmentReport, RejectRecord, ShardKey, TokenCounts)
from transforms.formats.example_proto import PairExampleWriter
from transforms.length_stats import chunk_lengths
from transforms.formats.rejects import pair_reject_reason, reject_record
from transforms.job_metrics import JobCounters
from transforms.storage.object_stores import ObjectStores, StoreSettings
from transforms.shard_fragments import fragment_name, write_fragment
from transforms.formats.text_lines import decode_line, iter_raw_lines
from transforms.vocab_files import VocabularyFiles

REJECTS = "rejects"
BEFORE_CLEANING = " before cleaning"  # the length figures' key of a split's pairs before it
STATS = "stats"
LENGTHS = "lengths"
LINE_CACHE_SIZE = 1 << 17  # lines per side whose Example entries a worker keeps (~60 MB at most)
BLOCK_PAIRS = 4096  # pairs read before their lines are encoded together

# What the encode DoFn yields: a fragment report (main output) and, tagged, rejects, token
# counts and length counts, each keyed by split. Beam reads these hints (`TaggedOutput[...]`)
# for the tagged outputs' element types.
RejectOut: TypeAlias = TaggedOutput[Literal["rejects"], Tuple[str, RejectRecord]]
StatsOut: TypeAlias = TaggedOutput[Literal["stats"], Tuple[str, TokenCounts]]
LengthsOut: TypeAlias = TaggedOutput[Literal["lengths"], Tuple[str, ChunkLengths]]
EncodeOut = Union[Tuple[ShardKey, FragmentReport], RejectOut, StatsOut, LengthsOut]
# {text: (Example feature entry, ids with EOS, ids without EOS, OOV words, characters)}
LineEntries = Dict[str, Tuple[bytes, int, int, int, int]]
Block = List[Tuple[int, str, str]]  # (line number, source, target) of valid pairs


def shuffle_key(seed: int, split: str, pair_index: int, line_number: int) -> int:
    """A 64-bit key from the seed and the pair's position: the global shuffle order."""
    return shuffle_keys(seed, split, pair_index)(line_number)


def shuffle_keys(seed: int, split: str, pair_index: int) -> Callable[[int], int]:
    """line number -> `shuffle_key(seed, split, pair_index, line number)`: the part the lines
    of a file pair share is formatted once."""
    prefix = b"%d\x00%s\x00%d\x00" % (seed, split.encode(), pair_index)
    blake2b, from_bytes = hashlib.blake2b, int.from_bytes

    def key(line_number: int) -> int:
        return from_bytes(blake2b(prefix + b"%d" % line_number, digest_size=8).digest(), "big")
    return key


def shard_of(key: int, num_shards: int) -> int:
    """Shards are contiguous ranges of the key space."""
    return (key * num_shards) >> 64


class _EncodeChunkFn(beam.DoFn):
    def __init__(self, source_vocab_path: str, target_vocab_path: str, seed: int,
                 num_shards: Dict[str, int], fragment_dir: str, config: DatagenConfig,
                 store_settings: Optional[StoreSettings] = None) -> None:
        self._store_settings = store_settings or StoreSettings()
        self._paths = (source_vocab_path, target_vocab_path)
        self._fragment_dir = fragment_dir
        self._seed = seed
        self._num_shards = num_shards  # {split: number of shards}
        self._on_invalid = config.read.on_invalid_utf8
        self._max_chars = config.read.max_line_chars
        self._loader = config.vocab.loader  # the kind's Vocabulary class and its options

    def setup(self) -> None:
        # Fragments go to an object store through one reused client (see write_fragment).
        self._stores = ObjectStores(self._store_settings)
        self._counters = JobCounters()
        self._examples = PairExampleWriter("inputs", "targets")  # without TensorFlow
        vocabularies = VocabularyFiles(self._loader, self._stores)
        self._source = vocabularies.load(self._paths[0], for_encoding=True)
        self._target = (self._source if self._paths[1] == self._paths[0]
                        else vocabularies.load(self._paths[1], for_encoding=True))
        # per side: the EOS ids as varints, and how many
        self._eos = tuple((encode_varints(ids), len(ids)) for ids in (
            self._source.eos_ids(), self._target.eos_ids()))
        # per side: line -> (Example entry, id count with EOS, id count without EOS, OOV
        # words, characters): the counts kept so a cached line costs no len() calls
        self._line_entries: Tuple[LineEntries, LineEntries] = ({}, {})
        # bitmap path -> the cleaning stage's dropped lines of a dataset
        self._dropped: Dict[str, bytes] = {}

    def _dropped_lines(self, chunk: Chunk) -> Optional[bytes]:
        """The dataset's dropped-lines bitmap (`transforms.clean_pairs`), or None: the lines
        the cleaning stage dropped, whose rejects it wrote; read once per worker."""
        path = chunk.get("dropped")
        if path is None:
            return None
        if path not in self._dropped:
            self._dropped = {path: file_io.read_bytes(path, self._stores)}
        return self._dropped[path]

    def _entries(self, side: int, texts: List[str]) -> LineEntries:
        """{text: (Example feature entry, id count with EOS, id count without EOS, OOV
        words, characters)} of one side's lines `texts` (the entry holds the ids, EOS
        appended).

        Parallel corpora repeat lines a lot (on the en-zh bench corpus 76% of English and 52%
        of Chinese lines occur more than once), so each side keeps its recent lines' entries,
        already serialized (`PairExampleWriter`); the lines not kept are encoded together
        (`Vocabulary.encode_varints_many`: a subword encoder segments their new tokens in
        one compiled call).
        """
        cache = self._line_entries[side]
        entries: Dict[str, Any] = {text: cache.get(text) for text in dict.fromkeys(texts)}
        new = [text for text, known in entries.items() if known is None]
        if new:
            encoder = self._source if side == 0 else self._target
            eos, eos_count = self._eos[side]
            entry = self._examples.entry_from_varints
            if len(cache) + len(new) > LINE_CACHE_SIZE:
                cache.clear()
            for text, (packed, count, oov) in zip(
                    new, encoder.encode_varints_many(new)):
                entries[text] = cache[text] = (entry(side, packed + eos), count + eos_count,
                                               count, oov, len(text))
        return entries

    def _encode_block(self, block: Block, split: str, ds_index: int, num_shards: int,
                      by_shard: Dict[int, List[FragmentEntry]], stats: List[int],
                      lengths: List[Tuple[int, int]]) -> None:
        """Encodes `block` ([(line number, source, target)] of valid pairs): each pair's
        record goes to `by_shard`, its counts to `stats` and `lengths`. (A line the
        vocabulary cannot encode fails the chunk here, after its block was read: a read
        error further on in the block is then reported first.)"""
        sources = self._entries(0, [source for _, source, _ in block])
        targets = self._entries(1, [target for _, _, target in block])
        join = self._examples.join
        key_of = shuffle_keys(self._seed, split, ds_index)
        src_known = [sources[source] for _, source, _ in block]
        tgt_known = [targets[target] for _, _, target in block]
        for side, known in enumerate((src_known, tgt_known)):
            # id count without EOS, OOV words, characters: summed per side
            stats[2 * side] += sum(k[2] for k in known)
            stats[2 * side + 1] += sum(k[3] for k in known)
            stats[4 + side] += sum(k[4] for k in known)
        lengths.extend(zip([k[1] for k in src_known], [k[1] for k in tgt_known]))
        for (number, _, _), src, tgt in zip(block, src_known, tgt_known):
            key = key_of(number)
            by_shard.setdefault(shard_of(key, num_shards), []).append(
                (key, ds_index, number, join(src[0], tgt[0])))

    def _lengths_only(self, block: Block) -> Tuple[List[Tuple[int, int]], List[int], List[int]]:
        """(pair lengths, [source, target] characters, [source, target] ids) of `block`
        ([(line number, source, target)]) as `_encode_block` counts them, nothing written:
        the pairs the cleaning stage dropped, for the lengths before cleaning."""
        sources = self._entries(0, [source for _, source, _ in block])
        targets = self._entries(1, [target for _, _, target in block])
        src_known = [sources[source] for _, source, _ in block]
        tgt_known = [targets[target] for _, _, target in block]
        return (list(zip([k[1] for k in src_known], [k[1] for k in tgt_known])),
                [sum(k[4] for k in src_known), sum(k[4] for k in tgt_known)],
                [sum(k[2] for k in src_known), sum(k[2] for k in tgt_known)])

    def _reject(self, chunk: Chunk, number: int, reason: str, source: str,
                target: str) -> RejectOut:
        ds = chunk["ds"]
        self._counters.inc("%s.rejected.%s" % (ds["split"], reason))
        return beam.pvalue.TaggedOutput(REJECTS, (ds["split"], reject_record(
            ds, number, "line %d" % number, reason, source, target)))

    def process(self, chunk: Chunk) -> Iterator[EncodeOut]:
        if chunk.get("unmatched"):
            yield from self._unmatched(chunk)
            return
        ds = chunk["ds"]
        split = ds["split"]
        src_path, tgt_path = chunk["source"], chunk["target"]
        first, count = chunk["first_line"], chunk["num_lines"]
        num_shards = self._num_shards[split]
        by_shard: Dict[int, List[FragmentEntry]] = {}  # shard -> [(key, dataset, line, record)]
        # source tokens, source OOV, target tokens, target OOV, source chars, target chars
        stats = [0, 0, 0, 0, 0, 0]
        lengths: List[Tuple[int, int]] = []  # (source, target) ids with EOS of each pair
        block: Block = []  # (line number, source, target) of the valid pairs not encoded yet
        dropped = self._dropped_lines(chunk)
        before = chunk.get("lengths_before")  # also count the pairs cleaning dropped
        cleaned_away: Block = []  # (line number, source, target) of those that would be written
        with file_io.open_text_source(src_path, self._stores, chunk["source_offset"]) as src, \
                file_io.open_text_source(tgt_path, self._stores, chunk["target_offset"]) as tgt:
            src_lines = iter_raw_lines(src)
            tgt_lines = iter_raw_lines(tgt)
            for i in range(count):
                number = first + i + 1  # 1-based line number
                raw_src = next(src_lines, None)
                raw_tgt = next(tgt_lines, None)
                if raw_src is None or raw_tgt is None:
                    raise ValueError("%s / %s: file changed while reading, line %d is missing"
                                     % (src_path, tgt_path, number))
                if dropped is not None and is_dropped(dropped, number):
                    # cleaned away: its reject is the cleaning stage's
                    if before:
                        source = decode_line(raw_src, src_path, number, self._on_invalid)
                        target = decode_line(raw_tgt, tgt_path, number, self._on_invalid)
                        if source is not None and target is not None and not \
                                pair_reject_reason(source.strip(), target.strip(),
                                                   self._max_chars):
                            cleaned_away.append((number, source.strip(), target.strip()))
                    continue
                source = decode_line(raw_src, src_path, number, self._on_invalid)
                target = decode_line(raw_tgt, tgt_path, number, self._on_invalid)
                if source is None or target is None:
                    yield self._reject(chunk, number, "invalid_utf8",
                                       decode_line(raw_src, src_path, number, "replace").strip(),
                                       decode_line(raw_tgt, tgt_path, number, "replace").strip())
                    continue
                source, target = source.strip(), target.strip()
                reason = pair_reject_reason(source, target, self._max_chars)
                if reason:
                    yield self._reject(chunk, number, reason, source, target)
                    continue
                block.append((number, source, target))
                if len(block) == BLOCK_PAIRS:
                    self._encode_block(block, split, ds["index"], num_shards, by_shard, stats,
                                       lengths)
                    block = []
        self._encode_block(block, split, ds["index"], num_shards, by_shard, stats, lengths)
        self._counters.inc(split + ".pairs_read", count)
        self._counters.inc(split + ".pairs_encoded", len(lengths))
        for shard, entries in sorted(by_shard.items()):
            path = FileSystems.join(self._fragment_dir,
                                    fragment_name(split, shard, ds["index"], first))
            write_fragment(path, entries, self._stores)
            report: FragmentReport = {"path": path, "records": len(entries),
                                      "by_dataset": [[ds["index"], len(entries)]]}
            yield (split, shard), report
        yield beam.pvalue.TaggedOutput(STATS, (split, stats[:4]))
        yield beam.pvalue.TaggedOutput(LENGTHS, (split, chunk_lengths(
            lengths, stats[4:], (stats[0], stats[2]))))
        if before:
            more, chars, ids = self._lengths_only(cleaned_away)
            yield beam.pvalue.TaggedOutput(LENGTHS, (split + BEFORE_CLEANING, chunk_lengths(
                lengths + more, [stats[4] + chars[0], stats[5] + chars[1]],
                (stats[0] + ids[0], stats[2] + ids[1]))))

    def _unmatched(self, chunk: Chunk) -> Iterator[RejectOut]:
        """Lines of the longer file of a misaligned pair (--on_misaligned reject)."""
        side = chunk["unmatched"]
        path = chunk["source"] if side == "source" else chunk["target"]
        with file_io.open_text_source(path, self._stores, chunk["offset"]) as f:
            lines = iter_raw_lines(f)
            for _ in range(chunk["skip"]):
                next(lines, None)
            read = 0
            for read, raw in enumerate(lines, 1):
                number = chunk["first_line"] + read
                text = decode_line(raw, path, number, "replace").strip()
                yield self._reject(chunk, number, "unmatched_%s_line" % side,
                                   text if side == "source" else "", text if side == "target" else "")
        self._counters.inc(chunk["ds"]["split"] + ".pairs_read", read)


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
    (split, `transforms.length_stats.chunk_lengths`), for `LengthReportFn`.

    `config`: the run's `transforms.config.DatagenConfig` (how lines are read and rejected,
    the vocabulary kind and its EOS token)."""

    def __init__(self, source_vocab_path: str, target_vocab_path: str, seed: int,
                 num_shards: Dict[str, int], fragment_dir: str, config: DatagenConfig) -> None:
        super().__init__()
        self._args = (source_vocab_path, target_vocab_path, seed, num_shards, fragment_dir,
                      config)

    @no_annotations  # Beam takes PCollection hints only here: the outputs' are `EncodeOut`
    def expand(self, chunks: beam.PCollection) -> DoOutputsTuple:
        fn = _EncodeChunkFn(*self._args, StoreSettings.from_options(chunks.pipeline.options))
        return (chunks
                | "Spread" >> beam.Reshuffle()
                | "Encode" >> beam.ParDo(fn).with_outputs(REJECTS, STATS, LENGTHS,
                                                              main="records"))
