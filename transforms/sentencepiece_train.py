"""TrainSentencePiece: the job's byte-budget sample handed to SentencePiece's own trainer.

The sample is the one the subword kind takes (T2T's `generate_lines_for_vocab`: a stride
between sampled lines, a budget of characters per file, so `--file_byte_budget` means the same
thing), planned and read in parts on any worker (`token_counts.PlanSampleParts`,
`token_counts.sampled_lines`). What reaches the trainer is the sampled lines themselves, not
token counts: SentencePiece learns from sentences. The parts of one vocabulary are grouped on
one worker, put back in sample order (the vocabulary's files in the order given, each file's
parts by offset) and trained there with `sentencepiece_model.train`: the trainer is one
process (its own threads, fixed in the options), so it is one element of the pipeline, and
training on the same lines in the same order with the same options gives the same bytes on any
runner.

A file that cannot be read, an empty sample, or options the trainer refuses (a vocabulary
larger than the sample allows) become the vocabulary's `error`, for the driver to report in
one line, rather than a worker traceback.
"""

from typing import (Any, Dict, Iterable, Iterator, List, Mapping, NamedTuple, Optional, Sequence,
                    Tuple)

import apache_beam as beam

from transforms.codecs import sentencepiece_model
from transforms.elements import SampleTask
from transforms.formats.text_lines import InputError
from transforms.job_metrics import JobCounters
from transforms.storage.object_stores import ObjectStores, StoreSettings
from transforms.token_counts import SAMPLE_PART_BYTES, PlanSampleParts, sampled_lines



class SampledPart(NamedTuple):
    """The sampled lines of one part of a file (or of the whole file, from byte 0)."""
    path: str
    start: int                # the part's start byte: its place in the file's sample
    lines: List[str]
    error: Optional[str]      # why the file could not be read to the end, or None


# A vocabulary's training result (`TrainSentencePiece`'s output element)
TrainResult = Dict[str, Any]


class _SampleLinesFn(beam.DoFn):
    """A `SampleTask` -> (vocab_name, `SampledPart`): the sampled lines of one part of a
    file, or of the whole file (part None)."""

    def __init__(self, byte_budget: float, on_invalid_utf8: str,
                 store_settings: StoreSettings) -> None:
        self._budget = byte_budget
        self._on_invalid = on_invalid_utf8
        self._store_settings = store_settings

    def setup(self) -> None:
        self._stores = ObjectStores(self._store_settings)
        self._counters = JobCounters()

    def process(self, element: SampleTask) -> Iterator[Tuple[str, SampledPart]]:
        vocab_name, path, part = element.file.vocab, element.file.path, element.part
        lines: List[str] = []
        error = None
        try:
            with sampled_lines(element, self._budget, self._on_invalid,
                               self._stores) as sampled:
                lines.extend(sampled)
        except InputError as e:
            error = str(e)
        self._counters.inc("vocab.%s.sampled_lines" % vocab_name, len(lines))
        yield vocab_name, SampledPart(path, part[0] if part is not None else 0, lines, error)


def _file_stats(vocab_name: str, parts: Sequence[SampledPart]) -> List[Dict[str, Any]]:
    """Per-file sampling statistics, as `SampleAndCountTokens` reports them (plus bytes)."""
    stats: Dict[str, Dict[str, Any]] = {}
    for path, _, lines, error in parts:
        s = stats.setdefault(path, {"vocab": vocab_name, "path": path, "sampled_lines": 0,
                                    "sampled_chars": 0, "sampled_bytes": 0})
        s["sampled_lines"] += len(lines)
        s["sampled_chars"] += sum(map(len, lines))
        s["sampled_bytes"] += sum(len(line.encode("utf-8")) for line in lines)
        if error and "error" not in s:
            s["error"] = error
    return [stats[path] for path in sorted(stats)]


class _TrainFn(beam.DoFn):
    """(vocab_name, parts) -> {"vocab", "model" (bytes or None), "files", "error"}: the
    vocabulary's sample in order, trained on this worker."""

    def __init__(self, file_order: Mapping[str, List[str]],
                 options: Mapping[str, Mapping[str, Any]]) -> None:
        self._order = file_order
        self._options = options

    def process(self, element: Tuple[str, Iterable[Optional[SampledPart]]]
                ) -> Iterator[TrainResult]:
        name, grouped = element
        parts = [p for p in grouped if p is not None]  # None: the name's placeholder
        order = {path: i for i, path in enumerate(self._order.get(name, []))}
        parts.sort(key=lambda p: (order.get(p.path, len(order)), p.path, p.start))
        files = _file_stats(name, parts)
        result: TrainResult = {"vocab": name, "model": None, "files": files, "error": None,
                               "options": dict(self._options[name])}
        errors = sorted({f["error"] for f in files if "error" in f})
        if errors:
            result["error"] = "; ".join(errors)
        elif not any(p.lines for p in parts):
            result["error"] = ("vocab %s: nothing was sampled; SentencePiece cannot learn "
                               "from no text" % name)
        else:
            try:
                result["model"] = sentencepiece_model.train(
                    (line for p in parts for line in p.lines), self._options[name])
            except RuntimeError as e:  # the trainer's refusal, e.g. a too large vocab_size
                result["error"] = "vocab %s: SentencePiece's trainer: %s" % (
                    name, str(e).strip().splitlines()[-1] if str(e).strip() else e)
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
                 on_invalid_utf8: str = "error", part_bytes: int = SAMPLE_PART_BYTES) -> None:
        super().__init__()
        self._order = {name: list(paths) for name, paths in file_order.items()}
        self._options = dict(options)
        self._budget = byte_budget
        self._on_invalid = on_invalid_utf8
        self._part_bytes = part_bytes

    def expand(self, files: beam.PCollection) -> beam.PCollection[TrainResult]:
        stores = StoreSettings.from_options(files.pipeline.options)
        parts = (files
                 | "PlanSample" >> PlanSampleParts(self._budget, self._on_invalid,
                                                   self._part_bytes)
                 | "SampleLines" >> beam.ParDo(_SampleLinesFn(self._budget, self._on_invalid,
                                                              stores)))
        every_name = files.pipeline | "EveryVocab" >> beam.Create(
            [(name, None) for name in sorted(self._options)], reshuffle=False)
        return ((parts, every_name)
                | "WithEveryVocab" >> beam.Flatten()
                | "ByVocab" >> beam.GroupByKey()
                | "Train" >> beam.ParDo(_TrainFn(self._order, self._options)))
