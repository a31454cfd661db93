"""MaterializeDatasets: turn TSV, TMX, SGM, IWSLT XML and archived datasets into line pairs.

Each such dataset is read by one worker with the pure readers of `transforms.formats.corpus_formats`
and written as two line-aligned UTF-8 files (one segment per line) under the work directory,
so sampling and encoding treat every dataset alike. What cannot become a pair is written to a
rejects file with its position in the original file (`tu 5`, `doc 2455 seg 3`, `line 12`).
Segments are cleaned as T2T's line reader would see them: `\\r` removed, newlines inside a
segment (possible in XML) turned into spaces, then stripped; a pair with an empty side, or a
side longer than `max_line_chars`, is rejected here.

The vocabulary is sampled from the input as read, rejected pairs included (as T2T samples
the raw files, before its own cleaning, and as line-aligned files read in place are sampled):
each side's lines of rejected units go, with their position among that side's lines, to a
`.rejected` file beside the side's line file (`position<TAB>text` per line, written only when
there is one), and the sampler (`transforms.vocab.token_counts`) merges the two back into the
side's whole sequence. A side a unit does not have (a TMX unit missing it, a segment without
a partner, a TSV row without the column) adds no line to that side, as the shorter of two
misaligned line files has no line there; a unit that is not UTF-8 adds none to either.

Errors never escape as exceptions from inside Beam: a dataset that must stop the job (bad
XML, misaligned units with `on_misaligned=error`, invalid UTF-8 with `on_invalid_utf8=error`)
yields an `error` fact that the driver reports before anything is written.
"""

from typing import IO, Dict, Iterator, List, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from transforms.contracts.config import ReadConfig
from transforms.contracts.elements import (DatasetSpec, FileFacts, MaterializedDataset, Pair, Reject,
                                 Unit)
from transforms.formats import corpus_formats as formats
from transforms.reporting.job_metrics import JobCounters
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores, StoreSettings
from transforms.formats.rejects import pair_reject_reason, reject_line, reject_record
from transforms.formats.text_lines import (ByteStream, InputError, MarkCounter, decode_line,
                                           iter_raw_lines, text_marks)

# Reasons whose unit lacks a side: (has source, has target).
_SIDES = {"missing_source": (False, True), "missing_target": (True, False),
          "missing_source_and_target": (False, False),
          "unmatched_source_segment": (True, False), "unmatched_target_segment": (False, True),
          "unmatched_source_line": (True, False), "unmatched_target_line": (False, True),
          "invalid_utf8": (False, False)}

MISALIGNED = {"missing_source", "missing_target", "missing_source_and_target",
              "unmatched_source_segment",
              "unmatched_target_segment", "unmatched_source_line", "unmatched_target_line",
              "too_few_columns"}


def open_member(path: str) -> IO[bytes]:
    """Opens a file or an `archive!member` for binary reading; a member whose name ends in a
    compression suffix Beam knows (`.gz`, `.bz2`, `.deflate`, `.zst`, `.xz`, ...) is
    decompressed too, checked as a file is (`file_io.open_checked_decompressed`)."""
    outer, member = formats.split_archive_path(path)
    if member is None:
        return file_io.open_text_source(outer)
    stream = formats.open_archive_member(
        FileSystems.open(outer, compression_type=CompressionTypes.UNCOMPRESSED), outer, member)
    kind = CompressionTypes.detect_compression_type(member)
    if kind != CompressionTypes.UNCOMPRESSED:
        return file_io.open_checked_decompressed(stream, path, kind)
    return stream


def read_line_pairs(source_stream: ByteStream, source_path: str, target_stream: ByteStream,
                    target_path: str, on_invalid: str) -> Iterator[Unit]:
    """Line-aligned files as Pair/Reject, extra lines of the longer file as unmatched."""
    sources, targets = iter_raw_lines(source_stream), iter_raw_lines(target_stream)
    number = 0
    while True:
        raw_src, raw_tgt = next(sources, None), next(targets, None)
        if raw_src is None and raw_tgt is None:
            return
        number += 1
        where = "line %d" % number
        if raw_src is None or raw_tgt is None:
            if raw_tgt is not None:  # the source file has ended
                side, raw, path = "target", raw_tgt, target_path
            elif raw_src is not None:
                side, raw, path = "source", raw_src, source_path
            text = decode_line(raw, path, number, "replace")
            yield Reject(where, "unmatched_%s_line" % side,
                         text if side == "source" else "", text if side == "target" else "")
            continue
        src = decode_line(raw_src, source_path, number, on_invalid)
        tgt = decode_line(raw_tgt, target_path, number, on_invalid)
        if src is None or tgt is None:
            yield Reject(where, "invalid_utf8",
                         decode_line(raw_src, source_path, number, "replace"),
                         decode_line(raw_tgt, target_path, number, "replace"))
            continue
        yield Pair(src, tgt, where)


