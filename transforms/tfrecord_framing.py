"""TFRecord framing: the bytes TensorFlow's TFRecordWriter writes around each record.

length (u64) | masked CRC32C of the length (u32) | data | masked CRC32C of the data (u32), all
little-endian. The CRC comes from `google_crc32c` (a C extension); the mask is TFRecord's.
"""

import struct

import google_crc32c

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")


def masked_crc32c(data):
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame_record(data):
    """`data` framed as one TFRecord."""
    length = _LENGTH.pack(len(data))
    return b"".join((length, _CRC.pack(masked_crc32c(length)), data, _CRC.pack(masked_crc32c(data))))
