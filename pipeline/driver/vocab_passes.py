"""The vocab passes' driver: runs the passes a learner states, through the job's PassRunner.

A learner (`transforms.vocab.learners.VocabLearner`: the subword bisection, or the one
counting pass of word and byte_bpe) only describes its passes (`VocabPass`: the stages that
build it, where its result lands, how that result is read back). This module runs each,
with the prepare stage riding along when the job says so, reads its result file back into
the learner and logs what it found; the learner never sees the PassRunner, and the job
decides what happens between two passes (its commit point comes right after the first).
A dry run builds the learner's passes with the same builders and only translates them.
"""

import logging
from typing import Callable, Optional

from pipeline.driver.passes import PassRunner
from pipeline.driver.prepare import RidingPrepare
from pipeline.runtime import console
from pipeline.runtime.errors import DatagenError
from transforms.reporting.progress_marks import read_marks, stage_progress
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores
from transforms.vocab.learners import Learnt, SamplingFailed, VocabLearner, VocabPass

LOG = logging.getLogger("datagen")


class VocabPassDriver:
    """Runs vocab passes with `run_pass` (the job's PassRunner)."""

    def __init__(self, run_pass: PassRunner, stores: ObjectStores) -> None:
        self._run_pass = run_pass
        self._stores = stores

    def run(self, vocab_pass: VocabPass, riding: Optional[RidingPrepare] = None) -> float:
        """Runs `vocab_pass` (with `riding`'s stage in the same pipeline); its seconds."""
        def build(p):
            vocab_pass.build(p, riding.add(p) if riding else None)
        return self._run_pass(vocab_pass.label(riding.label if riding else None), build,
                              progress=self.progress(vocab_pass))

    def progress(self, vocab_pass: VocabPass) -> Optional[Callable[[float], str]]:
        """progress(seconds): where the pass's stages stand, from the marks they left
        (`transforms.reporting.progress_marks`): the stage, round, and how far it is."""
        if vocab_pass.marks_dir is None or not vocab_pass.progress:
            return None
        marks_dir = vocab_pass.marks_dir

        def progress(seconds: float) -> str:
            counted = stage_progress(vocab_pass.progress, read_marks(marks_dir, self._stores))
            return console.stages_line([(stage.label, stage.unit, done, total)
                                        for stage, done, total in counted], seconds)
        return progress

    def read(self, vocab_pass: VocabPass, seconds: float) -> None:
        """Reads a pass's result back into its learner; DatagenError on bad input."""
        result = file_io.read_work_json(vocab_pass.result_path, self._stores)
        try:
            report = vocab_pass.read(result, seconds)
        except SamplingFailed as e:
            raise DatagenError(str(e)) from None
        for round_no, sizes in sorted(report.round_sizes.items()):
            LOG.info("%s", console.round_line(round_no, sizes))

    def run_rest(self, learner: VocabLearner) -> Learnt:
        """Runs the learner's passes (those not run yet) one after the other; its result."""
        while True:
            vocab_pass = learner.next_pass()
            if vocab_pass is None:
                return learner.learnt()
            self.read(vocab_pass, self.run(vocab_pass))

    def translate(self, learner: VocabLearner, riding: Optional[RidingPrepare] = None) -> None:
        """--dry_run: the learner's passes built and translated (`riding` along the first)."""
        for number, vocab_pass in enumerate(learner.dry_run_passes()):
            self.run(vocab_pass, riding if number == 0 else None)
