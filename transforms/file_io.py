"""Small file helpers over Beam's FileSystems, so every path may be local, gs:// or s3://."""

import bz2
import contextlib
import gzip
import io
import json
import os
import uuid
import zlib

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from transforms.text_lines import InputError

_READ_BUFFER = 1 << 20


class CompressedStreamError(InputError):
    """A `.gz`/`.bz2` input that is cut short, corrupt, or not compressed at all."""

    def __init__(self, path, message):
        super().__init__(path, 0, message)
        self.message = message

    def __reduce__(self):  # picklable across worker processes
        return (type(self), (self.path, self.message))


class _CheckedDecompressor(io.RawIOBase):
    """The decompressed bytes of a gzip or bzip2 stream, or CompressedStreamError.

    Beam's CompressedFile stops quietly where a truncated stream ends, so a file cut off in a
    download would read as a shorter file (and both sides cut alike would go unnoticed).
    Python's gzip and bz2 readers raise EOFError when the end-of-stream marker is missing and
    an error for data that is not in their format; this turns both into one error that names
    the file. The compressed bytes come from `raw` (a FileSystems stream), so gs:// works.
    """

    def __init__(self, raw, path, kind):
        super().__init__()
        self._raw = raw
        self._path = path
        self._kind = kind
        self._file = (gzip.GzipFile(fileobj=raw, mode="rb") if kind == "gzip"
                      else bz2.BZ2File(raw, mode="rb"))
        self._returned = 0

    def readable(self):
        return True

    def seekable(self):
        return self._file.seekable()

    def seek(self, offset, whence=io.SEEK_SET):
        return self._call(self._file.seek, offset, whence)

    def tell(self):
        return self._file.tell()

    def readinto(self, buffer):
        n = self._call(self._file.readinto, buffer)
        if n == 0 and self._returned == 0 and self._raw_is_empty():
            # gzip and bzip2 write a header even for empty content: 0 bytes is a cut file.
            raise CompressedStreamError(self._path, "compressed stream ends early (truncated "
                                        "or corrupt): the file is empty")
        self._returned += n
        return n

    def _raw_is_empty(self):
        try:
            return self._raw.tell() == 0
        except (OSError, ValueError, AttributeError):
            return False

    def _call(self, fn, *args):
        try:
            return fn(*args)
        except EOFError:
            raise CompressedStreamError(
                self._path, "compressed stream ends early (truncated or corrupt)") from None
        except (zlib.error, OSError) as error:
            # The decompressors' own errors carry no errno; a failing read of the file does.
            if isinstance(error, OSError) and error.errno is not None:
                raise
            raise CompressedStreamError(
                self._path, "not a valid %s stream (%s)" % (self._kind, error)) from None

    def close(self):
        if not self.closed:
            try:
                self._file.close()
            finally:
                self._raw.close()
        super().close()


def open_checked_decompressed(raw, path, kind):
    """A buffered reader of `raw` decompressed as `kind` ("gzip" or "bzip2") that raises
    CompressedStreamError naming `path` when the stream is incomplete or not compressed."""
    return io.BufferedReader(_CheckedDecompressor(raw, path, kind), _READ_BUFFER)


def open_text_source(path):
    """Opens a corpus file for binary reading; `.gz`/`.bz2` are decompressed by extension.

    Reading a compressed file that is cut short or corrupt raises CompressedStreamError
    instead of ending early (see `_CheckedDecompressor`).
    """
    kind = CompressionTypes.detect_compression_type(path)
    if kind in (CompressionTypes.GZIP, CompressionTypes.BZIP2):
        raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
        return open_checked_decompressed(raw, path, kind)  # "gzip" or "bzip2"
    return FileSystems.open(path, compression_type=kind)


def is_compressed(path):
    return CompressionTypes.detect_compression_type(path) != CompressionTypes.UNCOMPRESSED


def read_bytes(path):
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return f.read()


def is_local(path):
    """Whether `path` is a plain path of this machine's file system (no scheme), one the
    `os` functions take."""
    return FileSystems.get_scheme(path) is None


