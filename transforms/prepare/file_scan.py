"""ScanTextFiles: line counts, sizes, seek points and UTF-8 validity of every input file.

The driver checks these facts before anything is written (a source/target pair with different
line counts is an error), the vocab sampler needs each file's size (T2T's sampling stride
depends on it), and the encoder splits files at the seek points to read them in parallel.

A file over `RANGE_BYTES` is scanned in byte ranges of that size, each a work item any worker
takes (`transforms.formats.line_ranges`: the ranges' facts add up to one scan's): one task
reading a 1B-line file would be a serial floor of 15-25 minutes. Its seek points need each
range's first line number, known once every range before it is counted, so the ranges after
the first are read a second time, in parallel too, for their seek points only (a second read
of the bytes; a file's lines are not known before the first). A compressed file cannot seek
and is read whole, as is a file no larger than a range; when the driver knows that no file
is larger (`range_bytes` None), the pass has no range stages at all.
"""

from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

import apache_beam as beam

from transforms.contracts.elements import FileFacts, ScannedFile

from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores, StoreSettings
from transforms.formats.line_ranges import merge_range_scans, scan_range
from transforms.formats.text_lines import InputError, scan_stream, text_marks

RANGE_BYTES = 64 << 20  # a file larger than this is scanned in ranges of this many bytes
Range = Tuple[str, int, int, int, int]  # (path, index, ranges of the file, start, end)
LOCATE = "locate"  # the Merge step's output of the ranges to read again for seek points


class _ScanFileFn(beam.DoFn):
    """path -> (path, facts); a file that cannot be read whole (a truncated or corrupt
    `.gz`/`.bz2`) gives facts with an `error` the driver reports before anything is written,
    rather than an exception that fails the pipeline with a worker's traceback."""

    def __init__(self, chunk_lines: int, store_settings: StoreSettings) -> None:
        self._every = chunk_lines
        self._store_settings = store_settings

    def setup(self) -> None:
        self._stores = ObjectStores(self._store_settings)

    def process(self, path: str) -> Iterator[ScannedFile]:
        marks: Dict[str, int] = {}
        try:
            with file_io.open_text_source(path, self._stores) as f:
                num_bytes, num_lines, checkpoints, first_invalid = scan_stream(
                    f, self._every, marks)
        except InputError as e:
            yield path, {"error": str(e)}
            return
        except (FileNotFoundError, PermissionError, IsADirectoryError) as e:
            # listed when the job started, gone or unreadable now (moved, rotated away)
            yield path, {"error": "%s: cannot be read (%s)" % (path, e.strerror or e)}
            return
        if file_io.is_compressed(path):
            checkpoints = checkpoints[:1]  # a compressed stream cannot seek: read it whole
        facts: FileFacts = {"bytes": num_bytes, "lines": num_lines, "checkpoints": checkpoints,
                 "first_invalid_utf8_line": first_invalid}
        warnings = text_marks(path, marks)
        if warnings:
            facts["warnings"] = warnings
        yield path, facts


def _unreadable(path: str, e: BaseException) -> Dict[str, str]:
    if isinstance(e, InputError):
        return {"error": str(e)}
    return {"error": "%s: cannot be read (%s)" % (path, getattr(e, "strerror", None) or e)}


