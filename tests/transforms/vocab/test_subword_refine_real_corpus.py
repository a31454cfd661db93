"""Unit tests of the vocab-learning PTransforms on TestPipeline, against the in-process learner.

`SampleAndCountTokens` -> `BuildTokenIndexes` -> `LearnSubwordVocabs` must find the same
bisection sizes and the same chosen vocabulary as `subword_learner.learn_vocab` (itself tested
against T2T), whether the search ends in one pipeline or is continued from known sizes.
"""

import collections
import os
import pickle

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

import repo_paths
from transforms.codecs import subword_learner as learner
from transforms.contracts.elements import SampleFile
from transforms.codecs import tokenizer
from transforms.vocab.subword_refine import BuildTokenIndexes, LearnSubwordVocabs
from transforms.vocab.token_counts import SampleAndCountTokens

# A 400-line corpus through a dozen pipelines (~10 s each test); tests/transforms/vocab/test_subword_refine.py
# runs the same transforms on a tiny corpus in the fast suite.
pytestmark = pytest.mark.slow

MLQE_DIR = os.path.join(repo_paths.DATA_DIR, "enzh-mlqe-pe")
TARGET = 700


def _counts(path, lines):
    counts = collections.Counter()
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= lines:
                break
            counts.update(tokenizer.encode(line.strip()))
    return dict(counts)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Two small files (the first 400 lines of each side) and their T2T token counts."""
    root = tmp_path_factory.mktemp("corpus")
    files, counts = {}, {}
    for name, side in (("source", "train.en"), ("target", "train.zh")):
        path = str(root / side)
        with open(os.path.join(MLQE_DIR, side), encoding="utf-8") as src, \
                open(path, "w", encoding="utf-8") as dst:
            dst.writelines(line for _, line in zip(range(400), src))
        files[name] = path
        counts[name] = _counts(path, 400)
    return files, counts


def _dump(value, path):
    with open(path, "wb") as f:
        pickle.dump(value, f)


def _merge_rounds(reports):
    """[(round, {(name, min_count): vocab})] -> {name: {min_count: size}}."""
    sizes = collections.defaultdict(dict)
    for _, vocabs in reports:
        for (name, min_count), vocab in vocabs.items():
            sizes[name][min_count] = len(vocab)
    return dict(sizes)


def _chosen_vocabs(reports):
    vocabs = {}
    for _, round_vocabs in reports:
        vocabs.update(round_vocabs)
    out = []
    for name, sizes in _merge_rounds(reports).items():
        chosen, wanted = learner.next_probes(sizes, TARGET, 0)
        out.append((name, wanted, vocabs[(name, chosen)] if chosen is not None else None))
    return out


def test_sample_count_index_and_learn_in_one_pipeline(corpus, tmp_path):
    files, counts = corpus
    expected = [(name, [], learner.learn_vocab(counts[name], TARGET, 200))
                for name in ("source", "target")]
    items = [SampleFile(name, path, os.path.getsize(path)) for name, path in files.items()]
    with TestPipeline() as p:
        counted = (p | beam.Create(items)
                   | SampleAndCountTokens(["source", "target", "unused"], 1e8))
        assert_that(counted["totals"] | "Sorted" >> beam.Map(lambda kv: (kv[0], sorted(kv[1].items()))),
                    equal_to([(n, sorted(c.items())) for n, c in counts.items()]
                             + [("unused", [])]), label="Totals")
        infos = (counted["totals"]
                 | beam.Filter(lambda kv: kv[0] != "unused")
                 | BuildTokenIndexes(str(tmp_path), 200))
        learnt = infos | LearnSubwordVocabs(["source", "target"], TARGET, num_partitions=2,
                                            rounds=3)
        chosen = (learnt["vocabs"] | beam.combiners.ToList()
                  | beam.FlatMap(_chosen_vocabs))
        assert_that(chosen, equal_to(expected), label="Chosen")


def test_search_continues_from_known_sizes(corpus, tmp_path):
    """One round per pipeline, no stage ending the search: each pass starts from the sizes
    the earlier ones learnt (without the guessed path, which would end this search in its
    second pass)."""
    _, counts = corpus
    known = {"target": {}}
    reports = []
    for pass_no in range(12):
        with TestPipeline() as p:
            infos = (p | beam.Create([("target", counts["target"])])
                     | BuildTokenIndexes(str(tmp_path), 200))
            learnt = infos | LearnSubwordVocabs(["target"], TARGET, num_partitions=3, rounds=1,
                                                lookahead=1, known=known, finish=False,
                                                guess_margin=None)
            out = str(tmp_path / ("pass%d.pickle" % pass_no))
            _ = learnt["vocabs"] | beam.combiners.ToList() | beam.Map(_dump, out)
        with open(out, "rb") as f:
            collected = pickle.load(f)
        reports.extend(collected)
        known = _merge_rounds(reports)
        chosen, wanted = learner.next_probes(known["target"], TARGET, 1)
        if chosen is not None:
            break
        assert collected, "a pass with probes to run learnt nothing"
    assert pass_no >= 2  # lookahead 1 and one round per pass: several passes were needed
    assert _chosen_vocabs(reports) == [
        ("target", [], learner.learn_vocab(counts["target"], TARGET, 200))]


@pytest.mark.parametrize("name", ["source", "target"])
def test_a_search_longer_than_the_rounds_built_chooses_t2ts_vocabulary(corpus, tmp_path,
                                                                        name):
    """One parallel round of one probe, no guesses: the rest of the bisection (its own
    levels) runs in the stage that ends it, and the vocabulary is T2T 1.15.7's own
    `build_to_target_size` result over the lines T2T samples, the same list and file bytes."""
    t2t = pytest.importorskip("t2t_reference")
    from transforms.codecs.subword import vocab_file_text
    files, _ = corpus
    lines = t2t.t2t_sample_lines(files[name], 1e8)
    encoder = t2t.t2t_build_vocab_from_lines(lines, TARGET, 200)
    counts = dict(t2t.t2t_token_counts(lines))
    with TestPipeline() as p:
        learnt = (p | beam.Create([(name, counts)]) | BuildTokenIndexes(str(tmp_path), 200)
                  | LearnSubwordVocabs([name], TARGET, num_partitions=1, rounds=1,
                                       guess_margin=None))
        out = str(tmp_path / "vocabs.pickle")
        _ = learnt["vocabs"] | beam.combiners.ToList() | beam.Map(_dump, out)
    with open(out, "rb") as f:
        reports = pickle.load(f)
    assert len({round_no for round_no, _ in reports}) > 2  # more rounds than the one built
    (_, wanted, vocab), = _chosen_vocabs(reports)
    assert wanted == [] and vocab == list(encoder.all_subtoken_strings)
    assert vocab_file_text(vocab).encode("utf-8") == t2t.t2t_vocab_bytes(encoder)
