"""read_pairs reads a chunk a block at a time: each pair as the encoder's line reader gives it
(`decode_line` per line), whatever the block size, `\\r`, invalid UTF-8 and the last newline."""

import pytest

from cleaning_helpers import scan
from transforms.clean import pair_reading
from transforms.clean.clean_pairs import with_chunk_facts
from transforms.encode.encode_pairs import plan_chunks
from transforms.formats.text_lines import InputError, decode_line
from transforms.storage.object_stores import ObjectStores, StoreSettings

SOURCE = (b"one\n\xe4\xb8\xad\xe6\x96\x87\nwith\r cr\n\nbad \xff byte\nsix\nseven\neight\nnine "
          b"\xc3\xa9\nten")
TARGET = b"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"


def _reference(source, target, on_invalid):
    """Line by line, as the encoder decodes: (number, source, target, newlines, bytes)."""
    out = []
    lines_s, lines_t = source.split(b"\n"), target.split(b"\n")
    for number, (raw_s, raw_t) in enumerate(zip(lines_s, lines_t), 1):
        end_s = "\n" if number < len(lines_s) else ""
        end_t = "\n" if number < len(lines_t) else ""
        s = decode_line(raw_s, "s", number, on_invalid)
        t = decode_line(raw_t, "t", number, on_invalid)
        if s is not None and t is not None:
            out.append((number, s, t, end_s, end_t, len(raw_s) + len(end_s),
                        len(raw_t) + len(end_t)))
    return out


def _read(tmp_path, source, target, on_invalid, chunk_lines):
    paths = []
    for name, data in (("s", source), ("t", target)):
        path = tmp_path / name
        path.write_bytes(data)
        paths.append(str(path))
    facts = scan(paths[0], chunk_lines), scan(paths[1], chunk_lines)
    ds = {"split": "train", "index": 0, "name": "s", "format": "lines"}
    stores = ObjectStores(StoreSettings())
    return [pair for chunk in plan_chunks(ds, paths[0], paths[1], *facts)
            if not chunk.get("unmatched")
            for pair in pair_reading.read_pairs(with_chunk_facts(chunk, *facts), stores,
                                                on_invalid)]


@pytest.mark.parametrize("block", [1, 3, 10000])
@pytest.mark.parametrize("chunk_lines", [4, 100])
@pytest.mark.parametrize("on_invalid", ["reject", "replace"])
def test_blocks_read_as_the_encoder_reads_lines(tmp_path, monkeypatch, block, chunk_lines,
                                                on_invalid):
    monkeypatch.setattr(pair_reading, "BLOCK_LINES", block)
    got = _read(tmp_path, SOURCE, TARGET, on_invalid, chunk_lines)
    assert got == _reference(SOURCE, TARGET, on_invalid)
    # and with the newline at the end of the source, the target without one
    got = _read(tmp_path, SOURCE + b"\n", TARGET[:-1], on_invalid, chunk_lines)
    assert got == _reference(SOURCE + b"\n", TARGET[:-1], on_invalid)


def test_invalid_utf8_names_the_first_bad_line_of_either_side(tmp_path):
    target = b"1\n\xfe\n3\n4\n5\n6\n7\n8\n9\n10\n"
    with pytest.raises(InputError) as caught:
        _read(tmp_path, SOURCE, target, "error", 100)
    assert str(caught.value).startswith(str(tmp_path / "t") + ":2:")


def test_only_the_wanted_lines(tmp_path):
    paths = []
    for name, data in (("s", SOURCE), ("t", TARGET)):
        (tmp_path / name).write_bytes(data)
        paths.append(str(tmp_path / name))
    facts = scan(paths[0], 100), scan(paths[1], 100)
    ds = {"split": "train", "index": 0, "name": "s", "format": "lines"}
    chunk = with_chunk_facts(plan_chunks(ds, paths[0], paths[1], *facts)[0], *facts)
    got = pair_reading.read_pairs(chunk, ObjectStores(StoreSettings()), "reject", {2, 5, 9})
    assert [pair for pair in _reference(SOURCE, TARGET, "reject") if pair[0] in {2, 5, 9}] \
        == list(got)
