"""pipeline/driver/encode: what the encode step plans (its chunks, with cleaning's drops, and
the rejects of the earlier steps it merges), the pass it builds, and the result it reads
back. The pass is built and translated as in a dry run, never run."""

import json
import os

from driver_fixtures import (applied, config, corpus, created, encode_step, layout,
                             pass_runner, prepared, write)
from pipeline.driver.datasets import plan_datasets

VOCABS = ("/v/vocab.src", "/v/vocab.tgt")


def setup(tmp_path, *flags):
    cfg = config(tmp_path, *flags)
    out = layout(cfg)
    run_pass = pass_runner()
    return out, run_pass, encode_step(cfg, out, run_pass)


def encode_result(out, **result):
    write(out.work("encode.json"), json.dumps(result))


def test_each_dataset_is_chunked_at_its_seek_points(tmp_path):
    out, run_pass, step = setup(tmp_path)
    ready = {"train": [prepared("train", 0, "a.en", "a.de", 25, every=10)],
             "dev": [prepared("dev", 0, "d.en", "d.de", 4)]}
    encode_result(out)
    step.run(ready, VOCABS, {"train": 2, "dev": 1})
    [(label, pipeline)] = run_pass.passes
    assert label == "encode 4 chunks into 1 dev shards, 2 train shards"
    chunks = created(pipeline, "Chunks")
    assert [(c["ds"]["split"], c["first_line"], c["num_lines"], c["source_offset"])
            for c in chunks] == [("dev", 0, 4, 0), ("train", 0, 10, 0), ("train", 10, 10, 100),
                                 ("train", 20, 5, 200)]
    assert not any("dropped" in c or "lengths_before" in c for c in chunks)
    assert "RejectFiles" not in applied(pipeline)  # nothing rejected before this step
    for name in ("fragments", "shards", "rejects"):
        assert os.path.isdir(out.work(name))


def test_the_extra_lines_of_a_longer_file_are_a_chunk_of_their_own(tmp_path):
    out, run_pass, step = setup(tmp_path, "--on_misaligned", "reject")
    p = prepared("train", 0, "a.en", "a.de", 5)
    p.target_facts = dict(p.target_facts, lines=7)
    encode_result(out)
    step.run({"train": [p]}, VOCABS, {"train": 1})
    chunks = created(run_pass.passes[0][1], "Chunks")
    assert [c.get("unmatched") for c in chunks] == [None, "target"]
    assert (chunks[1]["first_line"], chunks[1]["skip"]) == (5, 5)


def test_with_cleaning_every_chunk_skips_its_drops_and_measures_lengths_before(tmp_path):
    out, run_pass, step = setup(tmp_path)
    ready = {"train": [prepared("train", 0, "a.en", "a.de", 3, rejects_path="m.rejects"),
                       prepared("train", 1, "b.en", "b.de", 3, dropped="b.dropped",
                                cleaning_rejects="b.cleaning.rejects")]}
    encode_result(out)
    step.run(ready, VOCABS, {"train": 1})
    pipeline = run_pass.passes[0][1]
    chunks = created(pipeline, "Chunks")
    assert [(c["dropped"], c["lengths_before"]) for c in chunks] == [
        (None, True), ("b.dropped", True)]
    assert created(pipeline, "RejectFiles") == ["m.rejects", "b.cleaning.rejects"]


def test_the_result_is_read_back_as_the_pass_wrote_it(tmp_path):
    out, _, step = setup(tmp_path)
    shard = {"split": "train", "shard": 0, "records": 3}
    encode_result(out, shards=[shard], rejects=[{"split": "train", "count": 0}],
                  tokens=[["train", [1, 2, 3, 4]]], lengths=[["train", {"max": 9}]])
    shards, rejects, tokens, lengths = step.run(
        {"train": [prepared("train", 0, "a.en", "a.de", 3)]}, VOCABS, {"train": 1})
    assert shards == [shard]
    assert rejects == [{"split": "train", "count": 0}]
    assert tokens == {"train": [1, 2, 3, 4]}
    assert lengths == {"train": {"max": 9}}


def test_a_dry_run_plans_placeholder_chunks_and_rejects(tmp_path):
    tsv = write(tmp_path / "in" / "x.tsv", "a\tb\n")
    out, run_pass, step = setup(tmp_path)
    cfg = config(tmp_path, "--train_tsv", tsv, train=corpus(tmp_path))
    planned = {"train": plan_datasets(cfg, "train")}
    step.dry_run(planned, VOCABS, {"train": 3})
    [(label, pipeline)] = run_pass.passes
    assert label == "encode 2 chunks into 3 train shards"
    chunks = created(pipeline, "Chunks")
    assert [(c["ds"]["format"], c["source"], c["target"]) for c in chunks] == [
        ("lines", planned["train"][0].source, planned["train"][0].target),
        ("tsv", tsv, tsv)]
    assert created(pipeline, "RejectFiles") == [out.work("materialized", "x.rejects.jsonl")]
    assert not os.path.exists(out.work_dir)  # nothing was written
