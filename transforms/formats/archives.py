"""Archives (``split_archive_path``, ``open_archive_member``). ``archive!member`` names a file
inside an archive: the path is split at the first ``!`` that follows a name ending in
``.tar``, ``.tar.gz``, ``.tgz``, ``.tar.bz2``, ``.tbz2``, ``.tar.xz``, ``.txz`` or ``.zip``
(a ``!`` elsewhere is part of the file name; nested archives are not supported). Tar archives
(any compression, detected from content, so a stream already decompressed by Beam works too)
are opened with ``tarfile`` mode ``r:*`` when the stream is seekable, else in streaming mode
``r|*``, scanning members in order until the member is found (a link cannot be followed in
streaming mode). Zip archives need random access: a non-seekable stream is first read whole
into memory (the archive's full compressed size). Member names match with or without a
leading ``./`` or ``/``; when the archive holds the name more than once, the last copy is
used, as ``tar -x`` and ``unzip`` leave it (so a tar archive is always read to its end). ``open_archive_member`` owns
the stream it is given: closing the member file closes it (and the archive), and so does any
error while opening the member. A missing member, a directory, a corrupt or unreadable
archive raise ``FormatError`` naming the archive and member; so do decompression errors while
the member is read.
"""

from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from typing import IO, Any, List, Optional, Tuple

from transforms.formats.text_lines import FormatError

try:  # optional stdlib modules (absent in some minimal Python builds)
    import lzma
    _LZMA_ERRORS: tuple = (lzma.LZMAError,)
except ImportError:  # pragma: no cover
    _LZMA_ERRORS = ()

__all__ = ["split_archive_path", "open_archive_member"]


_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
_ARCHIVE_SUFFIXES = _TAR_SUFFIXES + (".zip",)
_ARCHIVE_ERRORS = (tarfile.TarError, zipfile.BadZipFile, zipfile.LargeZipFile, OSError,
                   EOFError, zlib.error, RuntimeError, NotImplementedError, ValueError,
                   KeyError) + _LZMA_ERRORS


def split_archive_path(path: str) -> Tuple[str, Optional[str]]:
    """"a/b.tgz!x/y.en" -> ("a/b.tgz", "x/y.en"); a path naming no archive member -> (path, None)."""
    start = 0
    while True:
        bang = path.find("!", start)
        if bang < 0:
            return path, None
        if path[:bang].lower().endswith(_ARCHIVE_SUFFIXES):
            member = path[bang + 1:]
            if not member:
                raise FormatError(path[:bang], "member", "empty archive member name after '!'")
            return path[:bang], member
        start = bang + 1


def _member_key(name):
    while name.startswith("./"):
        name = name[2:]
    return name.lstrip("/")


class _MemberReader(io.RawIOBase):
    """An archive member: keeps the archive objects alive; read errors become FormatError."""

    def __init__(self, member_file: IO[bytes], keep: List[Any], archive_path: str,
                 member: str) -> None:
        super().__init__()
        self._file = member_file
        self._keep = keep
        self._archive_path = archive_path
        self._member = member

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self._file.read(len(buffer))
        except FormatError:
            raise
        except _ARCHIVE_ERRORS as error:
            raise FormatError(self._archive_path, "member %s" % self._member,
                              "cannot read archive member: %s" % error) from None
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            try:
                self._file.close()
                for obj in self._keep:
                    _close_quietly(obj)
            finally:
                super().close()


def _is_seekable(stream):
    try:
        return bool(stream.seekable())
    except Exception:  # no seekable() or a closed/odd stream: treat as a pipe
        return False


def _not_found(archive_path, member, names, count):
    sample = ", ".join(names[:5]) + (", ..." if count > 5 else "")
    return FormatError(archive_path, "member %s" % member,
                       "no such member in the archive (%d members%s)"
                       % (count, ": " + sample if count else ""))


def open_archive_member(stream: IO[bytes], archive_path: str, member: str) -> IO[bytes]:
    """A binary file object reading `member` of the tar or zip archive in `stream`.

    Takes ownership of `stream`: closing the returned file closes it, and so does a failure.
    """
    where = "member %s" % member
    wanted = _member_key(member)
    try:
        if not wanted:
            raise FormatError(archive_path, where, "empty archive member name")
        if archive_path.lower().endswith(".zip"):
            return _open_zip_member(stream, archive_path, member, wanted)
        return _open_tar_member(stream, archive_path, member, wanted)
    except BaseException as error:
        _close_quietly(stream)
        if isinstance(error, FormatError) or not isinstance(error, _ARCHIVE_ERRORS):
            raise
        raise FormatError(archive_path, where, "cannot read archive: %s: %s"
                          % (type(error).__name__, error)) from None


def _close_quietly(stream):
    try:
        close = stream.close
    except AttributeError:
        return
    try:
        close()
    except Exception:  # the original error matters more
        pass


def _open_zip_member(stream, archive_path, member, wanted):
    data = stream if _is_seekable(stream) else io.BytesIO(stream.read())  # whole zip in memory
    archive = zipfile.ZipFile(data)
    infos = archive.infolist()
    # the last entry of the name, as unzip and zipfile's own name lookup take it
    info = next((i for i in reversed(infos) if _member_key(i.filename) == wanted), None)
    if info is None:
        raise _not_found(archive_path, member, [i.filename for i in infos], len(infos))
    if info.is_dir():
        raise FormatError(archive_path, "member %s" % member, "is a directory, not a file")
    return io.BufferedReader(_MemberReader(archive.open(info), [archive, stream], archive_path, member))


_SPOOL_BYTES = 32 << 20  # a copy of a member read from a stream stays in memory up to this


def _open_tar_member(stream, archive_path, member, wanted):
    """The last member named `wanted`, as `tar -x` leaves it: the whole archive is scanned.
    From a stream (no seeking back), each copy of the name is kept aside as it passes (in
    memory, on disk when large) until a later copy replaces it."""
    streaming = not _is_seekable(stream)
    archive = tarfile.open(fileobj=stream, mode="r|*" if streaming else "r:*")
    names: List[str] = []
    count = 0
    last: Optional[tarfile.TarInfo] = None
    kept: Optional[IO[bytes]] = None
    for info in archive:
        count += 1
        if len(names) < 5:
            names.append(info.name)
        if _member_key(info.name) != wanted:
            continue
        last = info
        if streaming and info.isfile():
            if kept is not None:
                kept.close()
            kept = tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES)
            source = archive.extractfile(info)
            assert source is not None  # a regular member
            shutil.copyfileobj(source, kept)
            kept.seek(0)
    if last is None:
        raise _not_found(archive_path, member, names, count)
    if last.isdir():
        raise FormatError(archive_path, "member %s" % member, "is a directory, not a file")
    if streaming and not last.isfile():
        raise FormatError(archive_path, "member %s" % member,
                          "is a link or special file; cannot follow it in a non-seekable stream")
    member_file = kept if streaming else archive.extractfile(last)
    if member_file is None:
        raise FormatError(archive_path, "member %s" % member, "is not a regular file")
    return io.BufferedReader(_MemberReader(member_file, [archive, stream], archive_path, member))
