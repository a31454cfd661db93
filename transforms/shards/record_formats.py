"""Record formats of the shards: one adapter per `--output_format`, and the one object that
names shards.

Modelled on TFDS's `FileFormat` and its file adapters: the job makes format-neutral records
(each the serialized `tf.train.Example` of one pair, `transforms.formats.example_proto`),
puts them in shard order, and hands them to the run's `RecordFormat`, which writes them as a
shard file, reads a shard back as the same records, and gives its names (`ShardNames`). No
other module knows a container: the shard writer, the commit, the own-outputs check, the
reader and `inspect` all go through this module (the base, `RecordFormat`, is in
`format_base`, the text adapter in `text_format`: named here too).

- `tfrecord` (the default): TFRecord framing around each record, today's bytes exactly.
- `array_record`: the same Example bytes, one ArrayRecord record each, one record per chunk
  as Grain requires (`ARRAY_RECORD_OPTIONS`: see there why).
- `parquet`: one row per record, the Example's int64 lists as `list<int32>` columns named as
  the features (`inputs`, `targets`; with --packed_length also the four segmentation and
  position features), zstd, row groups of `PARQUET_ROW_GROUP_ROWS` rows.
- `fairseq`: each side's ids as int32 (`transforms.formats.fairseq_bin`), which the commit
  turns into fairseq's data-bin (`pipeline.output.fairseq_data`).
- `text`, `text.gz`: the pairs' text, a file a side ending with its language (`.en`, `.zh`):
  `transforms.shards.text_format`, whose names need the languages (`ShardNames.langs`,
  `parse_shard_name`'s `langs`).

Adding a format: one `RecordFormat` subclass here, added to `FORMATS`; its name is then a
value of `--output_format` (docs/design.md, "Record formats").
"""

import abc
import contextlib
import itertools
import os
import re
import tempfile
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from transforms.formats.example_proto import PAIR_FEATURE, Int64FeaturesWriter
from transforms.formats.tfrecord_framing import framed_chunks, read_records
from transforms.shards.format_base import (COPY_BYTES, DEFAULT_LANGS, FEATURES, SCRATCH_PREFIX,
                                           RecordFormat, local_copy, summed)
from transforms.shards.format_base import file_io_module as _file_io
from transforms.shards.text_format import GzipTextFormat, TextFormat, text_langs
from transforms.storage import paths

if TYPE_CHECKING:
    from transforms.storage.object_stores import ObjectStores

PARQUET_ROW_GROUP_ROWS = 8192     # ~2 MB of ids per group: one group in memory per read step
# One record per chunk (`group_size:1`), as Grain requires: its ArrayRecordDataSource logs an
# ERROR per shard of any other group size ("Grain requires group size 1 ... re-generate"),
# and TFDS and array_record's own Beam sinks write 1. Uncompressed: a record is ~130 bytes of
# varint ids, on which a chunk's own zstd frame costs more than it saves. On the first
# 100,000 bench pairs (10 shards; TFRecord 14.8 MB): group_size:1 uncompressed 19.6 MB,
# zstd:3 21.0 MB; group_size:16 zstd:3 12.4 MB, but with Grain's ERROR lines; Grain's
# shuffled epoch took the same time with 1 and 16 (benchmarks/README.md, "ArrayRecord").
# Every ArrayRecord file ends with its footer padded to a 64 KiB block and a 64 KiB
# postscript block (the reader finds the postscript at size - 64 KiB; array_record pads both
# whatever the options say), so a shard is a multiple of 64 KiB and at least 128 KiB.
ARRAY_RECORD_OPTIONS = "group_size:1,uncompressed"


