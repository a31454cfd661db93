"""Unit tests of the subword refinement PTransforms (`transforms.vocab.subword_refine`) on
TestPipeline with a tiny corpus, against the plain-Python reference learner: BuildTokenIndexes,
LearnSubwordVocabs, the planning of a round's work items (the same on a real corpus:
test_subword_refine_real_corpus.py, slow)."""

import collections
import os
import sys

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from beam_unit import test_pipeline
from repo_paths import DATA_DIR
from transforms.codecs import subword_learner as learner
from transforms.codecs import tokenizer
from transforms.vocab.subword_refine import (BuildTokenIndexes, LearnSubwordVocabs,
                                       _RoundPlan, _work_items)


TARGET = 120


@pytest.fixture(scope="module")
def tiny_counts():
    """T2T token counts of the first 30 lines of an English and a German file."""
    counts = {}
    for name, side in (("de", "ende-opennmt/train.de"), ("en", "enzh-mlqe-pe/train.en")):
        c = collections.Counter()
        with open(os.path.join(DATA_DIR, side), encoding="utf-8") as f:
            for _, line in zip(range(30), f):
                c.update(tokenizer.encode(line.strip()))
        counts[name] = dict(c)
    return counts


def _chosen(reports):
    """[(round, {(name, min_count): vocab})] -> [(name, probes still wanted, chosen vocab)]."""
    vocabs, sizes = {}, collections.defaultdict(dict)
    for _, round_vocabs in reports:
        vocabs.update(round_vocabs)
        for (name, min_count), vocab in round_vocabs.items():
            sizes[name][min_count] = len(vocab)
    out = []
    for name in sorted(sizes):
        chosen, wanted = learner.next_probes(sizes[name], TARGET, 0)
        out.append((name, wanted, vocabs.get((name, chosen))))
    return out


@pytest.mark.parametrize("arrays", [False, True])
def test_build_token_indexes_writes_an_index_per_vocab(tiny_counts, tmp_path, arrays):
    """From {token: count} dicts, and from the compiled counter's `TokenArrays` (the
    subword sample's totals): the same index, alphabet and distinct tokens."""
    from transforms.codecs.subword_index import TokenIndex
    from transforms.codecs.token_arrays import TokenArrays
    import numpy as np
    totals = sorted(tiny_counts.items())
    if arrays:
        totals = [(name, TokenArrays("".join(counts), np.cumsum([len(t) for t in counts]),
                                     np.array(list(counts.values()), np.int64)))
                  for name, counts in totals]
    with test_pipeline() as p:
        infos = (p | beam.Create(totals)
                 | BuildTokenIndexes(str(tmp_path), 200)
                 | beam.MapTuple(lambda n, info: (n, os.path.basename(info["path"]),
                                                  info["alphabet"], info["distinct_tokens"])))
        assert_that(infos, equal_to([
            (name, name + ".npz", sorted(learner.build_alphabet(counts)), len(counts))
            for name, counts in tiny_counts.items()]))
    for name, counts in tiny_counts.items():
        with open(tmp_path / (name + ".npz"), "rb") as f:
            index = TokenIndex.load(f.read())
        alphabet = sorted(learner.build_alphabet(counts))
        assert (learner.refine_indexed(index, alphabet, [3])
                == learner.refine(counts.items(), alphabet, [3], 200))


def _rounds_in_turn(reports):
    """[(round, [vocab_name])] -> {vocab_name: its rounds, in order}."""
    rounds = collections.defaultdict(list)
    for round_no, names in sorted(reports):
        for name in names:
            rounds[name].append(round_no)
    return [dict(rounds)]


