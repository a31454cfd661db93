"""TrainSentencePiece: the job's byte-budget sample streamed into SentencePiece's own trainer.

The sample is the one the subword kind takes (T2T's `generate_lines_for_vocab`: a stride
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

from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

import apache_beam as beam

from transforms.codecs import sentencepiece_model
from transforms.elements import SampleFile, SampleTask
from transforms.formats.text_lines import InputError
from transforms.job_metrics import JobCounters
from transforms.storage.object_stores import ObjectStores, StoreSettings
from transforms.token_counts import sampled_lines

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