class TFRecordFormat(RecordFormat):
    name, suffix = "tfrecord", ""

    def write_shard(self, path: str, records: Iterable[bytes],
                    stores: Optional["ObjectStores"] = None,
                    checksum: Optional[Any] = None,
                    features: Sequence[str] = FEATURES) -> Tuple[int, int]:
        counted = [0]
        _, size = _file_io().write_chunks(
            path, summed(framed_chunks(records, counted), checksum), stores)
        return counted[0], size

    def read_shard(self, path: str, stores: Optional["ObjectStores"] = None) -> Iterator[bytes]:
        # a local shard with `open`: a reader in a trainer's process imports no Beam for it
        with (open(path, "rb") if paths.is_local(path)
              else _file_io().open_for_read(path, stores)) as f:
            yield from read_records(f)



class _LocalFileFormat(RecordFormat):
    """A format whose library writes and reads local files.

    A shard on this machine's disk (the job's work directory, local) is built beside its
    final name under a temporary name of its own, and moved into place when whole
    (`file_io.create_atomically`'s way): an interrupted or killed pass leaves it only in
    the work directory, which every end of a run removes (and a rerun, after a kill -9).
    A shard for an object store is built in a scratch directory of the system's temporary
    directory named after the writing process (`SCRATCH_PREFIX`), then copied up with
    `file_io.write_chunks` (so object stores, the atomic write and a retried bundle behave
    as for TFRecord); the driver removes the scratch of processes that are gone. Read from a
    local copy."""

    @abc.abstractmethod
    def _write_local(self, local_path: str, records: Iterable[bytes],
                     features: Sequence[str]) -> int:
        """Writes the file; returns the number of records."""

    @abc.abstractmethod
    def _read_local(self, local_path: str) -> Iterator[bytes]:
        """The records of a local file."""

    def write_shard(self, path: str, records: Iterable[bytes],
                    stores: Optional["ObjectStores"] = None,
                    checksum: Optional[Any] = None,
                    features: Sequence[str] = FEATURES) -> Tuple[int, int]:
        if _file_io().is_local(path):
            return self._write_beside(path, records, checksum, features)
        with tempfile.TemporaryDirectory(prefix="%s%d-" % (SCRATCH_PREFIX, os.getpid())) as tmp:
            local = os.path.join(tmp, "shard" + self.suffix)
            count = self._write_local(local, records, features)
            with open(local, "rb") as f:
                _, size = _file_io().write_chunks(
                    path, summed(iter(lambda: f.read(COPY_BYTES), b""), checksum), stores)
        return count, size

    def _write_beside(self, path: str, records: Iterable[bytes], checksum: Optional[Any],
                      features: Sequence[str]) -> Tuple[int, int]:
        """A local shard: written under a temporary name beside `path`, summed as written to
        disk, then moved into place (nothing to copy)."""
        tmp = _file_io().temporary_name(path)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        try:
            count = self._write_local(tmp, records, features)
            size = 0
            with open(tmp, "rb") as f:
                for chunk in summed(iter(lambda: f.read(COPY_BYTES), b""), checksum):
                    size += len(chunk)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        return count, size

    def read_shard(self, path: str, stores: Optional["ObjectStores"] = None) -> Iterator[bytes]:
        with local_copy(path, stores) as local:
            yield from self._read_local(local)



class ArrayRecordFormat(_LocalFileFormat):
    name, suffix = "array_record", ".array_record"

    def _write_local(self, local_path: str, records: Iterable[bytes],
                     features: Sequence[str]) -> int:
        from array_record.python.array_record_module import ArrayRecordWriter
        writer = ArrayRecordWriter(local_path, ARRAY_RECORD_OPTIONS)
        count = 0
        try:
            for record in records:
                writer.write(bytes(record))
                count += 1
        finally:
            writer.close()
        return count

    def _read_local(self, local_path: str) -> Iterator[bytes]:
        from array_record.python.array_record_module import ArrayRecordReader
        reader = ArrayRecordReader(local_path)
        try:
            for start in range(0, reader.num_records(), 1024):
                yield from reader.read(list(range(start, min(start + 1024,
                                                             reader.num_records()))))
        finally:
            reader.close()


