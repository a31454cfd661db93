"""pipeline/driver/vocab_passes: a learner's passes run one after the other through the job's
PassRunner (the prepare stage riding along the first when asked), each pass's result read
back into the learner before the next is asked for, and a file that could not be sampled
as one line. Passes are built and translated (a dry run's PassRunner); their result files
are written here as the passes would write them.

The sequencing is shown with a small learner of two one-stage passes (building a real
learner's pass costs about a second of Beam's own pipeline construction); the real word
learner's result is read back as the job reads it."""

import json
import logging
import os
from typing import List, Optional

import apache_beam as beam
import pytest

from driver_fixtures import (applied, config, layout, pass_runner, prepare_step,
                             vocab_pass_driver, vocab_step, write)
from pipeline.driver.datasets import plan_datasets
from pipeline.runtime.errors import DatagenError
from transforms.reporting.json_result import WriteJsonResult
from transforms.vocab.learners import (LearnerInputs, Learnt, LearningStats, PassReport,
                                       VocabLearner, VocabPass)


class TwoPasses(VocabLearner):
    """Learns in two passes; the second is stated only once the first's result is read."""

    passes_needed = 2

    def __init__(self, work_dir: str) -> None:
        super().__init__(LearnerInputs(work_dir, {}, None))  # type: ignore[arg-type]
        self.read_results: List[dict] = []

    def _pass(self, number: int) -> VocabPass:
        path = os.path.join(self.inputs.work_dir, "pass%d.json" % number)

        def build(p, scanned):
            _ = {"n": p | "N" >> beam.Create([number])} | "Result" >> WriteJsonResult(path)

        def read(result, seconds):
            self.read_results.append(result)
            return PassReport({number: {"shared:%d" % (10 * number): 100 * number}})
        return VocabPass("two passes", ("pass %d" % number,), build, path, read)

    def next_pass(self) -> Optional[VocabPass]:
        done = len(self.read_results)
        return self._pass(done + 1) if done < 2 else None

    def learnt(self) -> Learnt:
        return Learnt({"shared": {"": "%d results" % len(self.read_results)}}, LearningStats())

    def dry_run_passes(self) -> List[VocabPass]:
        return [self._pass(1), self._pass(2)]


@pytest.fixture
def setup(tmp_path):
    """(PassRunner, {split: [Dataset]}, prepare step, work dir) of a run."""
    cfg = config(tmp_path)
    out = layout(cfg)
    return pass_runner(), {"train": plan_datasets(cfg, "train")}, prepare_step(cfg, out), \
        out.work_dir


def test_each_pass_runs_after_the_previous_ones_result_is_read(setup, caplog):
    run_pass, _, _, work = setup
    learner = TwoPasses(work)
    for n in (1, 2):
        write(os.path.join(work, "pass%d.json" % n), json.dumps({"n": [n]}))
    with caplog.at_level(logging.INFO, logger="datagen"):
        learnt = vocab_pass_driver(run_pass).run_rest(learner)
    assert [label for label, _ in run_pass.passes] == ["two passes: pass 1",
                                                       "two passes: pass 2"]
    assert learner.read_results == [{"n": [1]}, {"n": [2]}]
    assert learnt.vocabs == {"shared": {"": "2 results"}}
    rounds = [m.strip() for m in caplog.messages if m.strip().startswith("round")]
    assert rounds == ["round 1: shared min_count 10 -> 100 subtokens",
                      "round 2: shared min_count 20 -> 200 subtokens"]


def test_run_rest_runs_only_the_passes_not_run_yet(setup):
    run_pass, _, _, work = setup
    learner = TwoPasses(work)
    driver = vocab_pass_driver(run_pass)
    first = learner.next_pass()
    write(first.result_path, json.dumps({"n": [1]}))
    write(os.path.join(work, "pass2.json"), json.dumps({"n": [2]}))
    driver.read(first, driver.run(first))  # as the job runs the first pass itself
    driver.run_rest(learner)
    assert [label for label, _ in run_pass.passes] == ["two passes: pass 1",
                                                       "two passes: pass 2"]


def test_the_prepare_stage_rides_along_the_pass_it_is_given(setup):
    run_pass, planned, prepare, work = setup
    vocab_pass_driver(run_pass).run(TwoPasses(work).next_pass(), prepare.riding(planned))
    [(label, pipeline)] = run_pass.passes
    assert label == "two passes: scan 2 files; pass 1"
    assert "Prepare" in applied(pipeline)


def test_a_dry_run_translates_every_pass_with_the_riding_stage_on_the_first_only(setup):
    run_pass, planned, prepare, work = setup
    vocab_pass_driver(run_pass).translate(TwoPasses(work), prepare.riding(planned))
    assert [label for label, _ in run_pass.passes] == [
        "two passes: scan 2 files; pass 1", "two passes: pass 2"]
    assert ["Prepare" in applied(p) for _, p in run_pass.passes] == [True, False]


# -- the word learner's result, read back ---------------------------------------------------

@pytest.fixture
def word(tmp_path):
    """(the word learner's one pass, the driver, the train dataset) of a shared word vocab."""
    cfg = config(tmp_path, "--vocab_type", "word", "--vocab_size", "10", "--shared_vocab")
    run_pass = pass_runner()
    planned = {"train": plan_datasets(cfg, "train")}
    learner = vocab_step(cfg, layout(cfg), run_pass).learner({"shared": planned["train"]},
                                                             None)
    return learner, vocab_pass_driver(run_pass), planned["train"][0]


def sampled(path, error=None):
    stats = {"vocab": "shared", "path": path, "sampled_lines": 3, "sampled_chars": 21}
    return dict(stats, error=error) if error else stats


def test_the_learnt_vocabulary_is_read_back_into_the_learner(word):
    learner, driver, ds = word
    first = learner.next_pass()
    assert first.label() == "word vocab shared: sample, count, build"
    write(first.result_path, json.dumps({
        "vocabs": [["shared", {"": "<unk>\n<s>\n</s>\nhello\n"}]],
        "sampling": [sampled(ds.target), sampled(ds.source)], "distinct": [["shared", 4]]}))
    driver.read(first, 1.5)
    assert learner.next_pass() is None
    learnt = learner.learnt()
    assert learnt.vocabs == {"shared": {"": "<unk>\n<s>\n</s>\nhello\n"}}
    assert [s["path"] for s in learnt.stats.sampling] == sorted([ds.source, ds.target])
    assert learnt.stats.distinct_tokens == {"shared": 4}


def test_a_file_that_could_not_be_sampled_is_one_line(word):
    learner, driver, ds = word
    first = learner.next_pass()
    write(first.result_path, json.dumps({
        "vocabs": [], "sampling": [sampled(ds.source, "%s: cannot be read" % ds.source)]}))
    with pytest.raises(DatagenError) as raised:
        driver.read(first, 0.0)
    assert str(raised.value) == "bad input, nothing written: %s: cannot be read" % ds.source
