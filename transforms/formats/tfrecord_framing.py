"""TFRecord framing: the bytes around each record of a TFRecord file, on a public API.

A TFRecord file is a sequence of records, each framed as

    uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)

(little-endian), where the mask is TensorFlow's: rotate the CRC32C right by 15 bits and add
0xa282ead8. This module writes and reads that framing with `google_crc32c` (a runtime
dependency with a C implementation) so the shard writer needs neither TensorFlow on the
workers nor Beam's private `apache_beam.io.tfrecordio._TFRecordUtil`. Uncompressed files only:
the job writes its shards uncompressed, as T2T does.
"""

import functools
import struct
from typing import Iterable, Iterator, List

from transforms.formats.text_lines import ByteStream

import google_crc32c

from transforms.errors import JobError

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")
_MASK_DELTA = 0xA282EAD8


def masked_crc32c(data: bytes) -> int:
    """TensorFlow's masked CRC32C: a CRC stored next to the data it covers is masked, so that
    a CRC of bytes that themselves hold CRCs stays well distributed."""
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


@functools.lru_cache(maxsize=1 << 14)
def _length_header(length: int) -> bytes:
    """The framing before a record of `length` bytes (records of one corpus repeat a few
    thousand lengths: each header is computed once)."""
    packed = _LENGTH.pack(length)
    return packed + _CRC.pack(masked_crc32c(packed))


def frame_record(data: bytes) -> bytes:
    """One record's bytes as they appear in a TFRecord file."""
    data = bytes(data)
    return b"".join((_length_header(len(data)), data, _CRC.pack(masked_crc32c(data))))


_CHUNK = 1 << 20  # bytes of framed records `framed_chunks` hands on at once


def framed_chunks(records: Iterable[bytes], counted: List[int]) -> Iterator[bytes]:
    """`records` framed, as `frame_record` frames each, in chunks of about 1 MiB (a write and
    a checksum update per chunk, not per record: most of a shard's writing was those);
    `counted[0]` is increased by one per record."""
    pending: List[bytes] = []
    size = n = 0
    pack, header, crc = _CRC.pack, _length_header, masked_crc32c
    for data in records:
        length = len(data)
        pending += (header(length), data, pack(crc(data)))
        size += length
        n += 1
        if size >= _CHUNK:
            counted[0] += n
            yield b"".join(pending)
            pending, size, n = [], 0, 0
    counted[0] += n
    if pending:
        yield b"".join(pending)


class CorruptRecordError(JobError, ValueError):
    """The stream is not valid TFRecord framing (truncated, or a checksum does not match)."""


def _read_exactly(stream: ByteStream, n: int, what: str, offset: int) -> bytes:
    buf = stream.read(n)
    if len(buf) != n:
        raise CorruptRecordError("truncated %s at byte %d: wanted %d bytes, got %d"
                                 % (what, offset, n, len(buf)))
    return buf


def read_records(stream: ByteStream) -> Iterator[bytes]:
    """Yields the records of a binary TFRecord stream, checking both checksums of each.

    For tests and inspection (the job itself never reads its shards back); raises
    CorruptRecordError on a truncated or corrupted record.
    """
    offset = 0
    while True:
        header = stream.read(_LENGTH.size)
        if not header:
            return
        if len(header) != _LENGTH.size:
            raise CorruptRecordError("truncated length at byte %d" % offset)
        (length_crc,) = _CRC.unpack(_read_exactly(stream, _CRC.size, "length checksum", offset))
        if length_crc != masked_crc32c(header):
            raise CorruptRecordError("length checksum mismatch at byte %d" % offset)
        (length,) = _LENGTH.unpack(header)
        data = _read_exactly(stream, length, "record", offset)
        (data_crc,) = _CRC.unpack(_read_exactly(stream, _CRC.size, "record checksum", offset))
        if data_crc != masked_crc32c(data):
            raise CorruptRecordError("record checksum mismatch at byte %d" % offset)
        yield data
        offset += _LENGTH.size + 2 * _CRC.size + length
