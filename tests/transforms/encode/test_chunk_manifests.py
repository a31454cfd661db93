"""A group's manifest: written after its fragment files, it lets a rerun of the same key replay
each of its chunks' outputs, and only when the key, the chunk and every fragment file's bytes
are as recorded (`transforms.encode.chunk_manifests`)."""

import os

from apache_beam.pvalue import TaggedOutput

from transforms.contracts.elements import ChunkLengths
from transforms.encode import chunk_manifests
from transforms.encode.chunk_manifests import ChunkRecorder, Resume
from transforms.shards.fragment_groups import FragmentGroup


def _chunk(run_dir):
    return {"ds": {"split": "train", "index": 0}, "source": "/in/a.en", "target": "/in/a.zh",
            "first_line": 200, "num_lines": 100, "source_offset": 9, "target_offset": 12,
            "dropped": os.path.join(run_dir, "cleaning", "d0.bitmap")}


def _other_chunk(run_dir):
    return dict(_chunk(run_dir), first_line=300, source_offset=99, target_offset=120)


def _reusable(resume, fragments, chunk):
    return chunk_manifests.ManifestIndex(resume, fragments, None).reusable(chunk)


def _finished(tmp_path, key="k1"):
    """Two finished chunks in one group: its two fragment files written, then its manifest;
    (resume, chunk, fragment dir, the first chunk's outputs, fragment paths)."""
    run_dir = str(tmp_path / "run-a")
    fragments = str(tmp_path / "fragments")
    os.makedirs(fragments)
    os.makedirs(str(tmp_path / "chunks"))
    resume = Resume(key, str(tmp_path / "chunks"), run_dir, True)
    chunk = _chunk(run_dir)
    group, outputs, other = FragmentGroup(None), [], []
    for shard, entries in ((0, [(5, 0, 201, b"r1"), (3, 0, 200, b"r0")]),
                           (2, [(2 ** 63, 0, 202, b"r2")])):
        path = group.add("train", shard, os.path.join(fragments, "train-%05d-d0-l200.frag"
                                                      % shard), entries)
        outputs.append((("train", shard), {"path": path, "records": len(entries),
                                           "by_dataset": [[0, len(entries)]]}))
    path = group.add("train", 0, os.path.join(fragments, "train-00000-d0-l300.frag"),
                     [(4, 0, 300, b"r3")])  # the second chunk's run goes to the same file
    other.append((("train", 0), {"path": path, "records": 1, "by_dataset": [[0, 1]]}))
    checks = group.flush()
    assert sorted(os.listdir(fragments)) == ["train-00000-d0-l200.frag",
                                             "train-00002-d0-l200.frag"]
    outputs += [TaggedOutput("rejects", ("train", {"line": 7, "reason": "empty"})),
                TaggedOutput("stats", ("train", [10, 1, 12, 0])),
                TaggedOutput("lengths", ("train", ChunkLengths({3: 2, 10: 1}, {4: 3}, {4: 2, 10: 1},
                                                               [30, 40], [9, 12], {4: 3})))]
    chunk_manifests.write_manifest([(chunk, outputs, {"train.pairs_read": 100}),
                                    (_other_chunk(run_dir), other, {})], checks, resume, None)
    return resume, chunk, fragments, outputs, sorted(checks)


def _same(replayed, outputs):
    def plain(o):
        return (o.tag, o.value) if isinstance(o, TaggedOutput) else o
    assert [plain(o) for o in replayed] == [plain(o) for o in outputs]


def test_a_finished_chunk_replays_its_outputs_in_a_rerun_with_another_run_dir(tmp_path):
    resume, chunk, fragments, outputs, _ = _finished(tmp_path)
    rerun = resume._replace(run_dir=str(tmp_path / "run-b"))  # another run id
    index = chunk_manifests.ManifestIndex(rerun, fragments, None)
    manifest = index.reusable(_chunk(rerun.run_dir))
    assert manifest is not None and manifest["counters"] == {"train.pairs_read": 100}
    assert index.reusable(_other_chunk(rerun.run_dir))["counters"] == {}
    replayed = list(chunk_manifests.replay(manifest, fragments))
    _same(replayed, outputs)
    assert isinstance(replayed[-1].value[1], ChunkLengths)  # the combiner's element type
    assert isinstance(replayed[0][0], tuple)  # a key that crosses a GroupByKey


def test_another_key_or_another_chunk_is_not_reused(tmp_path):
    resume, chunk, fragments, _, _ = _finished(tmp_path)
    assert _reusable(resume._replace(key="k2"), fragments, chunk) is None
    for field, value in (("num_lines", 50), ("source_offset", 10), ("source", "/in/b.en")):
        assert _reusable(resume, fragments, dict(chunk, **{field: value})) is None, field
    assert _reusable(resume, fragments, chunk) is not None


def test_a_fragment_cut_changed_or_gone_and_a_cut_manifest_are_not_reused(tmp_path):
    for damage in ("truncate", "flip", "delete", "manifest"):
        case = tmp_path / damage
        case.mkdir()
        resume, chunk, fragments, _, paths = _finished(case)
        if damage == "manifest":
            name, = [os.path.join(resume.manifest_dir, n) for n in os.listdir(resume.manifest_dir)]
            with open(name, "r+b") as f:
                f.truncate(os.path.getsize(name) // 2)
        elif damage == "delete":
            os.remove(paths[1])
        else:
            with open(paths[0], "r+b") as f:
                data = f.read()
                f.seek(0)
                f.truncate()
                f.write(data[:-1] if damage == "truncate" else data[:-1] + bytes([data[-1] ^ 1]))
        assert _reusable(resume, fragments, chunk) is None, damage
        # the other chunk of the group shares the first shard's file
        assert (_reusable(resume, fragments, _other_chunk(resume.run_dir)) is None) == (
            damage not in ("delete",)), damage


def test_the_recorder_keeps_what_one_chunk_added():
    recorder = ChunkRecorder()
    recorder.inc("train.pairs_read", 3)
    recorder.inc("train.pairs_read", 2)
    recorder.inc("train.rejected.empty", 0)
    assert recorder.take() == {"train.pairs_read": 5}
    assert recorder.take() == {}
