"""Whether an output marked complete still is: every file its summary names is there, and
every shard is the file the run wrote.

A rerun over `{problem}.DATAGEN_COMPLETE` of the same inputs and flags does nothing; but a
shard deleted by hand, or cut short at a record boundary by a partial copy or sync, would
leave a marker over missing pairs, and readers and the rerun would take it as whole. The
summary lists every shard with its record count, byte size and the crc32c of the whole file
(summed as the shard was written: `transforms.encode.shuffled_shards`), and the rejects file and
vocab files the run wrote.

- `shard_mismatches` compares the shards with that record: by default one listing of the
  output directory (each shard there, at its recorded size); with `full=True` each shard is
  also read once, its crc32c and record count compared. `inspect`, the reader's
  `complete_output_files` and reruns use it. A summary written before sizes were recorded
  gets the names checked only, as before.
- `missing_outputs` (reruns): the files gone or not as recorded, each with what is wrong; the
  rerun redoes the output. Files are looked for under the output directory where it is now
  (`here`), so an output moved or copied as a whole is complete where it lands.
"""

from typing import TYPE_CHECKING, Any, Dict, IO, Iterator, List, Optional, Tuple

import google_crc32c

from transforms.formats.tfrecord_framing import CorruptRecordError, read_records
from pipeline.output.layout import summary_languages
from transforms.shards.format_base import RecordFormat
from transforms.shards.record_formats import format_of
from transforms.storage import paths

if TYPE_CHECKING:
    from pipeline.output.layout import OutputLayout
    from transforms.storage.object_stores import ObjectStores

