"""`transforms.formats.tfrecord_framing` against the two framings it replaces and must equal.

TensorFlow's reader is the contract (training reads our shards with `tf.data.TFRecordDataset`);
Beam's `_TFRecordUtil` is what the shard writer used before, so equal bytes mean unchanged
output files.
"""

import io
import struct

import pytest
from apache_beam.io.tfrecordio import _TFRecordUtil
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transforms.formats.tfrecord_framing import (CorruptRecordError, frame_record, masked_crc32c,
                                         read_records)

RECORDS = st.lists(st.binary(max_size=300), max_size=20)


def _beam_bytes(records):
    f = io.BytesIO()
    for record in records:
        _TFRecordUtil.write_record(f, record)
    return f.getvalue()


def _ours(records):
    return b"".join(frame_record(r) for r in records)


@settings(max_examples=200, deadline=None)
@given(RECORDS)
def test_same_bytes_as_beams_tfrecord_util(records):
    assert _ours(records) == _beam_bytes(records)


@settings(max_examples=200, deadline=None)
@given(RECORDS)
def test_read_records_round_trips(records):
    assert list(read_records(io.BytesIO(_ours(records)))) == records


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(RECORDS)
def test_tensorflow_reads_what_we_write(tmp_path, records):
    import tensorflow as tf
    path = tmp_path / "records.tfrecord"
    path.write_bytes(_ours(records))
    assert list(tf.data.TFRecordDataset(str(path)).as_numpy_iterator()) == records


def test_we_read_what_tensorflow_writes(tmp_path):
    import tensorflow as tf
    records = [b"", b"a", bytes(range(256)) * 40, "日本語".encode("utf-8")]
    path = str(tmp_path / "tf.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    with open(path, "rb") as f:
        data = f.read()
    assert list(read_records(io.BytesIO(data))) == records
    assert data == _ours(records)


def test_known_value_and_memoryview_input():
    # The empty record: length 0, then the two masked CRCs TensorFlow writes for it.
    empty = frame_record(b"")
    assert empty[:8] == b"\0" * 8 and len(empty) == 16
    assert struct.unpack("<I", empty[12:])[0] == masked_crc32c(b"") == 0xA282EAD8
    assert frame_record(memoryview(b"xyz")) == frame_record(b"xyz")


@pytest.mark.parametrize("cut", [1, 8, 11, 12, 14, 18])
def test_truncated_stream_is_an_error(cut):
    data = frame_record(b"hello") + frame_record(b"world")
    with pytest.raises(CorruptRecordError, match="truncated"):
        list(read_records(io.BytesIO(data[:len(frame_record(b"hello")) + cut])))


@pytest.mark.parametrize("flip, what", [(0, "length checksum"), (9, "length checksum"),
                                        (13, "record checksum"), (19, "record checksum")])
def test_corrupted_byte_is_an_error(flip, what):
    data = bytearray(frame_record(b"hello"))
    data[flip] ^= 0x01
    with pytest.raises(CorruptRecordError, match=what):
        list(read_records(io.BytesIO(bytes(data))))
