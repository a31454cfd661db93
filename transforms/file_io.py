"""Small file helpers over Beam's FileSystems, so every path may be local, gs:// or s3://."""

import io
import json
import os
import uuid

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from transforms.checked_decompress import CheckedDecompressor
from transforms.text_lines import InputError

_READ_BUFFER = 1 << 20


class CompressedStreamError(InputError):
    """A compressed input that is cut short, corrupt, or not compressed at all."""

    def __init__(self, path, message):
        super().__init__(path, 0, message)
        self.message = message

    def __reduce__(self):  # picklable across worker processes
        return (type(self), (self.path, self.message))


def open_checked_decompressed(raw, path, kind):
    """A buffered reader of `raw` decompressed as `kind` (a Beam CompressionTypes value:
    gzip, bzip2, deflate, zstd, lzma) that raises CompressedStreamError naming `path` when
    the stream is cut short, corrupt or not compressed (`transforms.checked_decompress`)."""
    return io.BufferedReader(CheckedDecompressor(raw, path, kind, CompressedStreamError),
                             _READ_BUFFER)


def open_text_source(path):
    """Opens a corpus file for binary reading, decompressed by extension as Beam detects it
    (`.gz`, `.bz2`, `.deflate`, `.zst`/`.zstd`, `.xz`/`.lzma`).

    Reading a compressed file that is cut short or corrupt raises CompressedStreamError
    instead of ending early (see `transforms.checked_decompress`).
    """
    kind = CompressionTypes.detect_compression_type(path)
    if kind != CompressionTypes.UNCOMPRESSED:
        raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
        return open_checked_decompressed(raw, path, kind)
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
    tmp = "%s.tmp-%s" % (path, uuid.uuid4().hex)
    try:
        with FileSystems.create(tmp, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            f.write(data)
    except BaseException:
        _delete_quietly(tmp)  # a full disk must not leave a stray temporary file
        raise
    if is_local(path):
        os.replace(tmp, path)
        return
    if FileSystems.exists(path):
        FileSystems.delete([path])
    FileSystems.rename([tmp], [path])


def _delete_quietly(path):
    try:
        if FileSystems.exists(path):
            FileSystems.delete([path])
    except Exception:  # the write's own error matters more
        pass


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


def expand_patterns(patterns, exclude=None):
    """Sorted file list for a comma-separated list of glob patterns; each must match something.

    `exclude(path)`: paths left out before anything is checked (the job's own outputs)."""
    paths = []
    for pattern in [absolute(p.strip()) for p in patterns.split(",") if p.strip()]:
        matched = sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)
        if exclude is not None:
            matched = [path for path in matched if not exclude(path)]
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
