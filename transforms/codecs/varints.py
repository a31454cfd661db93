"""Ids as base-128 varints, the way protobuf packs a repeated int64 field.

A `tf.train.Example`'s `Int64List` holds its ids as the concatenation of their varints, so
encoders can hand out that byte string directly (`SubwordEncoder.encode_varints`): one `join`
of per-token byte strings instead of a list of ids turned back into bytes by a message
object. Pure Python, no protobuf: the wire format is the contract.
"""

from typing import Iterable

_CONTINUATION_BYTES = bytes(range(0x80, 0x100))


def encode_varints(values: Iterable[int]) -> bytes:
    """The varints of non-negative ints, concatenated."""
    out = bytearray()
    for n in values:
        if n < 0:
            raise ValueError("negative id %d has no base-128 varint of this kind" % n)
        while n > 0x7F:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        out.append(n)
    return bytes(out)


def varint(n: int) -> bytes:
    """One non-negative int's varint (e.g. a length prefix)."""
    return encode_varints((n,))


def count_varints(data: bytes) -> int:
    """How many varints `data` holds: every varint ends in one byte below 0x80."""
    return len(data.translate(None, _CONTINUATION_BYTES))


def decode_varints(data: bytes) -> list[int]:
    """The ints of concatenated varints (the inverse of `encode_varints`)."""
    values: list[int] = []
    n = shift = 0
    for byte in data:
        n |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
        else:
            values.append(n)
            n = shift = 0
    if shift:
        raise ValueError("varints end inside a varint")
    return values
