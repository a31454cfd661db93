"""Small file helpers over Beam's FileSystems, so every path may be local, gs:// or s3://."""

import json
import os

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems


def open_text_source(path):
    """Opens a corpus file for binary reading; `.gz`/`.bz2` are decompressed by extension."""
    return FileSystems.open(path, compression_type=CompressionTypes.AUTO)


def is_compressed(path):
    return CompressionTypes.detect_compression_type(path) != CompressionTypes.UNCOMPRESSED


def read_bytes(path):
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return f.read()


def write_bytes_atomically(path, data):
    """Writes `data` to a temporary name beside `path`, then renames it into place."""
    tmp = path + ".tmp-write"
    with FileSystems.create(tmp, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.write(data)
    if FileSystems.exists(path):
        FileSystems.delete([path])
    FileSystems.rename([tmp], [path])


def read_json(path):
    return json.loads(read_bytes(path).decode("utf-8"))


def write_json(path, value):
    write_bytes_atomically(path, (json.dumps(value, indent=1, sort_keys=True) + "\n").encode("utf-8"))


def exists(path):
    return FileSystems.exists(path)


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
        paths.extend(matched)
    return paths