class ParquetFormat(_LocalFileFormat):
    name, suffix = "parquet", ".parquet"

    @staticmethod
    def schema(features: Sequence[str] = FEATURES, with_pair: bool = False) -> "object":
        """`features` as list<int32> columns (and with several language pairs `lang_pair`,
        a string)."""
        import pyarrow as pa
        return pa.schema([(name, pa.list_(pa.int32())) for name in features]
                         + ([(PAIR_FEATURE, pa.string())] if with_pair else []))

    def _write_local(self, local_path: str, records: Iterable[bytes],
                     features: Sequence[str]) -> int:
        import pyarrow as pa
        import pyarrow.parquet as pq
        examples = Int64FeaturesWriter()
        records = iter(records)
        first = next(records, None)  # records carry a language pair, or none of them does
        with_pair = first is not None and PAIR_FEATURE in examples.parse_all(bytes(first))
        if first is not None:
            records = itertools.chain([first], records)
        names = tuple(features) + ((PAIR_FEATURE,) if with_pair else ())
        schema = self.schema(features, with_pair)
        count = 0
        with pq.ParquetWriter(local_path, schema, compression="zstd") as writer:
            columns: Dict[str, List[Any]] = {name: [] for name in names}

            def flush() -> None:
                writer.write_table(pa.table(columns, schema=schema),
                                   row_group_size=PARQUET_ROW_GROUP_ROWS)
                for values in columns.values():
                    values.clear()

            for record in records:
                values = examples.parse_all(bytes(record))
                for name in features:
                    columns[name].append(values.get(name, []))
                if with_pair:
                    columns[PAIR_FEATURE].append(values[PAIR_FEATURE].decode("utf-8"))
                count += 1
                if count % PARQUET_ROW_GROUP_ROWS == 0:
                    flush()
            if count % PARQUET_ROW_GROUP_ROWS or not count:
                flush()
        return count

    def _read_local(self, local_path: str) -> Iterator[bytes]:
        import pyarrow.parquet as pq
        examples = Int64FeaturesWriter()
        shard = pq.ParquetFile(local_path)
        features = shard.schema_arrow.names  # the columns written: every feature
        for batch in shard.iter_batches(columns=features):
            columns = [batch.column(name).to_pylist() for name in features]
            for row in zip(*columns):
                values: Dict[str, Any] = dict(zip(features, row))
                if PAIR_FEATURE in values:  # a string column: the record's bytes feature
                    values[PAIR_FEATURE] = values[PAIR_FEATURE].encode("utf-8")
                yield examples.serialize(values)


class FairseqFormat(_LocalFileFormat):
    """The job's `.fairseq` shards (`transforms.formats.fairseq_bin`): each side's ids as
    int32, from which the commit assembles fairseq's data-bin (`pipeline.output.fairseq_data`).
    Records are read back as inputs and targets only (a pair's own shards name the pair)."""

    name, suffix = "fairseq", ".fairseq"

    def _write_local(self, local_path: str, records: Iterable[bytes],
                     features: Sequence[str]) -> int:
        from transforms.formats import fairseq_bin
        if tuple(features) != tuple(FEATURES):
            raise ValueError("--output_format fairseq writes one pair per record")
        examples = Int64FeaturesWriter()

        def pairs() -> Iterator[Tuple[List[int], List[int]]]:
            for record in records:
                values = examples.parse_all(bytes(record))
                yield values.get("inputs", []), values.get("targets", [])

        with open(local_path, "wb") as out:
            return fairseq_bin.write_shard(out, pairs())

    def _read_local(self, local_path: str) -> Iterator[bytes]:
        from transforms.formats import fairseq_bin
        examples = Int64FeaturesWriter()
        with open(local_path, "rb") as f:
            data = f.read()
        for values in fairseq_bin.shard_pairs(data):
            yield examples.serialize(values)


