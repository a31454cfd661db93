"""Vocabulary learners: what passes learning a kind of vocabulary needs, stated as data.

A learner (`VocabLearner`) never runs a pipeline and never calls back into the driver. It
hands out its passes one at a time (`next_pass`), each a `VocabPass`: the Beam stages that
build it, where its result lands and how that result is read back into the learner's
state. The driver (`pipeline.driver.vocab_passes`) runs each through the job's PassRunner,
reads its result file and gives it to `VocabPass.read`; when `next_pass` returns None, the
learnt vocabularies' files are in `learnt()`. Which passes a learner hands out next may
depend on what the earlier ones found (the subword bisection); `passes_needed` says how many
there are when that is known before the first.

- `CountedLearner`: one pass, sample and count with the kind's tokenizer, then the kind's
  Beam stages build each vocabulary from the counts (`transforms.vocab.word_learning`,
  `transforms.vocab.byte_bpe_learning`);
- `transforms.vocab.subword_learning.SubwordLearner`: T2T's bisection over min_count, one pass or
  more.

A pass's first stage may be shared: the prepare step's scan rides along in the first pass
when every file is read in place, and the sampler takes the sizes None in `files` from it
(`VocabPass.build`'s `scanned`).
"""

import abc
import dataclasses
from typing import Any, Callable, ClassVar, Dict, List, Mapping, Optional, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from transforms.codecs.vocabulary import VocabFiles
from transforms.contracts.config import DatagenConfig, VocabConfig
from transforms.contracts.elements import SampleFile
from transforms.errors import JobError
from transforms.reporting.json_result import WriteJsonResult
from transforms.reporting.progress_marks import ProgressMarks, ProgressStage
from transforms.storage.object_stores import StoreSettings
from transforms.vocab.token_counts import (SAMPLE_PLANNED, SAMPLED, SampleAndCountTokens,
                                           count_lines_with)

SampleFiles = Dict[str, List[Tuple]]
"""{vocab name: [(path, size in bytes or None[, rejected lines path[, dropped lines path]])]}:
the files each vocabulary samples (`SampleFile`'s fields after the name); a size None is taken
from the prepare stage's scan in the same pass."""


class SamplingFailed(JobError, ValueError):
    """A file could not be sampled (bad input): the job stops before writing anything."""


