"""SentencePieceLearner: SentencePiece models learnt in one Beam pass (a `VocabLearner`).

The pass samples every file as the subword kind does (`--file_byte_budget`, T2T's stride) and
hands each vocabulary's sampled lines, in order, to SentencePiece's own trainer on one worker
(`TrainSentencePiece`, below). The trainer options are the flags'
(`trainer_options`: model type, size, character coverage, special ids, --spm_trainer_options)
with the thread count fixed (`sentencepiece_model.NUM_THREADS`), so the same sample gives the
same model bytes on any machine. The model comes back to the driver in the pass's JSON result
(base64: a few MB at most) with the sample's figures; the summary records those, and the
options as the model itself records them (`sentencepiece_model.recorded_options`).

`TrainSentencePiece`, the pass's stage, streams the job's byte-budget sample into
SentencePiece's own trainer. The sample is the one the subword kind takes (T2T's `generate_lines_for_vocab`: a stride
between sampled lines, a budget of characters per file, so `--file_byte_budget` means the same
thing), read with `token_counts.sampled_lines`. What reaches the trainer is the sampled lines
themselves, not token counts: SentencePiece learns from sentences. A vocabulary's files are
grouped on one worker (only their names travel through the shuffle) and read there, in sample
order (the vocabulary's files in the order given, each whole), straight into
`sentencepiece_model.train` as its sentence iterator: the trainer keeps its own copy of the
sentences, so the job holds no second one (no list of lines in Python, no lines in the
shuffle). Reading a file whole costs a few seconds per 100 MB, against minutes of training.
The trainer is one process (its own threads, fixed in the options), so it is one element of
the pipeline, and training on the same lines in the same order with the same options gives the
same bytes on any runner.

A file that cannot be read (the read stops the trainer), an empty sample, or options the
trainer refuses (a vocabulary larger than the sample allows) become the vocabulary's `error`,
for the driver to report in one line, rather than a worker traceback.
"""

import base64
import dataclasses
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from transforms.codecs import sentencepiece_model
from transforms.codecs.sentencepiece_vocabulary import SentencePieceVocabulary
from transforms.contracts.config import VocabConfig
from transforms.contracts.elements import SampleFile, SampleTask
from transforms.contracts.flag_ranges import bounded
from transforms.contracts.settings import INPUT, setting
from transforms.formats.text_lines import InputError
from transforms.reporting.job_metrics import JobCounters
from transforms.reporting.json_result import WriteJsonResult
from transforms.reporting.progress_marks import MarkEach, ProgressStage
from transforms.storage.object_stores import ObjectStores, StoreSettings
from transforms.vocab.learners import (LearningStats, Learnt, OnePassLearner, PassReport,
                                       SamplingFailed, VocabPass, check_sampling, pass_marks,
                                       pass_marks_dir, sample_items)
from transforms.vocab.token_counts import sampled_lines

# A vocabulary's training result (`TrainSentencePiece`'s output element)
TrainResult = Dict[str, Any]


class _Sample:
    """The sampled lines of a vocabulary's files, in order, as one iterator (`lines`) for the
    trainer, with per-file statistics as `SampleAndCountTokens` reports them (plus bytes) and
    the first read error, counted while the trainer reads."""

    def __init__(self, vocab_name: str, items: Sequence[SampleFile], byte_budget: float,
                 on_invalid: str, stores: ObjectStores) -> None:
        self.stats: Dict[str, Dict[str, Any]] = {item.path: {"vocab": vocab_name, "path": item.path, "sampled_lines": 0,
            "sampled_chars": 0, "sampled_bytes": 0} for item in items}
        self.error: Optional[str] = None
        self._items = items
        self._budget = byte_budget
        self._on_invalid = on_invalid
        self._stores = stores

    def lines(self) -> Iterator[str]:
        for item in self._items:
            s = self.stats[item.path]
            lines = chars = size = 0
            try:
                with sampled_lines(SampleTask(item, None), self._budget, self._on_invalid,
                                   self._stores) as sampled:
                    for line in sampled:
                        lines += 1
                        chars += len(line)
                        size += len(line.encode("utf-8"))
                        yield line
            except InputError as e:
                self.error = s["error"] = str(e)
                raise  # the trainer stops reading and raises RuntimeError
            finally:
                s["sampled_lines"] += lines
                s["sampled_chars"] += chars
                s["sampled_bytes"] += size

    def files(self) -> List[Dict[str, Any]]:
        return [self.stats[path] for path in sorted(self.stats)]

    def total_lines(self) -> int:
        return sum(s["sampled_lines"] for s in self.stats.values())