def clean_segment(text: str) -> str:
    return text.replace("\r", "").replace("\n", " ").strip()


class _SideWriter:
    """Writes one side's lines and records the seek points the encoder chunks at."""

    def __init__(self, path: str, chunk_lines: int, stores: ObjectStores) -> None:
        self.path = path
        # opened at the first line: an empty side is written empty at close
        self._f: Optional[IO[bytes]] = None
        self._stores = stores
        self._every = chunk_lines
        self.lines = 0
        self.bytes = 0
        self.checkpoints = [(0, 0)]
        # the `.rejected` file, opened at the first rejected line
        self._rejected: Optional[IO[bytes]] = None
        self.rejected_count = 0
        self.rejected_bytes = 0

    def write(self, text: str) -> None:
        data = (text + "\n").encode("utf-8")
        if self._f is None:
            self._f = FileSystems.create(self.path,
                                         compression_type=CompressionTypes.UNCOMPRESSED)
        self._f.write(data)
        self.lines += 1
        self.bytes += len(data)
        if self.lines % self._every == 0:
            self.checkpoints.append((self.lines, self.bytes))

    def close(self) -> FileFacts:
        if self._f is not None:
            self._f.close()
        else:  # Beam's S3 writer cannot make a 0-byte object; the store's client can
            file_io.write_bytes_atomically(self.path, b"", self._stores)
        if len(self.checkpoints) > 1 and self.checkpoints[-1][0] >= self.lines:
            self.checkpoints.pop()
        facts: FileFacts = {"bytes": self.bytes, "lines": self.lines,
                            "checkpoints": self.checkpoints, "first_invalid_utf8_line": None}
        if self._rejected is not None:
            self._rejected.close()
            facts["rejected_lines"] = self.path + ".rejected"
            facts["rejected_bytes"] = self.rejected_bytes
        return facts

    def sample_rejected(self, text: str) -> None:
        """A line of a rejected unit: not written for encoding, but part of this side's
        vocabulary sample at its position (after every line written or sampled so far)."""
        if self._rejected is None:
            self._rejected = FileSystems.create(self.path + ".rejected",
                                                compression_type=CompressionTypes.UNCOMPRESSED)
        data = (text + "\n").encode("utf-8")
        self._rejected.write(b"%d\t" % (self.lines + self.rejected_count) + data)
        self.rejected_count += 1
        self.rejected_bytes += len(data)


def _columns(ds: DatasetSpec, read: ReadConfig) -> Tuple[int, int]:
    """A TSV dataset's (source, target) columns: its corpus's, else the flags'."""
    return (ds.get("source_column", read.source_column),
            ds.get("target_column", read.target_column))


