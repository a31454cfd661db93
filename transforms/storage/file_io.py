"""Small file helpers over Beam's FileSystems, so every path may be local, gs:// or s3://."""

import concurrent.futures
import contextlib
import io
import json
import os
import re
import shutil
import uuid
from typing import IO, Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple

from apache_beam.io.filesystem import CompressionTypes, FileSystem
from apache_beam.io.filesystems import FileSystems

from transforms.formats.checked_decompress import CheckedDecompressor
from transforms.formats.text_lines import InputError
from transforms.storage import paths as path_syntax
from transforms.storage.object_stores import COPY_THREADS, ObjectStores, Store

_READ_BUFFER = 1 << 20
_GLOB_CHARACTERS = re.compile(r"([\[*?])")


def glob_literal(path: str) -> str:
    """`path` as a glob pattern that matches only itself: each `[`, `*`, `?` in brackets,
    which Beam's patterns (local, gs://, s3://) and `glob` read as that character. For the
    directories the user names (--output_dir): a listing of `out[1]/*` must not list `out1`."""
    return _GLOB_CHARACTERS.sub(r"[\1]", path)


def _delete_local(paths: Iterable[str]) -> None:
    """Deletes local files and directory trees by their own names (Beam's local delete takes
    each name for a glob). A name that is already gone is fine."""
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)


