"""SentencePieceLearner: SentencePiece models learnt in one Beam pass (a `VocabLearner`).

The pass samples every file as the subword kind does (`--file_byte_budget`, T2T's stride) and
hands each vocabulary's sampled lines, in order, to SentencePiece's own trainer on one worker
(`transforms.sentencepiece_train.TrainSentencePiece`). The trainer options are the flags'
(`trainer_options`: model type, size, character coverage, special ids, --spm_trainer_options)
with the thread count fixed (`sentencepiece_model.NUM_THREADS`), so the same sample gives the
same model bytes on any machine. The model comes back to the driver in the pass's JSON result
(base64: a few MB at most) with the sample's figures; the summary records those, and the
options as the model itself records them (`sentencepiece_model.recorded_options`).
"""

import base64
import dataclasses
from typing import Any, Dict, Mapping, Optional, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from transforms.codecs import sentencepiece_model
from transforms.codecs.sentencepiece_vocabulary import SentencePieceVocabulary
from transforms.config import VocabConfig
from transforms.json_result import WriteJsonResult
from transforms.progress_marks import MarkEach, ProgressStage
from transforms.sentencepiece_train import TrainSentencePiece
from transforms.vocab_learning import (LearningStats, Learnt, OnePassLearner, PassReport,
                                       SamplingFailed, VocabPass, check_sampling, pass_marks,
                                       pass_marks_dir, sample_items)


@dataclasses.dataclass(frozen=True)
class SentencePieceSettings:
    """The sentencepiece kind's part of the config (`VocabConfig.kind_settings`): its own
    flags."""
    spm_model: Optional[str]         # given models: FILE or SOURCE_FILE,TARGET_FILE
    spm_model_type: str              # unigram | bpe
    spm_character_coverage: float
    spm_special_ids: str             # t5 | sentencepiece
    spm_trainer_options: str         # key=value,... (any further trainer option)


def trainer_options(vocab: VocabConfig, reserved: Tuple[str, ...] = ()) -> Dict[str, Any]:
    """The trainer options of the run's flags (`sentencepiece_model.trainer_options`);
    `reserved` tokens (language tags) become user-defined symbols, after any the options
    name: pieces of their own, never split."""
    spm: SentencePieceSettings = vocab.kind_settings
    extra: Dict[str, Any] = dict(sentencepiece_model.parse_option_list(spm.spm_trainer_options))
    if reserved:
        given = extra.get("user_defined_symbols") or []
        given = given.split(",") if isinstance(given, str) else list(given)
        extra["user_defined_symbols"] = given + [t for t in reserved if t not in given]
    return sentencepiece_model.trainer_options(
        spm.spm_model_type, vocab.vocab_size, spm.spm_character_coverage,
        spm.spm_special_ids, extra)


def _for_json(result):
    """A `TrainSentencePiece` result with its model as base64 text (JSON has no bytes)."""
    out = dict(result)
    if out["model"] is not None:
        out["model"] = base64.b64encode(out["model"]).decode("ascii")
    return out


TRAINED = "trained"  # a vocabulary's progress mark once its model is trained


def _trained_marks(result):
    return [result["vocab"]]


class SentencePieceLearner(OnePassLearner):
    """One pass: sample, train each vocabulary on one worker."""

    def _pass(self) -> VocabPass:
        inputs = self.inputs
        files, config = inputs.files, inputs.config
        result_path = FileSystems.join(inputs.work_dir, "vocab_pass_001.json")
        options = trainer_options(config.vocab, inputs.reserved)
        order = {name: [entry[0] for entry in entries] for name, entries in files.items()}

        marks_dir = pass_marks_dir(inputs.work_dir, 1)

        def build(p, scanned):
            on_invalid = config.read.on_invalid_utf8
            if scanned is not None and on_invalid == "error":
                on_invalid = "replace"  # the scan in the same pass reports it (vocab_learning)
            trained = (sample_items(p, files, scanned)
                       | "SampleAndTrain" >> TrainSentencePiece(
                           order, {name: options for name in files},
                           config.vocab.file_byte_budget, on_invalid))
            _ = trained | "MarkTrained" >> MarkEach(pass_marks(p, marks_dir), TRAINED,
                                                    _trained_marks)
            _ = {"models": trained | "ForJson" >> beam.Map(_for_json)} | (
                "Result" >> WriteJsonResult(result_path))

        return VocabPass("sentencepiece vocab %s" % ", ".join(sorted(files)),
                         ("sample, train",), build, result_path, self._read, marks_dir,
                         (ProgressStage("sample and train", "vocabularies trained", TRAINED,
                                        total=len(files)),))

    def _read(self, result: Mapping[str, Any], seconds: float) -> PassReport:
        models = {r["vocab"]: r for r in result.get("models", [])}
        sampling = check_sampling([s for r in models.values() for s in r["files"]])
        errors = sorted(r["error"] for r in models.values() if r["error"])
        if errors:
            raise SamplingFailed("nothing written: " + "; ".join(errors))
        vocabs, facts = {}, {}
        for name, r in sorted(models.items()):
            model = base64.b64decode(r["model"])
            vocabs[name] = SentencePieceVocabulary.files_of(model)
            mine = [s for s in sampling if s["vocab"] == name]
            facts[name] = {"sampled_bytes": sum(s["sampled_bytes"] for s in mine),
                           "trainer_options": sentencepiece_model.recorded_options(model)}
        self._learnt = Learnt(vocabs, LearningStats(
            sampling=sampling, distinct_tokens={}, vocab_facts=facts))
        return PassReport()