def write_bytes_atomically(path, data):
    """Writes `data` to a temporary name of its own beside `path`, then moves it into place:
    on a local disk with one atomic replace (the file is never missing); object stores have
    no replace, so there the old file is deleted first."""
    with create_atomically(path) as f:
        f.write(data)


@contextlib.contextmanager
def create_atomically(path):
    """A binary file to write, created under a temporary name of its own beside `path`
    (`{path}.tmp-{random}`) and moved to `path` once closed without error, as
    `write_bytes_atomically` does.

    Work files a retried bundle rewrites go through here: on a cluster runner an attempt
    whose worker or task manager was lost can still be writing when the retry writes the
    same name, and two writers of one name would interleave their bytes. With a name per
    attempt each writes a whole file of its own, and the rename that lands last leaves one
    whole file (both attempts write the same bytes). A file left by an attempt that died
    keeps its temporary name, which no reader lists.
    """
    tmp = "%s.tmp-%s" % (path, uuid.uuid4().hex)
    with FileSystems.create(tmp, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        yield f
    if is_local(path):
        os.replace(tmp, path)
        return
    if FileSystems.exists(path):
        FileSystems.delete([path])
    FileSystems.rename([tmp], [path])


def read_json(path):
    return json.loads(read_bytes(path).decode("utf-8"))


def read_work_json(path):
    """A pass's result or checkpoint file, which must be there: a missing or unreadable one
    (removed by a cleanup or another run) is an error, never read as an empty result."""
    try:
        value = read_json(path)
    except (OSError, ValueError) as e:  # BeamIOError is an OSError, bad JSON a ValueError
        raise RuntimeError("work file %s is missing or unreadable (%s): was the work "
                           "directory removed by another run?" % (
                               path, " ".join(str(e).split()))) from None
    if not isinstance(value, dict):
        raise RuntimeError("work file %s holds no result object" % path)
    return value


def json_bytes(value):
    """The job's JSON files' bytes: indented, keys sorted, a final newline."""
    return (json.dumps(value, indent=1, sort_keys=True) + "\n").encode("utf-8")


def write_json(path, value):
    write_bytes_atomically(path, json_bytes(value))


def exists(path):
    return FileSystems.exists(path)


def filesystem_problem(path):
    """None, or why Beam has no file system for `path` here (e.g. gs:// without the gcp
    extra: Beam raises a ValueError wherever such a path is first used)."""
    try:
        FileSystems.get_filesystem(path)
        return None
    except ValueError:
        scheme = FileSystems.get_scheme(path) or ""
        extra = {"gs": "gcp", "s3": "aws", "azfs": "azure"}.get(scheme)
        hint = ("install apache-beam[%s] (for gs://: pip install -e '.[dataflow]')" % extra
                if extra else "is the scheme right?")
        return "%s: no file system for %s:// paths is installed; %s" % (path, scheme, hint)


def absolute(path):
    """Local paths made absolute: workers of remote or portable runners run elsewhere."""
    if "://" in path:
        return path
    return os.path.abspath(os.path.expanduser(path))


def expand_patterns(patterns):
    """Sorted file list for a comma-separated list of glob patterns; each must match something."""
    paths = []
    for pattern in [absolute(p.strip()) for p in patterns.split(",") if p.strip()]:
        matched = sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)
        if not matched:
            raise FileNotFoundError("no file matches %r" % pattern)
        for path in matched:
            if "://" not in path and os.path.isdir(path):  # object stores list files only
                raise IsADirectoryError("%s is a directory, not a file (name its files, "
                                        "e.g. %s)" % (path, os.path.join(path, "*.en")))
        paths.extend(matched)
    return paths


def delete_tree(path):
    """Deletes a file or a directory tree, also on object stores (gs://, s3://), where a
    "directory" is only a name prefix: `exists` is false for it, so its files are listed."""
    if FileSystems.exists(path):
        FileSystems.delete([path])
        return
    listed = FileSystems.match([FileSystems.join(path, "**")])[0].metadata_list
    if listed:
        FileSystems.delete([m.path for m in listed])
