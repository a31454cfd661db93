"""A minimal reader of protobuf's wire format: the fields of one serialized message.

The SentencePiece model's own message classes (`sentencepiece_model_pb2`) are generated for
protobuf >= 7 and fail to import beside apache-beam's and TensorFlow's protobuf 6 (a
VersionError). The few facts the job reads from a model -- the trainer options recorded in
its `trainer_spec`, its normalizer's -- are plain scalar fields, so reading the wire format
(varint, 64-bit, length-delimited, 32-bit) is enough; no descriptor, no generated code.
"""

import struct
from typing import Iterator, Optional, Tuple, Union

FieldValue = Union[int, bytes]  # a varint's int, or the raw bytes of the other wire types

VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5


def read_varint(data: Union[bytes, memoryview], pos: int) -> Tuple[int, int]:
    """(value, position after it) of the varint at `pos`; ValueError when it is cut off."""
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def iter_fields(data: bytes) -> Iterator[Tuple[int, int, FieldValue]]:
    """(field number, wire type, value) of each field of a serialized message, in order: an
    int for a varint, bytes for the other three wire types (8 or 4 raw bytes, or the payload
    of a length-delimited field)."""
    pos = 0
    view = memoryview(data)
    while pos < len(view):
        key, pos = read_varint(view, pos)
        number, wire_type = key >> 3, key & 7
        value: FieldValue
        if wire_type == VARINT:
            value, pos = read_varint(view, pos)
        elif wire_type in (FIXED64, FIXED32):
            width = 8 if wire_type == FIXED64 else 4
            value, pos = bytes(view[pos:pos + width]), pos + width
        elif wire_type == LENGTH_DELIMITED:
            length, pos = read_varint(view, pos)
            value, pos = bytes(view[pos:pos + length]), pos + length
        else:
            raise ValueError("unsupported wire type %d (field %d)" % (wire_type, number))
        if pos > len(view):
            raise ValueError("truncated field %d" % number)
        yield number, wire_type, value


def as_int32(value: int) -> int:
    """A varint read as a signed 32-bit int (protobuf writes -1 as ten bytes of 64 bits)."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >> 63 else value


def as_float(value: bytes) -> float:
    """A 32-bit field's bytes read as a float (protobuf's little-endian IEEE 754)."""
    return struct.unpack("<f", value)[0]


def first_field(data: bytes, number: int) -> Optional[FieldValue]:
    """The value of the first field `number` of a serialized message, or None."""
    for n, _, value in iter_fields(data):
        if n == number:
            return value
    return None