FORMATS: Dict[str, RecordFormat] = {f.name: f for f in (
    TFRecordFormat(), ArrayRecordFormat(), ParquetFormat(), FairseqFormat(), TextFormat(),
    GzipTextFormat())}
TEXT_FORMATS = tuple(name for name, f in FORMATS.items() if isinstance(f, TextFormat))
SPLITS = ("train", "dev")  # the splits a job writes, each with its own shards
FORMAT_NAMES = tuple(sorted(FORMATS))  # --output_format's choices
DEFAULT_FORMAT = "tfrecord"  # --output_format's default, and older outputs' format


def record_format(name: str) -> RecordFormat:
    """The adapter of `--output_format name` (KeyError names the known ones)."""
    try:
        return FORMATS[name]
    except KeyError:
        raise KeyError("unknown output format %r (known: %s)"
                       % (name, ", ".join(sorted(FORMATS)))) from None


Langs = Sequence[str]  # a (source, target) pair of language codes
# The suffix of each format with fixed names (every format but the text ones, whose names
# end with the languages: `transforms.shards.text_format`), longest first.
_FIXED_SUFFIXES = {f.suffix: f for f in FORMATS.values() if not isinstance(f, TextFormat)}
_SUFFIXES = "|".join(re.escape(s) for s in sorted(_FIXED_SUFFIXES, key=len, reverse=True)
                     if s)
_STEM = r"(?P<problem>.+)-(?P<split>[^-/]+)-(?P<shard>\d{5})-of-(?P<n>\d{5})"
SHARD_NAME = re.compile(_STEM + r"(?P<suffix>%s)?\Z" % _SUFFIXES)
_TEXT_NAME = re.compile(_STEM + r"\.(?P<lang>[^/]+?)(?P<gz>\.gz)?\Z")
# What `_OWN_NAMES` (pipeline.output.own_outputs) matches as a shard: any format's, a text
# shard's in any language (never read as an input; deleting asks `parse_shard_name`).
SHARD_NAME_PATTERN = r".+-(train|dev)-\d{5}-of-\d{5}(%s|\.[^/]+)?" % _SUFFIXES


def parse_shard_name(name: str, langs: Optional[Iterable[Langs]] = None
                     ) -> Optional[Tuple[str, str, int, int, RecordFormat]]:
    """(problem, split, shard, shards, its RecordFormat) of a shard's base name in any
    format, or None for another name. A text shard's file ends with a language: its pair's
    for a pair's own shard (the name holds the pair), else one of `langs` (the one-pair
    output's (source, target) languages; `src` and `tgt` always). With `langs` None (the
    output's languages unknown), any ending is taken for a text shard's, bound to no
    languages unless it is `src` or `tgt` (its format, not its files: `TextFormat.files`)."""
    m = SHARD_NAME.match(name)
    if m:
        fmt: Optional[RecordFormat] = _FIXED_SUFFIXES[m["suffix"] or ""]
    else:
        m = _TEXT_NAME.match(name)
        fmt = m and _text_format(m["lang"], bool(m["gz"]), m["problem"], langs)
    if not m or fmt is None:
        return None
    return m["problem"], m["split"], int(m["shard"]), int(m["n"]), fmt


def _text_format(lang: str, gz: bool, head: str, langs: Optional[Iterable[Langs]]
                 ) -> Optional[RecordFormat]:
    """The text format, bound to its languages, of a shard file ending with `lang`."""
    base = FORMATS[GzipTextFormat.name if gz else TextFormat.name]
    pair = head.split(PAIR_SEPARATOR, 1)[1] if PAIR_SEPARATOR in head else None
    candidates = [pair_languages(pair)] if pair else [DEFAULT_LANGS, *(langs or ())]
    for candidate in candidates:
        if lang in text_langs(candidate):
            return base.for_langs(candidate)
    return base.for_langs(None) if langs is None and not pair else None