@dataclasses.dataclass(frozen=True)
class PassReport:
    """What a pass's result told the learner, for the job's log: per bisection round, the
    sizes its probes' last refinement iteration gave ({"name:min_count": size})."""
    round_sizes: Dict[int, Dict[str, int]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class VocabPass:
    """One Beam pass of a learner.

    Its label is `title: steps` (a riding prepare stage's label goes first among the steps);
    `build(pipeline, scanned)` adds its stages (`scanned`: the (path, facts) of the prepare
    stage's scan in the same pipeline, or None) and writes its result (`WriteJsonResult`) to
    `result_path`; `read(result, seconds)` takes that result (parsed JSON) into the learner.
    While it runs, its stages leave progress marks in `marks_dir` (`transforms.reporting.progress_marks`),
    which `progress` (its stages in order) reads: the driver's progress line follows them.
    """
    title: str
    steps: Tuple[str, ...]
    build: Callable[[beam.Pipeline, Optional[beam.PCollection]], None]
    result_path: str
    read: Callable[[Mapping[str, Any], float], PassReport]
    marks_dir: Optional[str] = None
    progress: Tuple[ProgressStage, ...] = ()

    def label(self, riding: Optional[str] = None) -> str:
        """The pass's label in the log, with `riding` (a stage riding along) first."""
        return "%s: %s" % (self.title, "; ".join(((riding,) if riding else ()) + self.steps))


def pass_marks_dir(work_dir: str, pass_no: int) -> str:
    """The progress marks directory of vocab pass `pass_no` (one of its own: the driver lists
    only the running pass's marks)."""
    return FileSystems.join(work_dir, "progress", "vocab_pass_%03d" % pass_no)


def pass_marks(p: beam.Pipeline, marks_dir: str) -> ProgressMarks:
    """The ProgressMarks of a pass built into `p`, into `marks_dir`."""
    return ProgressMarks(marks_dir, StoreSettings.from_options(p.options))


# The sampling stage as the progress line counts it: tasks (a file, or a part of a plain
# file's sample) sampled, of those planned (`transforms.vocab.token_counts`).
SAMPLE_STAGE = ProgressStage("sample", "parts sampled", SAMPLED, planned=SAMPLE_PLANNED)


@dataclasses.dataclass
class LearningStats:
    """What the learning passes found: per-file sampling statistics (sorted by vocabulary and
    path), distinct tokens sampled per vocabulary (for the kinds that count tokens), the
    passes (for the summary), for a bisection the min_count chosen per vocabulary, and any
    further facts a learner reports per vocabulary ({name: {key: value}}: SentencePiece's
    sample bytes and trainer options)."""
    sampling: List[dict] = dataclasses.field(default_factory=list)
    distinct_tokens: Dict[str, int] = dataclasses.field(default_factory=dict)
    passes: List[dict] = dataclasses.field(default_factory=list)
    chosen_min_count: Dict[str, int] = dataclasses.field(default_factory=dict)
    vocab_facts: Dict[str, dict] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Learnt:
    """The learnt vocabularies' files ({name: VocabFiles}) and how they were learnt."""
    vocabs: Dict[str, VocabFiles]
    stats: LearningStats


@dataclasses.dataclass(frozen=True)
class LearnerInputs:
    """What a learner learns from: the job's work directory (its passes' result files and
    checkpoints go there), the files each vocabulary samples and the run's config;
    `reserved`: tokens every vocabulary holds as entries of their own, right after the
    kind's specials, never split (the language tags `<2xx>`)."""
    work_dir: str
    files: SampleFiles
    config: DatagenConfig
    reserved: Tuple[str, ...] = ()


class VocabLearner(abc.ABC):
    """Learns the vocabularies of `inputs.files` in passes it states (`next_pass`)."""

    passes_needed: ClassVar[Optional[int]] = 1  # None: a search decides how many

    def __init__(self, inputs: LearnerInputs):
        self.inputs = inputs

    @abc.abstractmethod
    def next_pass(self) -> Optional[VocabPass]:
        """The next pass to run (after the previous one's result was read), or None once
        every vocabulary is learnt."""

    @abc.abstractmethod
    def learnt(self) -> Learnt:
        """The vocabularies, once `next_pass` returned None."""

    @abc.abstractmethod
    def dry_run_passes(self) -> List[VocabPass]:
        """--dry_run: the passes a real run would build (same builders), with placeholder
        inputs for those that depend on earlier results; they are only translated."""


class OnePassLearner(VocabLearner):
    """A learner of one pass (`_pass`), whose result `_read` turns into `_learnt`."""

    passes_needed = 1

    def __init__(self, inputs: LearnerInputs):
        super().__init__(inputs)
        self._ran = False
        self._learnt: Optional[Learnt] = None

    @abc.abstractmethod
    def _pass(self) -> VocabPass:
        """The one pass, for a real run and a dry run alike."""

    def next_pass(self) -> Optional[VocabPass]:
        if self._ran:
            return None
        self._ran = True
        return self._pass()

    def learnt(self) -> Learnt:
        assert self._learnt is not None, "learnt() before its pass was read"
        return self._learnt

    def dry_run_passes(self) -> List[VocabPass]:
        return [self._pass()]


# -- shared stages -------------------------------------------------------------------------

def check_sampling(sampling: List[dict]) -> List[dict]:
    """Raises SamplingFailed when a file could not be sampled (its statistics carry the
    error: the sampler reports it instead of failing the pipeline). Returns `sampling` sorted."""
    errors = sorted({s["error"] for s in sampling if s.get("error")})
    if errors:
        raise SamplingFailed("bad input, nothing written: " + "; ".join(errors))
    return sorted(sampling, key=lambda s: (s["vocab"], s["path"]))


def _with_size(item: SampleFile, facts: Mapping[str, Any]) -> SampleFile:
    # A file the scan could not read has no size; the driver reports its error after the pass.
    if item.size is not None:
        return item
    return item._replace(size=facts[item.path].get("bytes", 0))


def sample_items(p: beam.Pipeline, files: SampleFiles,
                 scanned: Optional[beam.PCollection] = None) -> beam.PCollection:
    """The `SampleFile` of every file to sample as a PCollection (`files`' entries are its
    fields after the vocabulary's name); a size None is taken from `scanned` ((path, facts)
    of a scan in the same pipeline)."""
    items = p | "Files" >> beam.Create(  # spread by the sampler (no reshuffle here)
        [SampleFile(name, *entry) for name in sorted(files) for entry in files[name]],
        reshuffle=False)
    if scanned is not None:
        items = items | "FileSizes" >> beam.Map(_with_size, facts=beam.pvalue.AsDict(scanned))
    return items


def sample_and_count(p: beam.Pipeline, files: SampleFiles, config: DatagenConfig,
                     count_tokens: Callable, scanned: Optional[beam.PCollection] = None,
                     marks: Optional[ProgressMarks] = None,
                     count_counted: Optional[Callable] = None) -> Dict[str, beam.PCollection]:
    """`SampleAndCountTokens` of every file of `files` (its dict of PCollections), leaving
    `SAMPLE_STAGE`'s marks when `marks` is given."""
    on_invalid = config.read.on_invalid_utf8
    if scanned is not None and on_invalid == "error":
        # With the scan in the same pipeline, invalid UTF-8 is the scan's to report (the
        # driver stops before writing anything), so counting replaces it rather than
        # failing the pipeline.
        on_invalid = "replace"
    return (sample_items(p, files, scanned)
            | "SampleAndCount" >> SampleAndCountTokens(
                sorted(files), config.vocab.file_byte_budget, on_invalid,
                count_tokens=count_tokens,
                one_file_each=all(len(entries) == 1 for entries in files.values()),
                marks=marks, count_counted=count_counted))


def distinct_tokens(files: SampleFiles, result: Mapping[str, Any]) -> Dict[str, int]:
    """{name: distinct tokens sampled} from a pass's `distinct` result (0 for none)."""
    distinct = {name: 0 for name in files}
    distinct.update(dict(result.get("distinct", [])))
    return distinct


# -- word and byte-level BPE vocabularies: one pass over the same sampled counts ------------

class CountedLearner(OnePassLearner):
    """One pass: sample and count with `tokenizer()`, then `vocabs_from_counts`."""

    @staticmethod
    @abc.abstractmethod
    def tokenizer() -> Callable[[str], List[str]]:
        """The function that splits a sampled line into the units the vocabulary counts."""

    @staticmethod
    @abc.abstractmethod
    def vocabs_from_counts(totals: beam.PCollection, vocab: VocabConfig,
                           reserved: Tuple[str, ...] = ()) -> beam.PCollection:
        """(name, {token: count}) -> [name, VocabFiles] of each vocabulary, as Beam stages;
        `reserved` tokens are entries after the specials."""

    @staticmethod
    @abc.abstractmethod
    def empty_files(vocab: VocabConfig, reserved: Tuple[str, ...] = ()) -> VocabFiles:
        """The files of a vocabulary nothing was sampled for (its special tokens only)."""

    def _pass(self) -> VocabPass:
        inputs = self.inputs
        files, config = inputs.files, inputs.config
        result_path = FileSystems.join(inputs.work_dir, "vocab_pass_001.json")
        marks_dir = pass_marks_dir(inputs.work_dir, 1)

        def build(p, scanned):
            counted = sample_and_count(p, files, config, count_lines_with(self.tokenizer()),
                                       scanned, pass_marks(p, marks_dir))
            vocabs = self.vocabs_from_counts(counted["totals"], config.vocab, inputs.reserved)
            _ = {"vocabs": vocabs, "sampling": counted["stats"],
                 "distinct": counted["distinct"] | "DistinctToList" >> beam.Map(list)} | (
                "Result" >> WriteJsonResult(result_path))

        return VocabPass(
            "%s vocab %s" % (config.vocab.vocab_type, ", ".join(sorted(files))),
            ("sample, count, build",), build, result_path, self._read, marks_dir,
            (SAMPLE_STAGE,))

    def _read(self, result: Mapping[str, Any], seconds: float) -> PassReport:
        files, vocab = self.inputs.files, self.inputs.config.vocab
        vocabs = dict(result.get("vocabs", []))
        for name in files:  # a vocabulary with nothing sampled still gets its specials
            if name not in vocabs:
                vocabs[name] = self.empty_files(vocab, self.inputs.reserved)
        self._learnt = Learnt(vocabs, LearningStats(
            sampling=check_sampling(result["sampling"]),
            distinct_tokens=distinct_tokens(files, result)))
        return PassReport()
