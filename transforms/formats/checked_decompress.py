"""Decompressed reading that notices a cut or corrupt stream, for every compression Beam knows.

Beam's `CompressedFile` stops quietly where a truncated stream ends (for every kind: gzip,
bzip2, deflate, zstd, lzma/xz), so a file cut off in a download would read as a shorter file,
and a corrupt one fails with the decompressor's own exception (a traceback). Here the same
decompressor objects Beam uses are fed the raw bytes (from a FileSystems stream, so gs://
works) and checked at the end: the raw bytes must end exactly where a stream ends (several
streams in a row, as `cat a.gz b.gz` or `xz` of several blocks, are read one after another,
as Beam and the command-line tools read them). A stream that is not finished when the bytes
run out, bytes that are not in the format, or a file of 0 bytes (every format writes a header
even for empty content) raise `error(path, message)`, naming the file.
"""

import bz2
import io
import lzma
import zlib
from typing import Any, Callable, NoReturn

import zstandard

from transforms.formats.text_lines import ByteStream

KINDS = ("gzip", "bzip2", "deflate", "zstd", "lzma")
# The file-name suffixes Beam decompresses by (`CompressionTypes.detect_compression_type`).
SUFFIXES = (".gz", ".bz2", ".deflate", ".zst", ".zstd", ".xz", ".lzma")


def strip_compression_suffix(name: str) -> str:
    """`train.en.xz` -> `train.en`: the name without one compression suffix (any case)."""
    lower = name.lower()
    for suffix in SUFFIXES:
        if lower.endswith(suffix):
            return name[:-len(suffix)]
    return name
_RAW_CHUNK = 1 << 16
_ZSTD_MAX_WINDOW = 2147483648  # as Beam's reader: big windows need a bound on memory


def _decompressor(kind: str) -> Any:
    if kind == "gzip":
        return zlib.decompressobj(zlib.MAX_WBITS | 16)
    if kind == "bzip2":
        return bz2.BZ2Decompressor()
    if kind == "deflate":
        return zlib.decompressobj()
    if kind == "zstd":
        return zstandard.ZstdDecompressor(max_window_size=_ZSTD_MAX_WINDOW).decompressobj()
    if kind == "lzma":
        return lzma.LZMADecompressor()
    raise ValueError("unknown compression %r" % kind)


# What the decompressors raise on data that is not in their format.
_FORMAT_ERRORS = (zlib.error, lzma.LZMAError, zstandard.ZstdError, EOFError)


class CheckedDecompressor(io.RawIOBase):
    """The decompressed bytes of `raw` (a binary stream of a `kind` file named `path`);
    raises `error(path, message)` when the stream is cut short, corrupt or empty.

    Seeking forward reads and drops; seeking back restarts from the beginning of `raw`
    (which must then be seekable). Readers of compressed files only ever seek to 0.
    """

    def __init__(self, raw: Any, path: str, kind: str,
                 error: Callable[[str, str], Exception]) -> None:
        super().__init__()
        if kind not in KINDS:
            raise ValueError("unknown compression %r" % kind)
        self._raw, self._path, self._kind, self._error = raw, path, kind, error
        self._restart()

    def _restart(self) -> None:
        self._d = _decompressor(self._kind)
        self._pending = b""       # decompressed, not yet returned from `_taken` on
        self._taken = 0
        self._position = 0        # decompressed bytes returned so far
        self._raw_bytes = 0       # compressed bytes read so far
        self._done = False

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_CUR:
            offset += self._position
        elif whence != io.SEEK_SET:
            raise io.UnsupportedOperation("a compressed stream cannot seek from its end")
        if offset < self._position:
            self._raw.seek(0)
            self._restart()
        while self._position < offset:
            if not self.read(min(offset - self._position, 1 << 20)):
                break
        return self._position

    def _fail(self, message: str) -> NoReturn:
        raise self._error(self._path, message)

    def _fill(self) -> bool:
        """Decompresses more raw bytes into `_pending`; False at the end of the data."""
        while not self._pending and not self._done:
            data = self._raw.read(_RAW_CHUNK)
            if not data:
                self._done = True
                if self._raw_bytes == 0:
                    self._fail("compressed stream ends early (truncated or corrupt): the "
                               "file is empty")
                if not self._d.eof:
                    self._fail("compressed stream ends early (truncated or corrupt)")
                break
            self._raw_bytes += len(data)
            self._feed(data)
        return bool(self._pending)

    def _feed(self, data: bytes) -> None:
        out = []
        try:
            while data:
                if self._d.eof:
                    # a stream ended and more bytes follow: the next concatenated stream
                    if self._kind == "gzip" and not data.strip(b"\0"):
                        return  # zero padding after a gzip member (as gzip(1) allows)
                    self._d = _decompressor(self._kind)
                out.append(self._d.decompress(data))
                data = self._d.unused_data if self._d.eof else b""
        except _FORMAT_ERRORS as e:
            self._fail("not a valid %s stream (%s)" % (self._kind, e))
        except OSError as e:  # bz2's "Invalid data stream" carries no errno
            if e.errno is not None:
                raise
            self._fail("not a valid %s stream (%s)" % (self._kind, e))
        finally:
            self._pending = self._pending[self._taken:] + b"".join(out)
            self._taken = 0

    def readinto(self, buffer: Any) -> int:
        if not self._fill():
            return 0
        n = min(len(buffer), len(self._pending) - self._taken)
        buffer[:n] = self._pending[self._taken:self._taken + n]
        self._taken += n
        if self._taken == len(self._pending):
            self._pending, self._taken = b"", 0
        self._position += n
        return n

    def close(self) -> None:
        if not self.closed:
            try:
                self._raw.close()
            finally:
                super().close()
