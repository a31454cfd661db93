"""Every registered record format (`FORMATS`), found from the registry, not a list: its shard
round-trips through `write_shard` and `read_shard` (the records in order, the count and size
it reports, the checksum of the bytes it wrote), and a format registered without working
fails here (a dummy format shows it)."""

import os

import google_crc32c
import pytest

from registries import every_format, is_text_format
from transforms.shards import record_formats
from transforms.shards.format_base import RecordFormat


def _records(name, n=40):
    """Records of the kind the format is written with: the pairs' text for a text format,
    ids otherwise (both serialized Examples)."""
    from transforms.formats.example_proto import Int64FeaturesWriter
    if is_text_format(name):
        from transforms.shards.text_format import text_record
        return [text_record(("source %d" % i).encode(), ("目标 %d" % i).encode())
                for i in range(n)]
    writer = Int64FeaturesWriter()
    return [writer.serialize({"inputs": [i + 3, 1], "targets": [i + 4, 5, 1]})
            for i in range(n)]


def check_round_trip(fmt, name, directory):
    records = _records(name)
    path = os.path.join(directory, "p-train-00000-of-00001" + fmt.suffix)
    checksum = google_crc32c.Checksum()
    count, size = fmt.write_shard(path, iter(records), checksum=checksum)
    data = b""
    for file in fmt.files(path):
        with open(file, "rb") as f:
            data += f.read()
    assert (count, size) == (len(records), len(data)), name
    assert checksum.digest() == google_crc32c.Checksum(data).digest(), name
    assert list(fmt.read_shard(path)) == records, name


@pytest.mark.parametrize("name", every_format())
def test_every_registered_format_round_trips_a_shard(name, tmp_path):
    check_round_trip(record_formats.FORMATS[name], name, str(tmp_path))


class _DroppingFormat(RecordFormat):
    """A format registered but broken: it writes every record but the last."""
    name = "dropping"
    suffix = ".drop"

    def write_shard(self, path, records, checksum=None):
        data = b"".join(len(r).to_bytes(4, "big") + r for r in list(records)[:-1])
        with open(path, "wb") as f:
            f.write(data)
        if checksum is not None:
            checksum.update(data)
        return len(list(self.read_shard(path))) + 1, len(data)

    def read_shard(self, path, stores=None):
        with open(path, "rb") as f:
            data = f.read()
        while data:
            n = int.from_bytes(data[:4], "big")
            yield data[4:4 + n]
            data = data[4 + n:]


def test_a_format_registered_is_tested_and_a_broken_one_fails(monkeypatch, tmp_path):
    monkeypatch.setitem(record_formats.FORMATS, "dropping", _DroppingFormat())
    assert "dropping" in every_format()  # the parametrization above takes it
    with pytest.raises(AssertionError, match="dropping"):
        check_round_trip(record_formats.FORMATS["dropping"], "dropping", str(tmp_path))