class _TrainFn(beam.DoFn):
    """(vocab_name, items) -> {"vocab", "model" (bytes or None), "files", "error"}: the
    vocabulary's files read in order into the trainer on this worker."""

    def __init__(self, file_order: Mapping[str, List[str]],
                 options: Mapping[str, Mapping[str, Any]], byte_budget: float,
                 on_invalid_utf8: str, store_settings: StoreSettings) -> None:
        self._order = file_order
        self._options = options
        self._budget = byte_budget
        self._on_invalid = on_invalid_utf8
        self._store_settings = store_settings

    def setup(self) -> None:
        self._stores = ObjectStores(self._store_settings)
        self._counters = JobCounters()

    def process(self, element: Tuple[str, Iterable[Optional[SampleFile]]]
                ) -> Iterator[TrainResult]:
        name, grouped = element
        items = [i for i in grouped if i is not None]  # None: the name's placeholder
        order = {path: i for i, path in enumerate(self._order.get(name, []))}
        items.sort(key=lambda i: (order.get(i.path, len(order)), i.path))
        sample = _Sample(name, items, self._budget, self._on_invalid, self._stores)
        model = None
        refused = None
        if items:
            try:
                model = sentencepiece_model.train(sample.lines(), self._options[name])
            except RuntimeError as e:  # the trainer's refusal, or a read error (sample.error)
                text = str(e).strip()
                refused = text.splitlines()[-1] if text else repr(e)
        self._counters.inc("vocab.%s.sampled_lines" % name, sample.total_lines())
        result: TrainResult = {"vocab": name, "model": None, "files": sample.files(),
                               "error": None, "options": dict(self._options[name])}
        if sample.error:
            result["error"] = sample.error
        elif not sample.total_lines():
            result["error"] = ("vocab %s: nothing was sampled; SentencePiece cannot learn "
                               "from no text" % name)
        elif refused is not None:
            result["error"] = "vocab %s: SentencePiece's trainer: %s" % (name, refused)
        else:
            result["model"] = model
        yield result


class TrainSentencePiece(beam.PTransform):
    """`SampleFile`s -> one result dict per vocabulary:
    {"vocab", "model": serialized model bytes (None on error), "files": per-file sampling
    statistics, "error", "options"}.

    `file_order`: {vocab_name: [path, ...]}, the order the files' samples are concatenated in
    (a shared vocabulary's source before its target, as T2T's sample reads them);
    `options`: {vocab_name: trainer options} (`sentencepiece_model.trainer_options`); every
    name in it gets a result, sampled or not.
    """

    def __init__(self, file_order: Mapping[str, Sequence[str]],
                 options: Mapping[str, Mapping[str, Any]], byte_budget: float,
                 on_invalid_utf8: str = "error") -> None:
        super().__init__()
        self._order = {name: list(paths) for name, paths in file_order.items()}
        self._options = dict(options)
        self._budget = byte_budget
        self._on_invalid = on_invalid_utf8

    def expand(self, files: beam.PCollection) -> beam.PCollection[TrainResult]:
        stores = StoreSettings.from_options(files.pipeline.options)
        named = files | "ByName" >> beam.Map(lambda item: (item.vocab, item))
        every_name = files.pipeline | "EveryVocab" >> beam.Create(
            [(name, None) for name in sorted(self._options)], reshuffle=False)
        return ((named, every_name)
                | "WithEveryVocab" >> beam.Flatten()
                | "ByVocab" >> beam.GroupByKey()
                | "Train" >> beam.ParDo(_TrainFn(self._order, self._options, self._budget,
                                                 self._on_invalid, stores)))


@dataclasses.dataclass(frozen=True)
class SentencePieceSettings:
    """The sentencepiece kind's part of the config (`VocabConfig.kind_settings`): its own
    flags."""
    spm_model: Optional[str] = setting(
        "Existing SentencePiece model: FILE (.model) for both sides, or SOURCE_FILE,TARGET_FILE. "
        "Nothing is learnt.", role=INPUT, vocab=True)
    spm_model_type: str = setting("SentencePiece model learnt (its trainer's --model_type).",
                                  "unigram", choices=sentencepiece_model.MODEL_TYPES,
                                  vocab=True, new=True)
    spm_character_coverage: float = setting(
        "Characters the SentencePiece model covers (its trainer's default).", 0.9995,
        type=bounded(float, above=0, high=1), vocab=True, new=True)
    spm_special_ids: str = setting(
        "Ids of the specials of a learnt SentencePiece model: t5 (pad=0, eos=1, unk=2, no "
        "bos; T2T's and seqio's) or sentencepiece (unk=0, bos=1, eos=2).",
        sentencepiece_model.DEFAULT_SPECIAL_IDS,
        choices=tuple(sentencepiece_model.SPECIAL_IDS), vocab=True, new=True)
    spm_trainer_options: str = setting(
        "Further SentencePiece trainer options, key=value,... (e.g. "
        "split_digits=true,byte_fallback=true); recorded in the summary.", "", vocab=True,
        new=True)


def trainer_options(vocab: VocabConfig, reserved: Tuple[str, ...] = ()) -> Dict[str, Any]:
    """The trainer options of the run's flags (`sentencepiece_model.trainer_options`);
    `reserved` tokens (language tags) become control symbols, after any the options name:
    pieces of their own, never split, and never matched in text (a user-defined symbol is:
    a `<2de>` inside a sentence would become the tag's id)."""
    spm: SentencePieceSettings = vocab.kind_settings
    extra: Dict[str, Any] = dict(sentencepiece_model.parse_option_list(spm.spm_trainer_options))
    if reserved:
        def listed(key: str) -> List[str]:
            given = extra.get(key) or []
            return given.split(",") if isinstance(given, str) else list(given)
        user = listed("user_defined_symbols")
        if user:
            extra["user_defined_symbols"] = [t for t in user if t not in reserved]
        control = listed("control_symbols")
        extra["control_symbols"] = control + [t for t in reserved if t not in control]
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
