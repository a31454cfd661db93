"""Pairs travel as data: a job of 60 language pairs builds the same Beam stages as a job of
3 (no branch per pair), so its pipelines, and what a runner holds for them, do not grow with
the number of pairs; the shard plan gives each pair its share of the shards."""

import apache_beam as beam

from driver_fixtures import write
from pipeline.driver.datasets import plan_datasets
from pipeline.driver.encode import build_encode_pass, plan_shards
from pipeline.driver.options import parse_command_line
from pipeline.driver.prepare import Prepared
from transforms.encode.encode_pairs import plan_chunks
from transforms.vocab.subword_learning import SubwordLearner
from transforms.vocab.learners import LearnerInputs


def _config(tmp_path, pairs, *flags):
    write(tmp_path / "t.en", "a\nb\n")
    for i in range(pairs):
        write(tmp_path / ("t.x%d" % i), "c\nd\n")
    path = tmp_path / ("c%d.yaml" % pairs)
    path.write_text("corpora:\n" + "".join(
        "  - {name: p%d, source_lang: en, target_lang: x%d, train: {source: t.en, "
        "target: t.x%d}, weight: %d}\n" % (i, i, i, 1 + i % 3) for i in range(pairs)))
    return parse_command_line(["--corpora", str(path), "--output_dir", str(tmp_path / "out")]
                              + list(flags)).config


def _prepared(config, lines):
    facts = {"bytes": 4 * lines, "lines": lines, "checkpoints": [(0, 0)],
             "first_invalid_utf8_line": None}
    return {"train": [Prepared(ds.spec(), ds.source, ds.target or "", facts, facts, lines)
                      for ds in plan_datasets(config, "train")]}


def _stages(build):
    pipeline = beam.Pipeline()
    build(pipeline)
    return sorted(t.unique_name.split("/")[0] + "/" + t.spec.urn
                  for t in pipeline.to_runner_api().components.transforms.values())


def test_sixty_pairs_build_the_stages_of_three(tmp_path):
    graphs = []
    for pairs in (3, 60):
        config = _config(tmp_path, pairs)
        prepared = _prepared(config, 2)
        plan = plan_shards(prepared, config)
        assert [p for p, _, _ in plan.pair_shards["train"]] == sorted(
            "en-x%d" % i for i in range(pairs))
        chunks = [c for p in prepared["train"] for c in plan_chunks(
            p.ds, p.source_lines, p.target_lines, p.source_facts, p.target_facts)]
        encode = _stages(lambda p: build_encode_pass(
            p, chunks, ("v", "v"), 0, "p", plan.num_shards, {
                "fragments": "f", "shards": "s", "rejects": "r"}, "e.json", config, (),
            {ds["pair"]: [2] for ds in (c["ds"] for c in chunks)}, plan.pair_shards))
        files = {"shared": [(p.source_lines, 4, None, None, (2, 1)) for p in prepared["train"]]}
        learner = SubwordLearner(LearnerInputs(str(tmp_path), files, config, ("<2x0>",)))
        first = learner.next_pass()
        vocab = _stages(lambda p: first.build(p, None))
        graphs.append((encode, vocab))
    assert graphs[0] == graphs[1]


def test_each_pair_gets_its_share_of_the_shards_and_mix_shards_repeats_small_pairs(tmp_path):
    config = _config(tmp_path, 3, "--num_train_shards", "10")
    prepared = _prepared(config, 2)
    for p, lines in zip(prepared["train"], (600, 300, 100)):
        p.units = lines
    plan = plan_shards(prepared, config)
    assert plan.pair_shards["train"] == [("en-x0", 0, 6), ("en-x1", 6, 3), ("en-x2", 9, 1)]
    assert plan.num_shards == {"train": 10} and plan.copies == {}
    config = _config(tmp_path, 3, "--mix_shards", "--sampling_temperature", "1")
    plan = plan_shards(prepared, config)
    assert plan.pair_shards == {} and plan.num_shards == {"train": 10}
    # T = 1: rates are lines x weight (1, 2, 3): 600, 600, 300 of 1500; the largest pair
    # against its rate (x0: 600 / 0.4) is written once, the others up to their rates
    assert {i: copies[1:] for i, copies in plan.copies.items()} == {
        0: [600, 600], 1: [300, 600], 2: [100, 300]}
