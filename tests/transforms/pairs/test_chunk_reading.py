"""`transforms.pairs.chunk_reading` without Beam: a chunk's raw lines become blocks of pairs or
rejects, in line order (invalid UTF-8, dropped lines, short files, unmatched lines)."""

import pytest

from transforms.pairs import chunk_reading
from transforms.pairs.chunk_reading import (ChunkSpan, LineReject, PairBlock, read_chunk,
                                      read_unmatched)
from transforms.cleaning.dropped_lines import mark, new_bitmap
from transforms.formats.text_lines import InputError

SOURCE = [b"hello world", b"", b"  hello  ", b"w\xffrld", b"world hello", b"hello"]
TARGET = [b"\xe4\xbd\xa0\xe5\xa5\xbd", b"x", b"world\r", b"hello", b"  ", b"world"]
SPAN = ChunkSpan("s.en", "s.zh", 10, 6)  # lines 11..16 of both files


def _read(on_invalid="reject", dropped=None, measure=False, span=SPAN, source=SOURCE):
    return list(read_chunk(iter(source), iter(TARGET), span, on_invalid, 0, dropped, measure))


def test_lines_become_blocks_and_rejects_in_line_order(monkeypatch):
    monkeypatch.setattr(chunk_reading, "BLOCK_PAIRS", 2)
    assert _read() == [
        LineReject(12, "empty_source", "", "x"),
        PairBlock([(11, "hello world", "你好"), (13, "hello", "world")], False),
        LineReject(14, "invalid_utf8", "w\ufffdrld", "hello"),
        LineReject(15, "empty_target", "world hello", ""),
        PairBlock([(16, "hello", "world")], False)]


def test_keep_raw_blocks_hold_the_lines_right_stripped_as_opusfilter_writes_them(
        monkeypatch):
    monkeypatch.setattr(chunk_reading, "BLOCK_PAIRS", 2)
    blocks = [item for item in read_chunk(iter(SOURCE), iter(TARGET), SPAN, "reject", 0,
                                          keep_raw=True) if isinstance(item, PairBlock)]
    assert [block.raw for block in blocks] == [
        [("hello world", "你好"), ("  hello", "world")], [("hello", "world")]]
    assert blocks[0].pairs[1] == (13, "hello", "world")  # T2T's strip, for the ids


def test_invalid_utf8_fails_naming_the_file_and_line_or_is_replaced():
    with pytest.raises(InputError, match="s.en.*14"):
        _read("error")
    blocks = [item for item in _read("replace") if isinstance(item, PairBlock)]
    assert (14, "w\ufffdrld", "hello") in blocks[0].pairs


def test_dropped_lines_are_skipped_or_only_measured():
    dropped = new_bitmap(20)
    for number in (11, 12, 16):  # 12 would be rejected: not measured either
        mark(dropped, number)
    skipped = _read(dropped=bytes(dropped))
    assert [i for i in skipped if isinstance(i, PairBlock)] == [
        PairBlock([(13, "hello", "world")], False)]
    measured = _read(dropped=bytes(dropped), measure=True)
    assert measured[-1] == PairBlock([(11, "hello world", "你好"), (16, "hello", "world")], True)
    assert measured[:-1] == skipped


def test_a_file_shorter_than_its_chunk_is_an_error():
    with pytest.raises(ValueError, match="line 14 is missing"):
        _read(source=SOURCE[:3])


def test_unmatched_lines_are_rejects_of_their_side():
    lines = iter([b"skip me", b" tail one ", b"tail two"])
    assert list(read_unmatched(lines, "s.en", "source", 40, 1)) == [
        LineReject(41, "unmatched_source_line", "tail one", ""),
        LineReject(42, "unmatched_source_line", "tail two", "")]