def test_learn_subword_vocabs_equals_the_reference_learner(tiny_counts, tmp_path):
    """Two parallel rounds, then the stage that ends the search (here 9 levels from
    min_count 500 down to 1 or 2: more rounds than the stages) runs the rest."""
    expected = [(name, [], learner.learn_vocab(counts, TARGET, 200, indexed=False))
                for name, counts in sorted(tiny_counts.items())]
    with test_pipeline() as p:
        learnt = (p | beam.Create(sorted(tiny_counts.items()))
                  | BuildTokenIndexes(str(tmp_path), 200)
                  | LearnSubwordVocabs(["de", "en"], TARGET, num_partitions=2, rounds=2))
        chosen = learnt["vocabs"] | beam.combiners.ToList() | beam.FlatMap(_chosen)
        assert_that(chosen, equal_to(expected), label="Chosen")
        # every round's probes are reported, one report per vocabulary and round: the two
        # built as stages, then those of the finishing stage, numbered on
        rounds = (learnt["probes"] | beam.MapTuple(lambda r, probes: (r, sorted(probes)))
                  | "AllRounds" >> beam.combiners.ToList()
                  | "InTurn" >> beam.FlatMap(_rounds_in_turn))
        assert_that(rounds, equal_to([{name: list(range(1, 10)) for name in ("de", "en")}]),
                    label="Rounds")
        iterations = (learnt["sizes"] | beam.MapTuple(lambda r, it, sizes: it)
                      | beam.Distinct())
        assert_that(iterations, equal_to([1, 2, 3, 4]), label="Iterations")


def test_learn_subword_vocabs_does_no_work_once_the_search_is_decided(tiny_counts):
    from transforms.codecs.subword_index import TokenIndex
    counts = tiny_counts["en"]
    alphabet = sorted(learner.build_alphabet(counts))
    index = TokenIndex.build(counts.items(), 200)
    known = {}

    def size_of(min_count, _lo, _hi):
        known[min_count] = len(learner.refine_indexed(index, alphabet, [min_count])[min_count])
        return known[min_count]

    learner.bisect_min_count(TARGET, size_of)
    # The index file does not exist: loading it would fail the test.
    info = {"path": "/nonexistent/en.npz", "alphabet": alphabet, "distinct_tokens": len(counts)}
    with test_pipeline() as p:
        learnt = (p | beam.Create([("en", info)])
                  | LearnSubwordVocabs(["en"], TARGET, num_partitions=2, rounds=1,
                                       known={"en": known}))
        assert_that(learnt["vocabs"], equal_to([]), label="Vocabs")
        assert_that(learnt["probes"], equal_to([]), label="Probes")
        assert_that(learnt["sizes"], equal_to([]), label="Sizes")


def test_refinement_round_planning_pieces():
    assert list(_work_items(("v", {"path": "p"}), 3)) == [
        ("v", {"path": "p"}, 0), ("v", {"path": "p"}, 1), ("v", {"path": "p"}, 2)]
    # sizes known before the pipeline and learnt by earlier rounds (other vocabularies' too)
    learnt = [(("v", 250), 150), (("v", 375), 120), (("w", 1), 5)]
    plan = _RoundPlan({"v": {500: 90}, "w": {}}, 100, 0, 1)
    assert plan("v", learnt) == [437]  # 500 -> 90 < 100, 250 -> 150, 375 -> 120: then 437
    # width 2: the node after it on the path the known sizes predict (437 -> ~103 > 100)
    assert _RoundPlan({"v": {500: 90}}, 100, 0, 2)("v", learnt) == [437, 468]
    # the first probe of a fresh search is the middle of T2T's [1, 1000]; nothing to guess from
    assert _RoundPlan({"v": {}}, 100, 0, 2)("v", []) == [500]
    assert _RoundPlan({"v": {}}, 100, 1, 1)("v", []) == [250, 500, 750]
    assert plan.rank("v") == 0 and plan.rank("w") == 1


