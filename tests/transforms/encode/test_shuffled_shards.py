"""WriteShuffledShards and WriteRejects on TestPipeline, read back with our TFRecord reader.

What the shard writer promises, independently of how keys are made: every shard of every
split is written (empty ones too), under T2T's file names, each holding exactly the records of
its fragments, sorted by (key, dataset, line); the rejects writer sorts by position in the
input. The input order (bundles, workers) must not matter.
"""

import json
import os
import random

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from beam_unit import test_pipeline
from transforms.formats.rejects import reject_record
from transforms.shards.shard_fragments import fragment_name, read_fragment, write_fragment
from transforms.encode.shuffled_shards import WriteRejects, WriteShuffledShards
from transforms.shards.record_formats import DEFAULT_FORMAT, ShardNames, record_format
from transforms.formats.tfrecord_framing import read_records


def _read_shard(path):
    with open(path, "rb") as f:
        return list(read_records(f))


def shard_file_name(problem, split, shard, num_shards):
    """The name the job gives a shard in the default format (`ShardNames.name`)."""
    return ShardNames(problem, record_format(DEFAULT_FORMAT)).name(split, shard, num_shards)


def test_shard_file_name_is_t2ts():
    assert shard_file_name("translate_enzh_wmt8k", "train", 3, 10) == (
        "translate_enzh_wmt8k-train-00003-of-00010")


def _fragments(tmp_path, expected, rng):
    """Each shard's records spread over up to 3 fragment files (as encode chunks leave them),
    as ((split, shard), fragment) elements in random order."""
    os.makedirs(tmp_path / "fragments")
    elements = []
    for (split, shard), records in expected.items():
        parts = {}
        for record in records:
            parts.setdefault(rng.randrange(3), []).append(record)
        for chunk, entries in parts.items():
            path = str(tmp_path / "fragments" / fragment_name(split, shard, 0, chunk))
            write_fragment(path, entries)
            by_dataset = {}
            for _, dataset_index, _, _ in entries:
                by_dataset[dataset_index] = by_dataset.get(dataset_index, 0) + 1
            elements.append(((split, shard), {"path": path, "records": len(entries),
                                              "by_dataset": sorted(by_dataset.items())}))
    rng.shuffle(elements)
    return elements


def test_every_shard_written_sorted_by_key_whatever_the_fragments(tmp_path):
    rng = random.Random(7)
    num_shards = {"train": 3, "dev": 2}
    # (split, shard) -> [(key, dataset_index, line, record)] in the order the file must hold
    expected = {("train", 0): [], ("train", 1): [], ("train", 2): [], ("dev", 0): [],
                ("dev", 1): []}
    for n in range(60):
        split, shard = ("train", rng.choice([0, 2])) if n % 4 else ("dev", 0)
        key = rng.randrange(1 << 64) if n % 10 else 12345  # one key shared by 6 records
        value = (key, n % 3, n, b"%s-%d" % (split.encode(), n))
        expected[(split, shard)].append(value)
    for records in expected.values():
        records.sort()  # ties on the key are broken by dataset index, then line
    elements = _fragments(tmp_path, expected, rng)
    # a runner that retried encode bundles and kept both attempts' reports of a fragment
    elements += rng.sample(elements, 4)
    shard_dir = tmp_path / "shards"
    os.makedirs(shard_dir)
    with test_pipeline() as p:
        reports = (p | beam.Create(elements)
                   | beam.Reshuffle()
                   | WriteShuffledShards("p", num_shards, str(shard_dir))
                   | beam.Map(lambda r: (r["split"], r["shard"], r["name"], r["records"],
                                         r["by_dataset"])))

        def report(where, records):
            by_dataset = {}
            for _, dataset_index, _, _ in records:
                by_dataset[dataset_index] = by_dataset.get(dataset_index, 0) + 1
            split, shard = where
            return (split, shard, shard_file_name("p", split, shard, num_shards[split]),
                    len(records), sorted(by_dataset.items()))

        assert_that(reports, equal_to([report(w, r) for w, r in expected.items()]))
    assert sorted(os.listdir(shard_dir)) == sorted(
        shard_file_name("p", split, shard, num_shards[split]) for split, shard in expected)
    for (split, shard), records in expected.items():
        path = shard_dir / shard_file_name("p", split, shard, num_shards[split])
        assert _read_shard(path) == [record for _, _, _, record in records], (split, shard)
    assert _read_shard(shard_dir / "p-train-00001-of-00003") == []


