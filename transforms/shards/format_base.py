"""The base of the record formats (`transforms.shards.record_formats`): `RecordFormat`, what
every adapter implements, and the helpers the adapters share (streaming a checksum, the
writers' scratch directories, a local copy of a shard to read). A module of its own so that
an adapter may live in a module of its own (`transforms.shards.text_format`) without an
import cycle: the registry imports the adapters, the adapters import this.
"""

import abc
import contextlib
import os
import re
import shutil
import tempfile
from types import ModuleType
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional, Sequence, Tuple

from transforms.formats.packed_examples import PAIR_FEATURES
from transforms.storage import paths

if TYPE_CHECKING:
    from transforms.storage.object_stores import ObjectStores

FEATURES = PAIR_FEATURES  # the features of a record of one pair, in this order
COPY_BYTES = 1 << 22
DEFAULT_LANGS = ("src", "tgt")  # a one-pair output's languages when nothing names them


def file_io_module() -> ModuleType:
    """`transforms.storage.file_io` (Beam's FileSystems), imported when a shard is written or
    read through it: importing this module imports no Beam, so the readers without
    TensorFlow (`pipeline.tools.batches`) name and find shards without it."""
    from transforms.storage import file_io
    return file_io


class RecordFormat(abc.ABC):
    """A shard container: `name` is the `--output_format` value, `suffix` ends its shard
    names (after T2T's `{problem}-{split}-NNNNN-of-NNNNN`)."""

    name: str = ""
    suffix: str = ""
    # the suffixes of a shard's other files, when it is more than one (`files`)
    other_suffixes: Tuple[str, ...] = ()

    def files(self, name: str) -> Tuple[str, ...]:
        """The files (names or paths) that make shard `name`: the shard's own name, then
        one per `other_suffixes` (a text shard is a file per side: the seam's one extension,
        which the commit, the own-outputs and completeness checks follow)."""
        head = name[:len(name) - len(self.suffix)]
        return (name,) + tuple(head + other for other in self.other_suffixes)

    def for_langs(self, langs: Optional[Sequence[str]]) -> "RecordFormat":
        """This format for a pair of (source, target) languages: itself, but for a format
        whose file names end with the languages (`text`), whose names are the one place
        that says so; None: languages unknown (a reader that names no summary)."""
        return self

    @abc.abstractmethod
    def write_shard(self, path: str, records: Iterable[bytes],
                    stores: Optional["ObjectStores"] = None,
                    checksum: Optional[Any] = None,
                    features: Sequence[str] = FEATURES) -> Tuple[int, int]:
        """Writes `records` (serialized Examples, in order) as the whole shard `path`, whole
        or not there (as `file_io.write_chunks`); returns (records, bytes written).
        `checksum` (a google_crc32c.Checksum), if given, is updated with every byte of the
        file as it streams to `path`: the shard's crc32c without a second read. `features`:
        the int64 features every record holds (a columnar format's columns)."""

    @abc.abstractmethod
    def read_shard(self, path: str, stores: Optional["ObjectStores"] = None) -> Iterator[bytes]:
        """The shard's records (serialized Examples) in file order."""


def summed(chunks: Iterable[bytes], checksum: Optional[Any]) -> Iterator[bytes]:
    """`chunks`, each added to `checksum` (if any) as it passes."""
    for chunk in chunks:
        if checksum is not None:
            checksum.update(chunk)
        yield chunk


SCRATCH_PREFIX = "datagen-shard-"  # + the writing process's pid + "-": `scratch_pid`


def scratch_pid(name: str) -> Optional[int]:
    """The pid of the process that made a scratch directory of `_LocalFileFormat` (its name
    in the temporary directory), or None for another name: a directory whose process is
    gone (killed with its pass) is the driver's to remove (`pipeline.output.commit`)."""
    m = re.match(re.escape(SCRATCH_PREFIX) + r"(\d+)-", name)
    return int(m.group(1)) if m else None


@contextlib.contextmanager
def local_copy(path: str, stores: Optional["ObjectStores"] = None) -> Iterator[str]:
    """A local path holding `path`'s bytes: `path` itself on this machine's disk, else a
    temporary copy, deleted afterwards."""
    if paths.is_local(path):
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="datagen-read-") as tmp:
        local = os.path.join(tmp, path.rstrip("/").rsplit("/", 1)[-1])
        with file_io_module().open_for_read(path, stores) as src, open(local, "wb") as dst:
            shutil.copyfileobj(src, dst, COPY_BYTES)
        yield local