def test_rounds_take_the_index_built_in_their_process_and_idle_shares_load_it(
        tiny_counts, tmp_path, monkeypatch):
    """The process that built a vocabulary's index gives it to the rounds (the same object,
    no file read); a work item with no probe in a round of a search still going on loads its
    index then, for the rounds to come (it would otherwise load it in the next round, where
    every item has probes)."""
    from apache_beam.utils import shared
    from transforms.vocab import subword_refine
    from transforms.storage.object_stores import StoreSettings
    handles = {"de": shared.Shared(), "en": shared.Shared()}
    build = subword_refine._BuildIndexFn(str(tmp_path), 200, StoreSettings(), handles)
    build.setup()
    (name, info), = build.process(("de", tiny_counts["de"]))
    loads = []
    real_load = subword_refine._load_index
    monkeypatch.setattr(subword_refine, "_load_index",
                        lambda path, stores=None: loads.append(path) or real_load(path, stores))

    def round_fn(known):
        plan = subword_refine._RoundPlan(known, TARGET, 0, 2)
        fn = subword_refine._RefineProbesFn(1, 2, 4, learner.RESERVED_TOKENS, handles, plan,
                                            StoreSettings())
        fn.setup()
        return fn

    fn = round_fn({"de": {}, "en": {}})
    rank = fn._plan.rank("de")
    busy = list(fn.process((name, info, (0 - rank) % 2)))  # the share with round 1's probe
    assert busy and loads == []  # the probe ran on the index as built
    assert fn._indexes[info["path"]] is build._built[info["path"]]
    # another process (a fresh handle map stands in for one): the idle share loads the index
    handles["de"] = shared.Shared()
    idle = round_fn({"de": {}, "en": {}})
    assert list(idle.process((name, info, (1 - rank) % 2))) == []
    assert loads == [info["path"]] and info["path"] in idle._indexes
    # a decided search: an idle item loads nothing
    decided = round_fn({"de": {m: TARGET for m in range(1, 1001)}, "en": {}})
    assert list(decided.process((name, info, 1))) == [] and loads == [info["path"]]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_the_index_build_first_hands_back_what_the_process_freed(tmp_path):
    """The token index is a pass's largest allocation: built on what the sample's counting
    freed, it stacked on it (the full bench's largest process, +170 MB); the build first
    gives freed heap pages back."""
    import psutil
    from heap_holes import freed_heap_pages
    from transforms.storage.object_stores import StoreSettings
    from transforms.vocab.subword_refine import _BuildIndexFn
    build = _BuildIndexFn(str(tmp_path), 200, StoreSettings())
    build.setup()
    list(build.process(("warm", {"a": 1})))  # imports and compiled loops loaded first
    process = psutil.Process()
    with freed_heap_pages():
        before = process.memory_info().rss
        (name, info), = build.process(("en", {"hello": 3, "world": 2}))
        after = process.memory_info().rss
    assert name == "en" and info["distinct_tokens"] == 2
    assert before - after > 100 * 2 ** 20


def test_the_pass_builds_the_flags_rounds_and_one_stage_to_end_the_search(tmp_path):
    """The job's vocab pass with the default flags: 4 parallel rounds and the stage that
    ends the search, not 10 rounds built whatever the search needs (the bench's searches
    are decided in rounds 3 and 4; rounds 5-10 ran as empty stages)."""
    from driver_fixtures import applied, config
    from transforms.vocab.learners import LearnerInputs
    from transforms.vocab.subword_learning import SubwordLearner
    cfg = config(tmp_path)
    path = tmp_path / "train.src"
    files = {"source": [(str(path), 10)], "target": [(str(path), 10)]}
    first = SubwordLearner(LearnerInputs(str(tmp_path / "work"), files, cfg)).next_pass()
    p = beam.Pipeline()
    first.build(p, None)
    probe_stages = sorted(label.rsplit("/", 1)[-1] for label in applied(p)
                          if label.split("/")[-2:-1] == ["Learn"]
                          and label.rsplit("/", 1)[-1].startswith(("Round", "Finish"))
                          and "Planned" not in label and "Learnt" not in label)
    assert cfg.vocab.bisection_rounds == 4
    assert probe_stages == ["Finish", "Round1", "Round2", "Round3", "Round4"]
    assert first.progress[-1].label == "rounds 5+"
    assert first.label().endswith("bisection rounds 1-4, then to the end")