class CompressedStreamError(InputError):
    """A compressed input that is cut short, corrupt, or not compressed at all."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(path, 0, message)
        self.message = message

    def __reduce__(self):  # picklable across worker processes
        return (type(self), (self.path, self.message))


def open_checked_decompressed(raw: Any, path: str, kind: str) -> IO[bytes]:
    """A buffered reader of `raw` decompressed as `kind` (a Beam CompressionTypes value:
    gzip, bzip2, deflate, zstd, lzma) that raises CompressedStreamError naming `path` when
    the stream is cut short, corrupt or not compressed (`transforms.formats.checked_decompress`)."""
    return io.BufferedReader(CheckedDecompressor(raw, path, kind, CompressedStreamError),
                             _READ_BUFFER)


def open_text_source(path: str, stores: Optional[ObjectStores] = None,
                     offset: int = 0) -> IO[bytes]:
    """Opens a corpus file for binary reading, from byte `offset` of its uncompressed
    content on, decompressed by extension as Beam detects it (`.gz`, `.bz2`, `.deflate`,
    `.zst`/`.zstd`, `.xz`/`.lzma`; offset 0 only: a compressed stream is read whole).
    `stores`: the worker's ObjectStores, whose reused client reads a file of an object store
    in one request (Beam's makes a client for every open).

    Reading a compressed file that is cut short or corrupt raises CompressedStreamError
    instead of ending early (see `transforms.formats.checked_decompress`).
    """
    kind = CompressionTypes.detect_compression_type(path)
    if kind != CompressionTypes.UNCOMPRESSED:
        f = open_checked_decompressed(open_for_read(path, stores), path, kind)
        if offset:
            f.seek(offset)
        return f
    return open_for_read(path, stores, offset)


def is_compressed(path: str) -> bool:
    return CompressionTypes.detect_compression_type(path) != CompressionTypes.UNCOMPRESSED


def _store(path: str, stores: Optional[ObjectStores]) -> Optional[Store]:
    """The store client of `path` among `stores` (the caller's ObjectStores, or None), or None
    where FileSystems does the work (a local path, hdfs://, or no stores given)."""
    return stores.for_path(path) if stores is not None else None


def open_for_read(path: str, stores: Optional[ObjectStores] = None,
                  offset: int = 0) -> IO[bytes]:
    """A binary stream of a file from byte `offset` on: on an object store through `stores`'
    reused client when given (one request), else through FileSystems."""
    store = _store(path, stores)
    if store is not None:
        return io.BufferedReader(_RawStream(store.open(path, offset)), _READ_BUFFER)
    f = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    if offset:
        f.seek(offset)
    return f


class _RawStream(io.RawIOBase):
    """A store client's response stream as a raw binary file (for io.BufferedReader)."""

    def __init__(self, stream: Any) -> None:
        super().__init__()
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._stream.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._stream.close()
        super().close()


class _ChunksReader(io.RawIOBase):
    """An iterable of byte strings as a readable binary stream (what upload clients take)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        super().__init__()
        self._chunks = iter(chunks)
        self._pending: Optional[bytes] = b""
        self._position = 0

    def readable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Only says where it is (upload clients ask `tell()` before they start)."""
        if (offset, whence) in ((0, io.SEEK_CUR), (self._position, io.SEEK_SET)):
            return self._position
        raise io.UnsupportedOperation("a stream of chunks cannot seek")

    def tell(self) -> int:
        return self._position

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            self._pending = next(self._chunks, None)
            if self._pending is None:
                self._pending = b""
                return 0
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        self._position += n
        return n


def write_chunks(path: str, chunks: Iterable[bytes], stores: Optional[ObjectStores] = None
                 ) -> Tuple[int, int]:
    """Writes the byte strings of `chunks` as the whole content of `path`, streaming (memory
    stays bounded whatever the size), so that `path` is whole or not there, also when two
    attempts of a retried bundle write it at once. On an object store through `stores`'
    reused client: the object appears whole when its upload completes (one PUT for a small
    object, a 0-byte one included), and an upload that fails is aborted. Elsewhere under a
    temporary name of this attempt's own (`create_atomically`). Returns the numbers of
    chunks and of bytes written."""
    counted = [0, 0]

    def counting() -> Iterator[bytes]:
        for chunk in chunks:
            counted[0] += 1
            counted[1] += len(chunk)
            yield chunk
    store = _store(path, stores)
    if store is not None:
        store.upload(path, io.BufferedReader(_ChunksReader(counting()), _READ_BUFFER))
    else:
        with create_atomically(path) as f:
            for chunk in counting():
                f.write(chunk)
    return counted[0], counted[1]


def list_prefix(directory: str, stores: Optional[ObjectStores] = None) -> Optional[Set[str]]:
    """The set of paths of every object under `directory` on an object store, in one listing
    through `stores`' reused client; None for any other file system (ask `exists`)."""
    store = _store(directory, stores)
    if store is None:
        return None
    return {path for path, _, _ in store.list(directory.rstrip("/") + "/")}


def check_reachable(directory: str, stores: ObjectStores) -> None:
    """Raises OSError (one line naming the store's answer) within about 30 s when
    `directory` is on an object store that cannot be reached; the tools (`inspect`, the
    reader) ask first, since Beam's file systems retry such a store for minutes."""
    store = _store(directory, stores)
    if store is not None:
        store.probe(directory.rstrip("/") + "/")


def match_files(pattern: str, stores: Optional[ObjectStores] = None
                ) -> List[Tuple[str, int, float]]:
    """[(path, size, modification time)] of the files a glob pattern matches, as Beam's
    FileSystems.match: on an object store one listing of the pattern's prefix through
    `stores`' reused client when given."""
    store = _store(pattern, stores)
    if store is None:
        return [(m.path, m.size_in_bytes, m.last_updated_in_seconds)
                for m in FileSystems.match([pattern])[0].metadata_list]
    prefix = re.split(r"[\[*?]", pattern, maxsplit=1)[0]  # before the first wildcard
    listed = store.list(prefix)
    if prefix == pattern:
        return [entry for entry in listed if entry[0] == pattern]
    matches = re.compile(FileSystem.translate_pattern(pattern)).match
    return [entry for entry in listed if matches(entry[0])]


def unlisted_matches(pattern: str) -> List[str]:
    """Local entries a glob `pattern` names that `match_files` leaves out: Beam's local
    listing drops every entry whose size cannot be read, so a dangling symbolic link (its
    target on an unmounted disk) would vanish from an input pattern without a word, and a
    file named in full would read as "no file matches". Empty for other file systems.

    The candidates are listed as Beam lists them (the pattern's directory; its tree only
    when the pattern can match below it: `**`, or a `/` after the first wildcard) and
    matched by Beam's own pattern syntax (`FileSystem.translate_pattern`)."""
    if not is_local(pattern):
        return []
    prefix = re.match(r"[^\[*?]*", pattern).group(0)  # type: ignore[union-attr]
    if prefix == pattern:  # a plain name
        return [pattern] if os.path.lexists(pattern) and not os.path.exists(pattern) else []
    root = os.path.dirname(prefix)
    if "**" in pattern or "/" in pattern[len(prefix):]:
        candidates = [os.path.join(top, name) for top, _, names in os.walk(root)
                      for name in names]
    else:
        try:
            with os.scandir(root) as entries:
                candidates = [entry.path for entry in entries]
        except OSError:
            return []
    matches = re.compile(FileSystem.translate_pattern(pattern)).match
    return sorted(path for path in candidates
                  if matches(path) and not os.path.exists(path))  # exists follows links


def read_bytes(path: str, stores: Optional[ObjectStores] = None) -> bytes:
    store = _store(path, stores)
    if store is not None:
        got = store.get(path)
        if got is None:
            raise FileNotFoundError(path)
        return got[0]
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return f.read()


def is_local(path: str) -> bool:
    """Whether `path` is a plain path of this machine's file system (no scheme), one the
    `os` functions take (`transforms.storage.paths`, which needs no Beam)."""
    return path_syntax.is_local(path)


_TMP_NAME = re.compile(r"\.tmp-[0-9a-f]{32}\Z")


def temporary_name(path: str) -> str:
    """A temporary name beside `path` that no output glob matches: it starts with a dot
    (`vocab.*`, `{problem}-train-*` and TensorFlow's globs need the name's first letters),
    and ends in `.tmp-<32 hex digits>`, which `remove_temporaries` recognises."""
    head, name = os.path.split(path)
    return os.path.join(head, ".%s.tmp-%s" % (name, uuid.uuid4().hex))


def is_temporary_name(name: str) -> bool:
    """Whether a file name is one of `temporary_name`'s (or an older version's
    `NAME.tmp-<hex>`)."""
    return bool(_TMP_NAME.search(name))


def temporary_of(name: str) -> Optional[str]:
    """The name a temporary name (`temporary_name`'s, or an older `NAME.tmp-<hex>`) stands
    for, or None for any other name."""
    if not is_temporary_name(name):
        return None
    base = _TMP_NAME.sub("", name)
    return base[1:] if base.startswith(".") else base


def remove_temporaries(directory: str, stores: Optional[ObjectStores] = None,
                       owned: Callable[[str], bool] = lambda name: True) -> List[str]:
    """Deletes the temporary files a killed run left directly in `directory` whose final
    name `owned` accepts (another job sharing the directory may be writing the others right
    now); returns their paths (`stores`: as `match_files`)."""
    listed = match_files(FileSystems.join(glob_literal(directory), "*"), stores)
    stray = [path for path, _, _ in listed
             if owned(temporary_of(FileSystems.split(path)[1]) or "")
             and is_temporary_name(FileSystems.split(path)[1])]
    delete_files(stray, stores)
    return stray


def write_bytes_atomically(path: str, data: bytes,
                           stores: Optional[ObjectStores] = None) -> None:
    """Writes `data` as the whole content of `path`, so that a reader sees the old content or
    the new, never a part, and the name never disappears.

    On an object store a PUT of the final bytes replaces an object atomically for readers,
    so through the store's own client (`stores`: `transforms.storage.object_stores.ObjectStores`)
    the bytes go straight to the final name, one request, 0-byte objects included. Elsewhere
    they are written under a temporary name beside it, then moved into place
    (`create_atomically`; on a local disk one atomic replace).
    """
    store = _store(path, stores)
    if store is not None:
        store.put(path, data)
        return
    with create_atomically(path) as f:
        f.write(data)


@contextlib.contextmanager
def create_atomically(path: str) -> Iterator[IO[bytes]]:
    """A binary file to write, created under a temporary name of its own beside `path`
    (`temporary_name`) and moved to `path` once closed without error; on an error the
    temporary file is removed.

    Work files a retried bundle rewrites go through here (or `write_chunks`): on a cluster
    runner an attempt whose worker or task manager was lost can still be writing when the
    retry writes the same name, and two writers of one name would interleave their bytes.
    With a name per attempt each writes a whole file of its own, and the rename that lands
    last leaves one whole file (both attempts write the same bytes). A file left by an
    attempt that died keeps its temporary name, which no reader lists.
    """
    tmp = temporary_name(path)
    if is_local(path):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        try:
            with open(tmp, "wb") as f:
                yield f
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return
    try:
        with FileSystems.create(tmp, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            yield f
    except BaseException:
        with contextlib.suppress(Exception):  # the write's own error matters more
            delete_files([tmp])
        raise
    FileSystems.rename([tmp], [path])


def read_json(path: str, stores: Optional[ObjectStores] = None) -> Any:
    return json.loads(read_bytes(path, stores).decode("utf-8"))


def read_work_json(path: str, stores: Optional[ObjectStores] = None) -> Dict[str, Any]:
    """A pass's result or checkpoint file, which must be there: a missing or unreadable one
    (removed by a cleanup or another run) is an error, never read as an empty result."""
    try:
        value = read_json(path, stores)
    except (OSError, ValueError) as e:  # BeamIOError is an OSError, bad JSON a ValueError
        raise RuntimeError("work file %s is missing or unreadable (%s): was the work "
                           "directory removed by another run?" % (
                               path, " ".join(str(e).split()))) from None
    if not isinstance(value, dict):
        raise RuntimeError("work file %s holds no result object" % path)
    return value


def json_bytes(value: Any) -> bytes:
    """The job's JSON files' bytes: indented, keys sorted, a final newline."""
    return (json.dumps(value, indent=1, sort_keys=True) + "\n").encode("utf-8")


def write_json(path: str, value: Any, stores: Optional[ObjectStores] = None) -> None:
    write_bytes_atomically(path, json_bytes(value), stores)


def exists(path: str, stores: Optional[ObjectStores] = None) -> bool:
    """Whether the file (or object) `path` exists; one request with `stores`."""
    store = _store(path, stores)
    if store is not None:
        return any(p == path for p, _, _ in store.list(path))
    return FileSystems.exists(path)


def filesystem_problem(path: str) -> Optional[str]:
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


def absolute(path: str) -> str:
    """Local paths made absolute: workers of remote or portable runners run elsewhere."""
    if "://" in path:
        return path
    return os.path.abspath(os.path.expanduser(path))


def expand_patterns(patterns: str, stores: Optional[ObjectStores] = None,
                    exclude: Optional[Callable[[str], bool]] = None) -> List[str]:
    """Sorted file list for a comma-separated list of glob patterns; each must match something
    (`stores`: as `match_files`).

    `exclude(path)`: paths left out before anything is checked (the job's own outputs)."""
    paths: List[str] = []
    for pattern in [absolute(p.strip()) for p in patterns.split(",") if p.strip()]:
        matched = sorted(path for path, _, _ in match_files(pattern, stores))
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


def delete_files(paths: Iterable[str], stores: Optional[ObjectStores] = None) -> None:
    """Deletes files (objects) that exist; through `stores`' reused client on an object store
    when given."""
    listed = list(paths)
    store = _store(listed[0], stores) if listed else None
    if store is not None:
        store.delete_many(listed)
    elif listed and all(is_local(p) for p in listed):
        _delete_local(listed)
    elif listed:
        FileSystems.delete(listed)


def move_files(sources: Iterable[str], destinations: Iterable[str],
               stores: Optional[ObjectStores] = None) -> None:
    """Moves files into place (replacing any there). On an object store a move is a copy and a
    delete: through `stores`' reused client when given, up to `COPY_THREADS` server-side
    copies at once (a copy of a large shard takes minutes; each is of any size, see
    `S3Store.copy`), then one batch delete of the sources once every copy is done. A reader
    may see some moved and some not (the commit's marker says when all are)."""
    moved, targets = list(sources), list(destinations)
    store = _store(moved[0], stores) if moved else None
    if store is None:
        if moved:
            FileSystems.rename(moved, targets)
        return
    with concurrent.futures.ThreadPoolExecutor(min(COPY_THREADS, len(moved))) as pool:
        list(pool.map(store.copy, moved, targets))  # the first failure, once all have ended
    store.delete_many(moved)


def delete_tree(path: str, stores: Optional[ObjectStores] = None) -> None:
    """Deletes a file or a directory tree, also on object stores (gs://, s3://), where a
    "directory" is only a name prefix: there (with `stores`) one listing of the prefix and
    one batch delete, else `exists`, then a listing of the tree."""
    store = _store(path, stores)
    if store is not None:
        base = path.rstrip("/")
        doomed = [p for p, _, _ in store.list(base) if p == base or p.startswith(base + "/")]
        if doomed:
            store.delete_many(doomed)
        return
    if is_local(path):
        _delete_local([path])
        return
    if FileSystems.exists(path):
        FileSystems.delete([path])
        return
    listed = FileSystems.match([FileSystems.join(glob_literal(path), "**")])[0].metadata_list
    if listed:
        FileSystems.delete([m.path for m in listed])
