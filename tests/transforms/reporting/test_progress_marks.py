"""transforms/reporting/progress_marks.py: the marks a running pass leaves, as the driver counts them.

A real first subword vocab pass on a small corpus (in-process FnApiRunner): every stage its
learner states (`VocabPass.progress`: sample, index, the bisection rounds) leaves its marks,
each stage ends with as many units done as it planned, the rounds the search needed have
their probes, and the driver's progress line (`VocabPassDriver.progress`) reads the last
round from them. A retried unit writes the same name again: it counts once.
"""

import os

import apache_beam as beam
import pytest

from beam_unit import test_pipeline, write
from driver_fixtures import config, pass_runner, vocab_pass_driver
from pipeline.runtime import console
from transforms.reporting.progress_marks import (MarkEach, ProgressMarks, ProgressStage, read_marks,
                                       stage_progress)
from transforms.storage.object_stores import StoreSettings
from transforms.vocab.subword_learning import SubwordLearner
from transforms.vocab.learners import LearnerInputs


def _names(element):
    return ["unit-%d" % element]


def test_marks_count_each_unit_once(tmp_path):
    marks = ProgressMarks(str(tmp_path / "marks"), StoreSettings())
    with test_pipeline() as p:
        _ = (p | beam.Create([1, 2, 3, 2])  # unit 2 twice: a retried bundle
             | MarkEach(marks, "done", _names))
    found = read_marks(marks.directory)
    assert sorted(found["done"]) == ["unit-1", "unit-2", "unit-3"]
    stages = [ProgressStage("work", "units", "done", total=5),
              ProgressStage("more", "units", "later", planned="done", prefix="unit-1")]
    assert [(s.label, done, total) for s, done, total in stage_progress(stages, found)] == [
        ("work", 3, 5), ("more", 0, 1)]


@pytest.mark.slow
def test_a_subword_pass_leaves_the_marks_of_every_stage_its_learner_states(tmp_path):
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa"]
    lines = ["%s %s %s %d\n" % (words[i % 8], words[(i * 3) % 8], words[(i * 5) % 8], i % 50)
             for i in range(600)]
    source = write(tmp_path / "t.en", "".join(lines))
    target = write(tmp_path / "t.de", "".join(line.upper() for line in lines))
    cfg = config(tmp_path, "--vocab_size", "120", train=(source, target))
    files = {"source": [(source, os.path.getsize(source))],  # sizes as the prepare stage
             "target": [(target, os.path.getsize(target))]}   # gives them
    learner = SubwordLearner(LearnerInputs(str(tmp_path / "work"), files, cfg))
    vocab_pass = learner.next_pass()
    labels = [stage.label for stage in vocab_pass.progress]
    assert labels == ["sample", "index"] + ["round %d" % r for r in range(1, 5)] + [
        "rounds 5+"]  # the parallel rounds, then the stage that ends the search
    p = test_pipeline()
    vocab_pass.build(p, None)
    p.run().wait_until_finish()
    counted = stage_progress(vocab_pass.progress, read_marks(vocab_pass.marks_dir))
    by_label = {stage.label: (done, total) for stage, done, total in counted}
    assert by_label["sample"][0] == by_label["sample"][1] >= 2  # a task a file at least
    assert by_label["index"] == (2, 2)
    rounds = [(done, total) for stage, done, total in counted if stage.label.startswith("round")]
    worked = [r for r in rounds if r[1]]
    last = [stage.label for stage, _, total in counted if total][-1]
    assert worked and rounds[:len(worked)] == worked  # the search's rounds come first
    assert all(done == total for done, total in worked)
    assert all(r == (0, None) for r in rounds[len(worked):])
    line = vocab_pass_driver(pass_runner()).progress(vocab_pass)(75.0)
    assert line == "%s: %d of %d probes learnt, 75 s so far" % (
        last, worked[-1][0], worked[-1][1])
    assert console.stages_line([(s.label, s.unit, 0, None) for s in vocab_pass.progress],
                               1.0) == "sample: nothing done yet, 1 s so far"