_CHUNK = 1 << 20
def shards_of(summary: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
    """Every shard entry of the summary ({name, records[, bytes, crc32c]}), split by split."""
    for _, split in sorted((summary.get("splits") or {}).items()):
        yield from split.get("shards") or []


def listed_sizes(output_dir: str, stores: Optional["ObjectStores"] = None) -> Dict[str, int]:
    """{base name: size} of the files directly in `output_dir`, from one listing (on an
    object store through `stores`' client when given, else Beam's FileSystems)."""
    from transforms.storage import file_io
    prefix = output_dir.rstrip("/") + "/"
    found = file_io.match_files(paths.join(file_io.glob_literal(output_dir), "*"), stores)
    return {path[len(prefix):]: size for path, size, _ in found
            if path.startswith(prefix) and "/" not in path[len(prefix):]}


class _Summing:
    """A read-only stream that sums the crc32c and size of every byte read through it."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self.checksum = google_crc32c.Checksum()
        self.size = 0

    def read(self, size: int = -1, /) -> bytes:
        data = self._stream.read(size)
        self.checksum.update(data)
        self.size += len(data)
        return data

    def close(self) -> None:  # the stream it reads is closed by its opener
        pass


def _read_whole(path: str, stores: Optional["ObjectStores"], fmt: RecordFormat
                ) -> Tuple[Optional[int], str, int]:
    """(records, or None when the file cannot be read as its format `fmt`; crc32c; size): one
    read for TFRecord shards, two for the other formats (the bytes, then their library's
    reader)."""
    from transforms.storage import file_io
    if fmt.name != "tfrecord":
        checksum, size = google_crc32c.Checksum(), 0
        for name in fmt.files(path):  # a text shard's two files, in order
            with file_io.open_for_read(name, stores) as f:
                for data in iter(lambda: f.read(_CHUNK), b""):
                    checksum.update(data)
                    size += len(data)
        try:
            records: Optional[int] = sum(1 for _ in fmt.read_shard(path, stores))
        except Exception:  # not readable as its format: the crc32c says what changed
            records = None
        return records, checksum.hexdigest().decode("ascii"), size
    with file_io.open_for_read(path, stores) as f:
        summing = _Summing(f)
        try:
            count: int = sum(1 for _ in read_records(summing))
            records = count
        except CorruptRecordError:
            records = None
        while summing.read(_CHUNK):  # the rest, after a framing error
            pass
    return records, summing.checksum.hexdigest().decode("ascii"), summing.size


def shard_mismatches(output_dir: str, summary: Dict[str, Any],
                     stores: Optional["ObjectStores"] = None, full: bool = False,
                     listed: Optional[Dict[str, int]] = None) -> List[Tuple[str, str]]:
    """(shard name, one line naming its path and what is wrong) per shard of `summary` that is not in `output_dir` as recorded: missing, or
    another size (one listing; `listed`: that listing when the caller has it), or with
    `full` another crc32c or record count (each shard read once)."""
    return [(name, "%s: %s" % (paths.join(output_dir, name), why))
            for name, why in _shard_problems(output_dir, summary, stores, full, listed)]


def _shard_problems(output_dir: str, summary: Dict[str, Any], stores: Optional["ObjectStores"],
                    full: bool, listed: Optional[Dict[str, int]]) -> List[Tuple[str, str]]:
    """(shard name, what is wrong with it) for `shard_mismatches`."""
    if listed is None:
        listed = listed_sizes(output_dir, stores)
    problems: List[Tuple[str, str]] = []
    langs = [summary_languages(summary)]  # a one-pair text shard's files end with them
    for shard in shards_of(summary):
        name = shard["name"]
        fmt = format_of(name, langs)
        files = fmt.files(name)  # a text shard is two
        absent = [f for f in files if f not in listed]
        size = sum(listed.get(f, 0) for f in files)
        if absent:
            problems.append((absent[0], "shard missing (the summary lists it)"))
        elif "bytes" not in shard:  # written before sizes were recorded: names only
            continue
        elif size != shard["bytes"]:
            problems.append((name, "%d bytes, the summary records %d (cut short or changed "
                                   "since the run)" % (size, shard["bytes"])))
        elif full:
            records, crc, _ = _read_whole(paths.join(output_dir, name), stores, fmt)
            if crc != shard["crc32c"]:
                problems.append((name, "crc32c %s, the summary records %s (changed since the "
                                       "run)" % (crc, shard["crc32c"])))
            elif records is not None and records != shard["records"]:
                problems.append((name, "%d records, the summary records %d" % (
                    records, shard["records"])))
    return problems


def recorded_dir(summary: Dict[str, Any]) -> Optional[str]:
    """The --output_dir the run that wrote `summary` had (None for a summary without one)."""
    recorded = summary.get("output_dir") or (summary.get("flags") or {}).get("output_dir")
    return recorded.rstrip("/") if isinstance(recorded, str) and recorded else None


def here(name: str, output_dir: str, recorded: Optional[str]) -> str:
    """Where a file the summary names (`name`: absolute, or relative to the output directory)
    is now: a path under the directory the summary was written in (`recorded`) is the same
    name under `output_dir`, so a complete output moved or copied elsewhere as a whole is
    checked where it is (the summary keeps the paths of the run that wrote it)."""
    if recorded and name.startswith(recorded + "/"):
        return output_dir.rstrip("/") + name[len(recorded):]
    if name.startswith("/") or "://" in name:
        return name
    return output_dir.rstrip("/") + "/" + name


def missing_outputs(layout: "OutputLayout", summary: Dict[str, Any],
                    stores: Optional["ObjectStores"] = None) -> List[Tuple[str, str]]:
    """(name, what is wrong) of each file `summary` lists that is gone or, for a shard, not at
    its recorded size; names are relative to the output directory. `stores`: the job's
    ObjectStores; the output directory is listed once. Files are looked for where they are
    now (`here`: an output moved as a whole is not missing anything)."""
    from transforms.storage import file_io
    listed = listed_sizes(layout.output_dir, stores)
    missing = _shard_problems(layout.output_dir, summary, stores, False, listed)
    recorded = recorded_dir(summary)
    named: List[str] = []
    for split in (summary.get("splits") or {}).values():
        if split.get("rejects_file"):
            named.append(here(split["rejects_file"], layout.output_dir, recorded))
    for vocab in (summary.get("vocab") or {}).values():
        # local only: an object store has no byte_bpe "directory" to ask about
        if isinstance(vocab, dict) and vocab.get("path"):
            path = here(vocab["path"], layout.output_dir, recorded)
            if paths.is_local(path):
                named.append(path)
    everything = file_io.list_prefix(layout.output_dir, stores)  # None: not an object store
    for path in named:
        if not (path in everything if everything is not None else file_io.exists(path)):
            missing.append((path.rsplit("/", 1)[-1], "missing (the summary lists %s)" % path))
    return missing


def read_summary(layout: "OutputLayout", stores: Optional["ObjectStores"] = None
                 ) -> Optional[Dict[str, Any]]:
    """The summary of a complete output, or None when it is missing or not JSON."""
    from transforms.storage import file_io
    try:
        summary = file_io.read_json(layout.summary_path, stores)
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) else None