class _MaterializeFn(beam.DoFn):
    def __init__(self, work_dir: str, read: ReadConfig,
                 store_settings: Optional[StoreSettings] = None) -> None:
        self._dir = work_dir
        self._read = read
        self._store_settings = store_settings or StoreSettings()

    def setup(self) -> None:
        self._stores = ObjectStores(self._store_settings)
        self._counters = JobCounters()

    def _units(self, ds: DatasetSpec, streams: Sequence[ByteStream]) -> Iterator[Unit]:
        r = self._read
        if ds["format"] == "tsv":
            return formats.read_tsv(streams[0], ds["source"], *_columns(ds, r),
                                    r.on_invalid_utf8)
        if ds["format"] == "tmx":  # a corpus's own languages, else the flags'
            return formats.read_tmx(streams[0], ds["source"],
                                    ds.get("source_lang") or r.source_lang,
                                    ds.get("target_lang") or r.target_lang)
        if ds["format"] == "sgm":
            return formats.read_sgm_pair(streams[0], ds["source"], streams[1],
                                         ds["target"] or "", r.on_invalid_utf8)
        if ds["format"] == "iwslt":
            return formats.read_iwslt_xml_pair(streams[0], ds["source"], streams[1],
                                               ds["target"] or "", r.on_invalid_utf8)
        return read_line_pairs(streams[0], ds["source"], streams[1], ds["target"] or "",
                               r.on_invalid_utf8)

    def _sample_texts(self, ds: DatasetSpec, unit: Reject) -> Tuple[Optional[str], Optional[str]]:
        """(source, target) text a rejected unit adds to each side's vocabulary sample, None
        for a side it does not have."""
        if unit.reason == "too_few_columns":  # the row's text is its source; split it
            fields = unit.source.split("\t")
            source, target = (fields[c] if c < len(fields) else None
                              for c in _columns(ds, self._read))
            return source, target
        has_source, has_target = _SIDES.get(unit.reason, (True, True))
        return (unit.source if has_source else None, unit.target if has_target else None)

    def process(self, ds: DatasetSpec) -> Iterator[MaterializedDataset]:
        r = self._read
        base = FileSystems.join(self._dir, "%s-%03d" % (ds["split"], ds["index"]))
        paths = [ds["source"]] + ([ds["target"]] if ds["target"] else [])
        streams: Sequence[ByteStream] = []
        rejects: List[bytes] = []  # JSONL lines (texts truncated)
        by_reason: Dict[str, int] = {}

        def reject(ordinal: int, unit: Reject) -> None:
            by_reason[unit.reason] = by_reason.get(unit.reason, 0) + 1
            rejects.append(reject_line(reject_record(ds, ordinal, unit.where, unit.reason,
                                                     unit.source, unit.target)))

        units = 0
        try:
            streams = [open_member(p) for p in paths]
            counted: List[MarkCounter] = []
            if ds["format"] == "lines":  # read as T2T reads lines: say what that means
                streams = counted = [MarkCounter(stream) for stream in streams]
            src, tgt = (_SideWriter(base + suffix, r.encode_chunk_lines, self._stores)
                        for suffix in (".src", ".tgt"))
            for ordinal, unit in enumerate(self._units(ds, streams), 1):
                units += 1
                if isinstance(unit, Reject):
                    if unit.reason in MISALIGNED and r.on_misaligned == "error":
                        raise InputError(ds["source"], 0, "%s: %s (%s); --on_misaligned reject "
                                         "rejects such units instead" % (
                                             unit.where, unit.reason.replace("_", " "),
                                             ds["target"] or ds["source"]))
                    if unit.reason == "invalid_utf8" and r.on_invalid_utf8 == "error":
                        raise InputError(ds["source"], 0, "%s: invalid UTF-8" % unit.where)
                    reject(ordinal, unit)
                    for writer, text in zip((src, tgt), self._sample_texts(ds, unit)):
                        if text is not None:
                            writer.sample_rejected(clean_segment(text))
                    continue
                source, target = clean_segment(unit.source), clean_segment(unit.target)
                reason = pair_reject_reason(source, target, r.max_line_chars)
                if reason:
                    reject(ordinal, Reject(unit.where, reason, source, target))
                    src.sample_rejected(source)
                    tgt.sample_rejected(target)
                    continue
                src.write(source)
                tgt.write(target)
            facts = {"source": src.close(), "target": tgt.close()}
            if counted:
                for side, path, counter in zip(("source", "target"), paths, counted):
                    warnings = text_marks(path, counter.marks)
                    if warnings:
                        facts[side]["warnings"] = warnings
        except (formats.FormatError, InputError) as e:
            yield {"split": ds["split"], "index": ds["index"], "error": str(e)}
            return
        finally:
            for stream in streams:
                stream.close()
        rejects_path = base + ".rejects.jsonl"  # often empty: a 0-byte object on a store
        file_io.write_chunks(rejects_path, rejects, self._stores)
        # The encode pass counts the units it reads back; the ones rejected here are read
        # and rejected too, in the counters as in the books (`pipeline.output.books`).
        self._counters.inc(ds["split"] + ".pairs_read", sum(by_reason.values()))
        for reason, n in by_reason.items():
            self._counters.inc("%s.rejected.%s" % (ds["split"], reason), n)
        yield {"split": ds["split"], "index": ds["index"], "units": units,
               "source_path": base + ".src", "target_path": base + ".tgt", "facts": facts,
               "rejected_by_reason": by_reason, "rejects_path": rejects_path}


class MaterializeDatasets(beam.PTransform):
    """Dataset dicts -> one fact dict per dataset (files written, or an error).

    `read`: the run's `transforms.contracts.config.ReadConfig` (columns, languages, what to reject,
    seek points every `encode_chunk_lines` lines)."""

    def __init__(self, work_dir: str, read: ReadConfig) -> None:
        super().__init__()
        self._work_dir = work_dir
        self._read = read

    def expand(self, datasets: beam.PCollection[DatasetSpec]
               ) -> beam.PCollection[MaterializedDataset]:
        fn = _MaterializeFn(self._work_dir, self._read,
                            StoreSettings.from_options(datasets.pipeline.options))
        return datasets | "Spread" >> beam.Reshuffle() | "Materialize" >> beam.ParDo(fn)
