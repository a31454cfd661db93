"""The record formats' containers as their readers see them (transforms/record_formats.py).

ArrayRecord: Grain opens the shards without a word (it logs an ERROR per file of any group
size but 1, and Grain's global shuffle is why the format is offered), the records come back
in order, and a shard's size is the format's own: a 64 KiB-block footer and a 64 KiB
postscript block after the records, nothing more (README, "Output formats").
"""

import logging
import os

import pytest

from transforms.record_formats import ARRAY_RECORD_OPTIONS, ArrayRecordFormat

BLOCK = 64 * 1024


def _records(n):
    return [b"\x0a" + bytes([i % 251]) * (100 + i % 60) for i in range(n)]


@pytest.fixture(scope="module")
def grain_module():
    from pipeline.runtime import console
    return console.quiet_import("grain")


def test_grain_reads_an_array_record_shard_without_a_log_line(tmp_path, grain_module, caplog):
    path = str(tmp_path / "p-train-00000-of-00001.array_record")
    records = _records(700)
    assert ArrayRecordFormat().write_shard(path, records)[0] == 700
    with caplog.at_level(logging.DEBUG):
        source = grain_module.sources.ArrayRecordDataSource([path])
        got = [source[i] for i in range(len(source))]
        shuffled = list(grain_module.MapDataset.source(source).shuffle(seed=3))
    assert got == records
    assert sorted(shuffled) == sorted(records)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    from array_record.python.array_record_module import ArrayRecordReader
    reader = ArrayRecordReader(path)
    try:
        assert reader.writer_options_string().startswith("group_size:1,")
    finally:
        reader.close()


def test_array_record_shards_are_the_records_plus_the_formats_two_tail_blocks(tmp_path):
    """Not a byte of padding beyond the format's: its footer ends on a 64 KiB boundary and a
    64 KiB postscript block follows (array_record pads both whatever the writer options say;
    its reader looks for the postscript at size - 64 KiB). So an empty shard is 128 KiB and
    the records' chunks are not padded to blocks."""
    fmt = ArrayRecordFormat()
    empty = str(tmp_path / "empty.array_record")
    assert fmt.write_shard(empty, []) == (0, 2 * BLOCK)
    records = _records(2000)
    full = str(tmp_path / "full.array_record")
    _, size = fmt.write_shard(full, records)
    assert size == os.path.getsize(full) and size % BLOCK == 0
    payload = sum(len(r) for r in records)
    # the records' chunks (each record plus its chunk header), then at most the footer's
    # block and the postscript's block
    assert payload < size <= payload + 80 * len(records) + 2 * BLOCK
    assert list(fmt.read_shard(full)) == records
    assert "pad_to_block_boundary" not in ARRAY_RECORD_OPTIONS
