"""Paths of any file system, told apart and joined without importing Beam where the path is
this machine's own.

Beam's FileSystems is the project's file system layer (`transforms.storage.file_io`); its
import loads the whole SDK (seconds) and logs a line. The readers without TensorFlow run in a
trainer's process on local files most of the time (`pipeline.tools.output_files`): for those
a path is an `os.path` path, and Beam is imported only for a path with a scheme.
"""

import os
import re

# Beam's FileSystems.get_scheme: a path starting `scheme://` belongs to that file system.
_SCHEME = re.compile(r"^([a-zA-Z][-a-zA-Z0-9+.]*)://")


def is_local(path: str) -> bool:
    """Whether `path` is a plain path of this machine's file system (no scheme), one the
    `os` functions take."""
    return _SCHEME.match(path) is None


def join(base: str, *names: str) -> str:
    """`base`/`names` as Beam's FileSystems.join makes it, Beam imported only for a path
    with a scheme."""
    if is_local(base):
        return os.path.join(base, *names)
    from apache_beam.io.filesystems import FileSystems
    return FileSystems.join(base, *names)


def split(path: str) -> "tuple[str, str]":
    """(directory, base name) as Beam's FileSystems.split makes it."""
    if is_local(path):
        return os.path.split(path)
    from apache_beam.io.filesystems import FileSystems
    head, tail = FileSystems.split(path)
    return head, tail
