"""transforms/record_formats: where a shard of a format whose library writes local files
(ArrayRecord, Parquet) is built (issue 42, item 11). A local shard is built beside its name in
the job's work directory, never in the system's temporary directory, where a pass killed by
a signal or a kill -9 left `$TMPDIR/datagen-shard-*/shard.parquet` behind for good."""

import os
import tempfile

import google_crc32c
import pytest

from transforms.record_formats import FORMATS


def _examples(n):
    from transforms.formats.example_proto import Int64FeaturesWriter
    writer = Int64FeaturesWriter()
    return [writer.serialize({"inputs": [i, 1], "targets": [i + 1, 2, 1]}) for i in range(n)]


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """The system's temporary directory, empty, for this test."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


@pytest.mark.parametrize("name", ["array_record", "parquet"])
def test_a_local_shard_is_built_beside_its_name_not_in_the_temporary_directory(
        tmp_path, scratch, name):
    fmt = FORMATS[name]
    path = str(tmp_path / "work" / "shards" / ("p-train-00000-of-00001" + fmt.suffix))
    records = _examples(100)
    seen = []

    def watched():
        for i, record in enumerate(records):
            if i == 50:  # mid-write: where is the shard?
                seen.append((sorted(os.listdir(scratch)),
                             sorted(os.listdir(os.path.dirname(path)))))
            yield record
    checksum = google_crc32c.Checksum()
    count, size = fmt.write_shard(path, watched(), checksum=checksum)
    (in_tmp, beside), = seen
    assert in_tmp == []
    assert len(beside) == 1 and beside[0].startswith(".p-train-00000-of-00001" + fmt.suffix
                                                     + ".tmp-")
    assert os.listdir(os.path.dirname(path)) == [os.path.basename(path)]
    with open(path, "rb") as f:
        data = f.read()
    assert (count, size) == (100, len(data))
    assert checksum.digest() == google_crc32c.Checksum(data).digest()
    assert list(fmt.read_shard(path)) == records


@pytest.mark.parametrize("name", ["array_record", "parquet"])
def test_an_interrupted_local_shard_leaves_no_file(tmp_path, scratch, name):
    fmt = FORMATS[name]
    path = str(tmp_path / "shards" / ("p-train-00000-of-00001" + fmt.suffix))

    def interrupted():
        yield from _examples(10)
        raise KeyboardInterrupt  # as a pass stopped in its thread (PassStopped) is
    with pytest.raises(KeyboardInterrupt):
        fmt.write_shard(path, interrupted())
    assert os.listdir(tmp_path / "shards") == [] and os.listdir(scratch) == []


def test_scratch_names_carry_the_writers_pid():
    from transforms.record_formats import scratch_pid
    assert scratch_pid("datagen-shard-4242-abc_12") == 4242
    assert scratch_pid("datagen-read-4242-abc") is None
    assert scratch_pid("datagen-shard-x-abc") is None