def format_of(path: str, langs: Optional[Iterable[Langs]] = None) -> RecordFormat:
    """The format of a shard path (from its suffix; a name that is no datagen shard's is
    read as TFRecord, as before formats existed). `langs`: as `parse_shard_name`'s (a
    reader's, from the output's summary: `pipeline.output.complete_check.summary_languages`)."""
    parsed = parse_shard_name(path.rstrip("/").rsplit("/", 1)[-1], langs)
    return parsed[4] if parsed else FORMATS[DEFAULT_FORMAT]


# Between the problem and a language pair in a pair's own shard names: a character no
# problem name or language code may hold (`pipeline.output.names`), so that no problem's
# shards can be named as another's pair shards (with "-", problem `p`'s pair en-de and
# problem `p-en-de` both wrote `p-en-de-train-00000-of-00001`).
PAIR_SEPARATOR = "~"


def problem_of_head(head: str) -> str:
    """The problem of a shard name's head (`parse_shard_name`'s first item): the head, or
    the part before PAIR_SEPARATOR for a language pair's own shards."""
    return head.split(PAIR_SEPARATOR, 1)[0]


def pair_languages(pair: str) -> Tuple[str, str]:
    """(source, target) of a language pair's name `{src}-{tgt}` (at its first `-`: the
    corpora file refuses two pairs of one name, `pipeline.driver.corpora`)."""
    src, _, tgt = pair.partition("-")
    return src, tgt


class ShardNames:
    """The shard names of one problem in one format: the only place a shard is named. With
    several language pairs, a pair's own shards carry it after the problem and
    PAIR_SEPARATOR: `{problem}~{src}-{tgt}-{split}-00000-of-00002`. `langs`: the (source,
    target) languages of a one-pair output, which a text shard's files end with."""

    def __init__(self, problem: str, fmt: RecordFormat, langs: Langs = DEFAULT_LANGS) -> None:
        self.problem = problem
        self.format = fmt
        self.langs = tuple(langs)

    def head(self, pair: Optional[str] = None) -> str:
        """What a shard name starts with: the problem (T2T's), or `{problem}~{pair}`."""
        return "%s%s%s" % (self.problem, PAIR_SEPARATOR, pair) if pair else self.problem

    def format_of_pair(self, pair: Optional[str] = None) -> RecordFormat:
        """The format bound to the pair's languages (`pair` None: the one pair's)."""
        return self.format.for_langs(pair_languages(pair) if pair else self.langs)

    def name(self, split: str, shard: int, num_shards: int, pair: Optional[str] = None) -> str:
        """T2T's `{problem}-{split}-00000-of-00010` (`{problem}~{pair}-{split}-...` for a
        language pair's own shards), then the format's suffix."""
        return "%s-%s-%05d-of-%05d%s" % (self.head(pair), split, shard, num_shards,
                                         self.format_of_pair(pair).suffix)

    def files(self, name: str) -> Tuple[str, ...]:
        """The files of shard `name` (as `name` or a path): a text shard's two."""
        parsed = parse_shard_name(name.rstrip("/").rsplit("/", 1)[-1], [self.langs])
        return (parsed[4] if parsed else self.format).files(name)

    def glob(self, split: str, pair: Optional[str] = None) -> str:
        """A glob of the split's shards in every format (a reader's `{problem}-train*`);
        with `pair` "*", those of every pair."""
        return "%s-%s-*" % (self.head(pair), split)

    def is_shard(self, name: str, split: str, pairs: Iterable[str] = (),
                 langs: Optional[Iterable[Langs]] = None) -> bool:
        """Whether base name `name` is a shard of this problem's `split`, in any format (a run
        replaces them all: switching formats leaves no shards of the old one), or one of
        `pairs`' own shards; a one-pair text shard's in one of `langs` (None: any)."""
        parsed = parse_shard_name(name, langs)
        heads = {self.problem} | {self.head(pair) for pair in pairs}
        return bool(parsed and parsed[0] in heads and parsed[1] == split
                    and split in SPLITS)