def test_a_fragment_written_by_two_attempts_at_once_is_whole(tmp_path):
    """A retried encode bundle writes the same fragment as the attempt it replaces, which may
    still be writing (its task manager was lost, its SDK worker not yet): each attempt writes
    a file of its own, and whichever rename lands last leaves a whole fragment."""
    from transforms.storage import file_io
    path = str(tmp_path / "train-00000-d0-l0.frag")
    entries = [(key, 0, key, b"r%d" % key * 50) for key in range(200)]
    write_fragment(path + ".expected", entries)
    with open(path + ".expected", "rb") as f:
        whole = f.read()
    with file_io.create_atomically(path) as lost:  # the first attempt, halfway through
        lost.write(whole[:len(whole) // 2])
        write_fragment(path, entries)  # the retry, start to end
        with open(path, "rb") as f:
            assert f.read() == whole
        lost.write(whole[len(whole) // 2:])
    with open(path, "rb") as f:
        assert f.read() == whole
    assert [k for k, _ in read_fragment(path)] == sorted(e[:3] for e in entries)
    assert sorted(os.listdir(tmp_path)) == sorted([os.path.basename(path),
                                                   os.path.basename(path) + ".expected"])


def test_a_fragment_cut_short_is_an_error(tmp_path):
    path = str(tmp_path / "f.frag")
    write_fragment(path, [(5, 0, 1, b"abc"), (3, 0, 2, b"de")])
    assert [k for k, _ in read_fragment(path)] == [(3, 0, 2), (5, 0, 1)]
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:-3])
    with pytest.raises(ValueError, match="f.frag: fragment damaged or cut short"):
        list(read_fragment(path))


def test_rejects_sorted_by_position_with_counts_per_dataset_and_reason(tmp_path):
    datasets = [{"split": "train", "name": "a.tsv", "index": 0, "source": "a.tsv", "target": None},
                {"split": "train", "name": "b.en", "index": 1, "source": "b.en", "target": "b.zh"},
                {"split": "dev", "name": "c.en", "index": 0, "source": "c.en", "target": "c.zh"}]
    rejects = [
        reject_record(datasets[1], 9, "line 9", "empty_source", "", "目标"),
        reject_record(datasets[0], 4, "line 4", "too_few_columns", "x" * 600, ""),
        reject_record(datasets[1], 2, "line 2", "empty_source", "", "t"),
        reject_record(datasets[0], 1, "line 1", "empty_line", "", ""),
        reject_record(datasets[2], 5, "line 5", "line_too_long", "s", "t"),
    ]
    with test_pipeline() as p:
        reports = (p | beam.Create([(r["split"], r) for r in rejects])
                   | WriteRejects(str(tmp_path)))
        assert_that(reports, equal_to([
            {"split": "train", "name": "train.jsonl", "rejected": 4,
             "by_dataset_reason": [("0\tempty_line", 1), ("0\ttoo_few_columns", 1),
                                   ("1\tempty_source", 2)]},
            {"split": "dev", "name": "dev.jsonl", "rejected": 1,
             "by_dataset_reason": [("0\tline_too_long", 1)]}]))
    with open(tmp_path / "train.jsonl", encoding="utf-8") as f:
        train = [json.loads(line) for line in f]
    assert [(r["dataset"], r["where"]) for r in train] == [
        ("a.tsv", "line 1"), ("a.tsv", "line 4"), ("b.en", "line 2"), ("b.en", "line 9")]
    assert train[1]["source"] == "x" * 500 and train[3]["target"] == "目标"
    assert train[3]["file"] == "b.en + b.zh"
    assert sorted(os.listdir(tmp_path)) == ["dev.jsonl", "train.jsonl"]


def test_rejects_files_of_earlier_steps_are_merged_in_position_order(tmp_path):
    """An earlier step's rejects file (one dataset's, in line order) goes in by name and is
    streamed into place among the records; one out of order fails the pass."""
    from transforms.formats.rejects import reject_line
    from transforms.encode.shuffled_shards import rejects_file_split
    a = {"split": "train", "name": "a.en", "index": 0, "source": "a.en", "target": "a.zh"}
    b = dict(a, name="b.en", index=1, source="b.en", target="b.zh")
    earlier = tmp_path / "train-1.rejects.jsonl"
    earlier.write_bytes(b"".join(reject_line(reject_record(b, n, "line %d" % n, "duplicate",
                                                           "s", "t")) for n in (1, 3, 8)))
    empty = tmp_path / "train-0.rejects.jsonl"
    empty.write_bytes(b"")
    out = tmp_path / "out"
    own = [reject_record(b, 5, "line 5", "empty_source", "", "t"),
           reject_record(a, 2, "line 2", "empty_target", "s", "")]
    with test_pipeline() as p:
        files = (p | "Files" >> beam.Create([str(earlier), str(empty)])
                 | beam.FlatMap(rejects_file_split))
        reports = (((p | beam.Create([(r["split"], r) for r in own])), files) | beam.Flatten()
                   | WriteRejects(str(out)))
        assert_that(reports, equal_to([
            {"split": "train", "name": "train.jsonl", "rejected": 5,
             "by_dataset_reason": [("0\tempty_target", 1), ("1\tduplicate", 3),
                                   ("1\tempty_source", 1)]}]))
    with open(out / "train.jsonl", encoding="utf-8") as f:
        assert [(r["dataset"], r["ordinal"]) for r in map(json.loads, f)] == [
            ("a.en", 2), ("b.en", 1), ("b.en", 3), ("b.en", 5), ("b.en", 8)]
    earlier.write_bytes(reject_line(reject_record(b, 3, "line 3", "duplicate", "s", "t"))
                        + reject_line(reject_record(b, 1, "line 1", "duplicate", "s", "t")))
    with pytest.raises(Exception, match="not in order"):
        with test_pipeline() as p:
            _ = (p | beam.Create([str(earlier)]) | beam.FlatMap(rejects_file_split)
                 | WriteRejects(str(tmp_path / "out2")))
