"""The record formats' containers as their readers see them, and where their shards are built
(transforms/shards/record_formats.py).

ArrayRecord: Grain opens the shards without a word (it logs an ERROR per file of any group
size but 1, and Grain's global shuffle is why the format is offered), the records come back
in order, and a shard's size is the format's own: a 64 KiB-block footer and a 64 KiB
postscript block after the records, nothing more (README, "Output formats").

Where (issue 42, item 11): a shard of a format whose library writes local files (ArrayRecord,
Parquet) is built beside its name in the job's work directory, never in the system's
temporary directory, where a pass killed by a signal or a kill -9 left
`$TMPDIR/datagen-shard-*/shard.parquet` behind for good.
"""

import logging
import os
import tempfile

import google_crc32c
import pytest

from pipeline.output.names import PROBLEM_MAX
from pipeline.runtime.errors import DatagenError
from transforms.shards.record_formats import (ARRAY_RECORD_OPTIONS, FORMATS, TEXT_FORMATS,
                                              ArrayRecordFormat, ShardNames, _LocalFileFormat,
                                              parse_shard_name, problem_of_head, record_format)

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


# the formats whose library writes local files (`_LocalFileFormat`), from the registry
LOCAL_FORMATS = [name for name, fmt in FORMATS.items() if isinstance(fmt, _LocalFileFormat)]


@pytest.mark.parametrize("name", LOCAL_FORMATS)
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


@pytest.mark.parametrize("name", LOCAL_FORMATS)
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
    from transforms.shards.format_base import scratch_pid
    assert scratch_pid("datagen-shard-4242-abc_12") == 4242
    assert scratch_pid("datagen-read-4242-abc") is None
    assert scratch_pid("datagen-shard-x-abc") is None


def test_no_problem_names_its_shards_as_another_problems_pair_shards():
    """Problem `p`'s pair en-de and problem `p-en-de` both wrote
    `p-en-de-train-00000-of-00001`: a second job in the directory overwrote a complete
    output. A pair's shards carry a separator no problem name holds; a single pair's names
    stay T2T's."""
    from pipeline.output.names import check_name
    tfrecord = record_format("tfrecord")
    pair_name = ShardNames("p", tfrecord).name("train", 0, 1, "en-de")
    assert pair_name != ShardNames("p-en-de", tfrecord).name("train", 0, 1)
    assert ShardNames("p-en-de", tfrecord).name("train", 0, 1) == "p-en-de-train-00000-of-00001"
    with pytest.raises(DatagenError):
        check_name(pair_name.split("-train-")[0], "--problem", PROBLEM_MAX)
    assert ShardNames("p", tfrecord).is_shard(pair_name, "train", ["en-de"])
    assert not ShardNames("p", tfrecord).is_shard("p-en-de-train-00000-of-00001", "train",
                                                  ["en-de"])
    assert problem_of_head(parse_shard_name(pair_name)[0]) == "p"


@pytest.mark.parametrize("name", TEXT_FORMATS)
def test_a_text_shard_is_two_line_aligned_files_read_back_as_its_records(tmp_path, scratch,
                                                                        name):
    import gzip
    from transforms.shards.record_formats import format_of, parse_shard_name
    from transforms.shards.text_format import text_record
    fmt = FORMATS[name]
    path = str(tmp_path / ("p-train-00000-of-00001" + fmt.suffix))
    pairs = [("Hello  world .", "你好 ， 世界 。"), ("a|b", "\tc")]
    records = [text_record(s.encode(), t.encode()) for s, t in pairs]
    checksum = google_crc32c.Checksum()
    count, size = fmt.write_shard(path, iter(records), checksum=checksum)
    source, target = fmt.files(path)
    assert target == str(tmp_path / ("p-train-00000-of-00001.tgt" + fmt.suffix[4:]))
    data = []
    for side, file in enumerate((source, target)):
        with open(file, "rb") as f:
            data.append(f.read())
    text = [gzip.decompress(d) if name == "text.gz" else d for d in data]
    assert text == [b"".join(p[side].encode() + b"\n" for p in pairs) for side in (0, 1)]
    assert (count, size) == (2, len(data[0]) + len(data[1]))
    assert checksum.digest() == google_crc32c.Checksum(data[0] + data[1]).digest()
    assert list(fmt.read_shard(path)) == records
    for file in (source, target):  # either file names the shard's format
        assert format_of(file) is fmt and parse_shard_name(os.path.basename(file))[4] is fmt
    assert os.listdir(scratch) == []


@pytest.mark.parametrize("name,ext", [("text", ""), ("text.gz", ".gz")])
def test_text_shard_files_end_with_the_languages_and_name_each_other(name, ext):
    """A one-pair output's text shards end with its languages, a pair's own with the pair's;
    either file names the shard's two (the commit, the checks and inspect follow them)."""
    names = ShardNames("p", FORMATS[name], ("en", "zh"))
    one = names.name("train", 0, 2)
    assert one == "p-train-00000-of-00002.en" + ext
    both = ("p-train-00000-of-00002.en" + ext, "p-train-00000-of-00002.zh" + ext)
    assert names.files(one) == names.files(both[1]) == both
    assert names.files("/out/" + both[1]) == tuple("/out/" + f for f in both)
    pair = names.name("dev", 1, 3, "de-fr")
    assert pair == "p~de-fr-dev-00001-of-00003.de" + ext
    assert names.files(pair)[1] == "p~de-fr-dev-00001-of-00003.fr" + ext
    for file in both:  # with the output's languages, either file is the shard's, bound
        parsed = parse_shard_name(file, [("en", "zh")])
        assert parsed[:4] == ("p", "train", 0, 2) and parsed[4].files(file) == both
    # same-language pairs would give two files one name: named src and tgt
    assert ShardNames("p", FORMATS[name], ("en", "en")).name("train", 0, 1).endswith(
        ".src" + ext)


def test_a_text_shards_ending_is_checked_against_the_outputs_languages():
    """Deleting old shards asks with the languages (`langs`): a user's `{shard}.bak`, or a
    language no output had, is not the job's; a pair's shard must end with one of its
    languages. Without them (a reader given a pattern), the format is known, not the other
    file: reading says so in one line."""
    ours = [("en", "zh")]
    assert parse_shard_name("p-train-00000-of-00001.bak", ours) is None
    assert parse_shard_name("p-train-00000-of-00001.de", ours) is None
    assert parse_shard_name("p~en-de-train-00000-of-00001.zh") is None
    assert parse_shard_name("p~en-de-train-00000-of-00001.de.gz")[4].name == "text.gz"
    assert parse_shard_name("p-train-00000-of-00001.src", ours)[4] is FORMATS["text"]  # older
    assert parse_shard_name("p-train-00000-of-00001.parquet", ours)[4] is FORMATS["parquet"]
    names = ShardNames("p", FORMATS["tfrecord"])
    assert names.is_shard("p-train-00000-of-00001.zh", "train", (), ours)
    assert not names.is_shard("p-train-00000-of-00001.bak", "train", (), ours)
    loose = parse_shard_name("p-train-00000-of-00001.en")[4]
    assert loose.name == "text"
    with pytest.raises(ValueError, match="languages are unknown"):
        loose.files("p-train-00000-of-00001.en")
