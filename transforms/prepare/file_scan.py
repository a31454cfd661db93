"""ScanTextFiles: line counts, sizes, seek points and UTF-8 validity of every input file.

The driver checks these facts before anything is written (a source/target pair with different
line counts is an error), the vocab sampler needs each file's size (T2T's sampling stride
depends on it), and the encoder splits files at the seek points to read them in parallel.
"""

from typing import Dict, Iterator

import apache_beam as beam

from transforms.contracts.elements import FileFacts, ScannedFile

from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores, StoreSettings
from transforms.formats.text_lines import InputError, scan_stream, text_marks


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


class ScanTextFiles(beam.PTransform):
    """paths -> (path, facts) for each file, each file scanned by one worker in parallel;
    a seek point every `chunk_lines` lines (--encode_chunk_lines: the encode chunks start
    there)."""

    def __init__(self, chunk_lines: int) -> None:
        super().__init__()
        self._every = chunk_lines

    def expand(self, paths: beam.PCollection[str]) -> beam.PCollection[ScannedFile]:
        return (paths
                | "Spread" >> beam.Reshuffle()
                | "Scan" >> beam.ParDo(_ScanFileFn(
                    self._every, StoreSettings.from_options(paths.pipeline.options))))