class _PlanRangesFn(beam.DoFn):
    """path -> its ranges (path, index, count, start, end): one for a compressed file, a file
    of at most `range_bytes` or one that cannot be sized now (its scan says why)."""

    def __init__(self, range_bytes: int, store_settings: StoreSettings) -> None:
        self._range_bytes = range_bytes
        self._store_settings = store_settings

    def setup(self) -> None:
        self._stores = ObjectStores(self._store_settings)

    def process(self, path: str) -> Iterator[Range]:
        size = 0
        if not file_io.is_compressed(path):
            try:
                size = sum(m[1] for m in file_io.match_files(file_io.glob_literal(path),
                                                             self._stores) if m[0] == path)
            except Exception:  # gone or unreadable now: the whole-file scan reports it
                size = 0
        count = max(1, -(-size // self._range_bytes))
        for index in range(count):
            yield path, index, count, index * self._range_bytes, (
                size if index == count - 1 else (index + 1) * self._range_bytes)


class _ScanRangeFn(beam.DoFn):
    """(a range of a file of several, its first line or None) -> (path, (index, scan or
    {"error"}, marks, start, end)); the scan has the range's seek points when its first line
    is known (the first range's always; the others' when `LOCATE`d)."""

    def __init__(self, chunk_lines: int, store_settings: StoreSettings) -> None:
        self._every = chunk_lines
        self._store_settings = store_settings

    def setup(self) -> None:
        self._stores = ObjectStores(self._store_settings)

    def process(self, item: Tuple[Range, Any]) -> Iterator[Tuple[str, tuple]]:
        (path, index, _, start, end), first_line = item
        marks: Dict[str, int] = {}
        try:
            with file_io.open_text_source(path, self._stores, max(0, start - 1)) as f:
                scan = scan_range(f, start, end, self._every,
                                  0 if index == 0 else first_line, marks)
        except (InputError, FileNotFoundError, PermissionError, IsADirectoryError) as e:
            yield path, (index, _unreadable(path, e), marks, start, end)
            return
        yield path, (index, scan, marks, start, end)


def _merge_counts(item: Tuple[str, Iterable[tuple]]) -> Iterator[Any]:
    """A file's counted ranges -> its facts but for the seek points after the first range
    (path, (-1, facts, ...)), and each later range with its first line to `LOCATE`."""
    path, parts = item
    ranges = sorted(parts, key=lambda part: part[0])
    errors = [part[1] for part in ranges if isinstance(part[1], dict)]
    if errors:
        yield path, (-1, errors[0], None, 0, 0)
        return
    num_bytes, num_lines, checkpoints, first_invalid = merge_range_scans(
        [part[1] for part in ranges])
    marks: Dict[str, int] = dict(ranges[0][2])
    for part in ranges[1:]:
        marks["lone_cr"] += part[2]["lone_cr"]
        marks["nul"] += part[2]["nul"]
    facts: Dict[str, Any] = {"bytes": num_bytes, "lines": num_lines,
                             "checkpoints": checkpoints, "first_invalid_utf8_line": first_invalid}
    warnings = text_marks(path, marks)
    if warnings:
        facts["warnings"] = warnings
    yield path, (-1, facts, None, 0, 0)
    first = 0
    for index, scan, _, start, end in ranges:
        if index > 0:
            yield beam.pvalue.TaggedOutput(LOCATE, ((path, index, len(ranges), start, end),
                                                    first))
        first += scan[0]


def _finish(item: Tuple[str, Iterable[tuple]]) -> ScannedFile:
    """A file's facts and its later ranges' seek points -> (path, facts)."""
    path, parts = item
    facts: Dict[str, Any] = {}
    points: List[Tuple[int, int]] = []
    for index, value, _, _, _ in parts:
        if index < 0:
            facts = dict(value)
        elif not isinstance(value, dict):
            points.extend(value[3])
    if "checkpoints" in facts:
        checkpoints = sorted(set(facts["checkpoints"]) | set(points))
        if len(checkpoints) > 1 and checkpoints[-1][0] >= facts["lines"]:
            checkpoints.pop()
        facts["checkpoints"] = checkpoints
    return path, facts  # type: ignore[return-value]


class ScanTextFiles(beam.PTransform):
    """paths -> (path, facts) for each file, each file (or range of `range_bytes` of a big
    one) scanned by one worker in parallel; a seek point every `chunk_lines` lines
    (--encode_chunk_lines: the encode chunks start there)."""

    def __init__(self, chunk_lines: int, range_bytes: Optional[int] = RANGE_BYTES) -> None:
        super().__init__()
        self._every = chunk_lines
        self._range_bytes = range_bytes  # None: every file whole (none is bigger)

    def expand(self, paths: beam.PCollection[str]) -> beam.PCollection[ScannedFile]:
        settings = StoreSettings.from_options(paths.pipeline.options)
        if self._range_bytes is None:  # a pipeline's stages cost a small job's time
            return (paths | "Spread" >> beam.Reshuffle()
                    | "Scan" >> beam.ParDo(_ScanFileFn(self._every, settings)))
        ranges = (paths
                  | "Ranges" >> beam.ParDo(_PlanRangesFn(self._range_bytes, settings))
                  | "Spread" >> beam.Reshuffle())
        whole = (ranges | "Whole" >> beam.FlatMap(lambda r: [r[0]] if r[2] == 1 else [])
                 | "Scan" >> beam.ParDo(_ScanFileFn(self._every, settings)))
        counted = (ranges | "Parted" >> beam.Filter(lambda r: r[2] > 1)
                   | "WithoutFirst" >> beam.Map(lambda r: (r, None))
                   | "ScanRanges" >> beam.ParDo(_ScanRangeFn(self._every, settings))
                   | "ByFile" >> beam.GroupByKey()
                   | "Merge" >> beam.FlatMap(_merge_counts).with_outputs(LOCATE, main="facts"))
        located = (counted[LOCATE] | "SpreadLocate" >> beam.Reshuffle()
                   | "Locate" >> beam.ParDo(_ScanRangeFn(self._every, settings)))
        parted = ((counted.facts, located) | "Both" >> beam.Flatten()
                  | "Gather" >> beam.GroupByKey() | "Finish" >> beam.Map(_finish))
        return (whole, parted) | "Scanned" >> beam.Flatten()
