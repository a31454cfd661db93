"""SubwordLearner: T2T subword vocabularies learnt in one Beam pass or more (a `VocabLearner`).

Pass 1 samples every file (T2T's byte budget), counts tokens with a combine, checkpoints the
counts under the work directory and runs the bisection: `bisection_rounds` rounds of probes
in parallel, then one stage that ends every search still going on (`LearnSubwordVocabs`), so
pass 1 decides every search and the source and target vocabularies share it. Each probe runs
all four refinement iterations. A later pass (reading the checkpoint, continuing from the
sizes known) is still stated the same way, should a pass ever end with a search undecided.

The bisection itself (`subword_learner.bisect_min_count`) is replayed from the start after each
pass with every size learnt so far; where it needs a size it does not have, that is the next
pass's probe. The learner only states its passes (`next_pass`) and reads their results; the
driver (`pipeline.driver.vocab_passes`) runs them.
"""

from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.utils import shared

from transforms.codecs import subword_learner as learner
from transforms.codecs.subword_vocabulary import SubwordVocabulary
from transforms.contracts.config import DatagenConfig
from transforms.reporting.json_result import WriteJsonResult
from transforms.reporting.progress_marks import MarkEach, ProgressMarks, ProgressStage
from transforms.vocab.subword_refine import (FINISH_MARK_PREFIX, PROBES_LEARNT, PROBES_PLANNED,
                                             BuildTokenIndexes, LearnSubwordVocabs,
                                             round_mark_prefix)
from transforms.contracts.config import MIN_COUNT_HIGH, MIN_COUNT_LOW
from transforms.vocab.token_counts import count_compiled
from transforms.vocab.learners import (SAMPLE_STAGE, LearnerInputs, Learnt, LearningStats,
                                       PassReport, SampleFiles, VocabLearner, VocabPass,
                                       check_sampling, distinct_tokens, pass_marks,
                                       pass_marks_dir, sample_and_count)



class ProbeKey(NamedTuple):
    """One probe of the bisection: a vocabulary learnt with one min_count. In a pass's result
    and the summary it is the string `text` ("name:min_count")."""
    vocab: str
    min_count: int

    @property
    def text(self) -> str:
        return "%s:%d" % (self.vocab, self.min_count)

    @classmethod
    def parse(cls, text: str) -> "ProbeKey":
        name, min_count = text.rsplit(":", 1)
        return cls(name, int(min_count))


def _vocab_report(vocabs):
    return {ProbeKey(*key).text: v for key, v in vocabs.items()}


def _round_report(item):
    round_no, vocabs = item
    return {"round": round_no, "vocabs": _vocab_report(vocabs)}


def _sizes_report(item):
    round_no, iteration, sizes = item
    return {"round": round_no, "iteration": iteration,
            "sizes": {ProbeKey(*key).text: s for key, s in sizes.items()}}


def _probes_report(item):
    round_no, probes = item
    return {"round": round_no, "probes": probes}


# Progress marks of a vocab pass (`transforms.reporting.progress_marks`): a vocabulary indexed here;
# a round's probes planned and learnt (`transforms.vocab.subword_refine`).
INDEXED = "indexed"


def _index_marks(item):
    return [item[0]]


def progress_stages(names, first: bool, first_round: int, rounds: int
                    ) -> Tuple[ProgressStage, ...]:
    """The stages of a vocab pass as the progress line counts them: sampling and indexing
    (the first pass), then each parallel bisection round's probes (numbered on from
    `first_round` + 1, as the log numbers them) and the probes of the stage that ends the
    search ("rounds N+", as many rounds as the searches still need)."""
    stages: Tuple[ProgressStage, ...] = ()
    if first:
        stages = (SAMPLE_STAGE,
                  ProgressStage("index", "vocabularies indexed", INDEXED, total=len(names)))
    return stages + tuple(
        ProgressStage("round %d" % (first_round + r), "probes learnt", PROBES_LEARNT,
                      planned=PROBES_PLANNED, prefix=round_mark_prefix(r))
        for r in range(1, rounds + 1)) + (
        ProgressStage("rounds %d+" % (first_round + rounds + 1), "probes learnt", PROBES_LEARNT,
                      planned=PROBES_PLANNED, prefix=FINISH_MARK_PREFIX),)


class SubwordVocabSearch:
    """Bisection state of several vocabularies: what was learnt, what to probe, what was chosen."""

    def __init__(self, names, target_size: int, lookahead: int):
        self.names = list(names)
        self.target_size = target_size
        self.lookahead = lookahead
        self.vocabs: Dict[str, Dict[int, List[str]]] = {name: {} for name in names}
        self.chosen: Dict[str, int] = {}

    def known_sizes(self) -> Dict[str, Dict[int, int]]:
        return {name: {t: len(v) for t, v in self.vocabs[name].items()} for name in self.names}

    def next_probes(self) -> Dict[str, List[int]]:
        """{name: [min_count, ...]} for the names whose bisection needs more sizes."""
        probes = {}
        for name, sizes in self.known_sizes().items():
            if name in self.chosen:
                continue
            chosen, wanted = learner.next_probes(sizes, self.target_size, self.lookahead,
                                                 MIN_COUNT_LOW, MIN_COUNT_HIGH)
            if chosen is not None:
                self.chosen[name] = chosen
            else:
                probes[name] = wanted
        return probes

    def add(self, vocabs: Mapping[ProbeKey, List[str]]) -> None:
        for (name, min_count), vocab in vocabs.items():
            self.vocabs[name][min_count] = vocab

    def result(self, name: str) -> List[str]:
        return self.vocabs[name][self.chosen[name]]


def build_vocab_pass(p: beam.Pipeline, files: Optional[SampleFiles],
                     indexes: Optional[Mapping[str, Dict[str, Any]]], index_dir: str,
                     known: Mapping[str, Mapping[int, int]], result_path: str,
                     config: DatagenConfig, scanned: Optional[beam.PCollection] = None,
                     reserved: Tuple[str, ...] = (),
                     marks: Optional[ProgressMarks] = None) -> None:
    """Adds one vocab pass to pipeline `p`.

    The first pass (`files` given: {name: [(path, size)]}) samples and counts tokens and
    writes each vocabulary's token index under `index_dir`; later passes (`files` None) read
    the indexes the first pass wrote (`indexes`: {name: info}); a size None in `files` comes
    from `scanned`, the prepare stage's scan in the same pipeline. Then `bisection_rounds`
    parallel rounds of the bisection and the stage that ends it run, from the sizes already
    `known` ({name: {min_count: size}}). The pass's results go to `result_path`. `reserved`:
    tokens after T2T's `<pad>` and `<EOS>` in every vocabulary (T2T's `reserved_tokens`:
    their characters join the alphabet); with `marks`, its stages leave the progress marks
    `progress_stages` counts.
    """
    reserved_tokens = tuple(learner.RESERVED_TOKENS) + tuple(reserved)
    from transforms.codecs.tokenizer import count_tokens  # the reference count_compiled equals
    outputs: Dict[str, Any] = {}
    # one handle per vocabulary: a process's rounds share its loaded (or built) index
    shared_indexes = {name: shared.Shared() for name in (files if files is not None
                                                         else indexes or {})}
    if files is not None:
        names = sorted(files)
        counted = sample_and_count(p, files, config, count_tokens, scanned, marks,
                                   count_counted=count_compiled)
        index_pc = counted["totals"] | "Index" >> BuildTokenIndexes(
            index_dir, config.vocab.max_subtoken_length, shared_indexes, reserved_tokens)
        if marks is not None:
            _ = index_pc | "MarkIndexed" >> MarkEach(marks, INDEXED, _index_marks)
        outputs.update(indexes=index_pc, sampling=counted["stats"],
                       distinct=counted["distinct"] | "DistinctToList" >> beam.Map(list))
    else:
        assert indexes is not None  # a later pass reads the indexes the first one wrote
        names = sorted(indexes)
        index_pc = p | "Indexes" >> beam.Create(sorted(indexes.items()), reshuffle=False)
    learnt = index_pc | "Learn" >> LearnSubwordVocabs(
        names, config.vocab.vocab_size, config.vocab.vocab_partitions,
        rounds=config.vocab.bisection_rounds, lookahead=config.vocab.bisection_lookahead,
        known=known, reserved_tokens=reserved_tokens, marks=marks,
        shared_indexes=shared_indexes)
    outputs.update(vocabs=learnt["vocabs"] | "VocabReport" >> beam.Map(_round_report),
                   sizes=learnt["sizes"] | "SizesReport" >> beam.Map(_sizes_report),
                   probes=learnt["probes"] | "ProbesReport" >> beam.Map(_probes_report))
    _ = outputs | "Result" >> WriteJsonResult(result_path)


def _rounds_text(first: int, last: int) -> str:
    return "round %d" % first if first == last else "rounds %d-%d" % (first, last)


def token_index_dir(work_dir: str) -> str:
    return FileSystems.join(work_dir, "token_index")


class SubwordLearner(VocabLearner):
    """T2T's bisection over min_count (`SubwordVocabSearch`): a first pass that samples,
    counts, indexes and decides every search; were a search left undecided, a later pass
    would continue from every size learnt so far."""

    passes_needed = 1  # the pass's last stage ends every search

    def __init__(self, inputs: LearnerInputs):
        super().__init__(inputs)
        vocab = inputs.config.vocab
        self._search = SubwordVocabSearch(sorted(inputs.files), vocab.vocab_size,
                                          vocab.bisection_lookahead)
        self._stats = LearningStats()
        self._indexes: Optional[Dict[str, dict]] = None
        self._passes = 0  # passes handed out

    def _pass(self, pass_no: int, indexes, known) -> VocabPass:
        """Subword vocab pass `pass_no`: the first samples the files, a later one reads
        `indexes`; both continue the bisection from the sizes `known`. For a real run and a
        dry run alike."""
        work_dir, files, config = self.inputs.work_dir, self.inputs.files, self.inputs.config
        first = pass_no == 1
        index_dir = token_index_dir(work_dir)
        result_path = FileSystems.join(work_dir, "vocab_pass_%03d.json" % pass_no)
        marks_dir = pass_marks_dir(work_dir, pass_no)

        def build(p, scanned):
            build_vocab_pass(p, files if first else None, indexes, index_dir, known,
                             result_path, config, scanned, self.inputs.reserved,
                             pass_marks(p, marks_dir))

        rounds = config.vocab.bisection_rounds
        steps = (("sample, count, index",) if first else ()) + (
            "bisection %s, then to the end" % _rounds_text((pass_no - 1) * rounds + 1,
                                                           pass_no * rounds),)
        return VocabPass("vocab %s" % ", ".join(sorted(files)), steps, build, result_path,
                         lambda result, seconds: self._read(pass_no, result, seconds),
                         marks_dir, progress_stages(files, first, (pass_no - 1) * rounds,
                                                    rounds))

    def next_pass(self) -> Optional[VocabPass]:
        if self._passes and not self._search.next_probes():
            self._stats.chosen_min_count = dict(self._search.chosen)
            return None
        self._passes += 1
        return self._pass(self._passes, self._indexes, self._search.known_sizes())

    def _read(self, pass_no: int, result: Mapping[str, Any], seconds: float) -> PassReport:
        stats, files = self._stats, self.inputs.files
        if pass_no == 1:
            self._indexes = dict(result["indexes"])
            stats.sampling = check_sampling(result["sampling"])
            stats.distinct_tokens = distinct_tokens(files, result)
        learnt = {}
        for report in result.get("vocabs", []):
            for key, vocab in report["vocabs"].items():
                learnt[ProbeKey.parse(key)] = vocab
        # a pass numbers its rounds from 1; the job numbers them on, as the pass labels do
        first_round = (pass_no - 1) * self.inputs.config.vocab.bisection_rounds
        rounds: Dict[int, dict] = {}  # one report per vocabulary and round: merged per round
        for report in sorted(result.get("probes", []), key=lambda r: sorted(r["probes"])):
            rounds.setdefault(first_round + report["round"], {}).update(report["probes"])
        by_iteration: Dict[Tuple[int, int], dict] = {}  # one report per work item: merged per (round, iteration)
        for report in result.get("sizes", []):
            by_iteration.setdefault((first_round + report["round"], report["iteration"]),
                                    {}).update(report["sizes"])
        if not learnt:
            raise RuntimeError("vocab pass %d learnt nothing; the bisection cannot advance"
                               % pass_no)
        self._search.add(learnt)
        stats.passes.append({
            "pass": pass_no, "seconds": round(seconds, 3),
            "rounds": [{"round": r, "probes": rounds[r]} for r in sorted(rounds)],
            "iterations": [{"round": r, "iteration": i, "sizes": dict(sorted(sizes.items()))}
                           for (r, i), sizes in sorted(by_iteration.items())],
            "sizes": {key.text: len(v) for key, v in learnt.items()}})
        return PassReport({r: sizes for (r, _), sizes in sorted(by_iteration.items())})

    def learnt(self) -> Learnt:
        return Learnt({name: SubwordVocabulary.files_of(self._search.result(name))
                       for name in self.inputs.files}, self._stats)

    def dry_run_passes(self) -> List[VocabPass]:
        """The first vocab pass and a later one reading placeholder token indexes."""
        files = self.inputs.files
        index_dir = token_index_dir(self.inputs.work_dir)
        indexes = {name: {"path": FileSystems.join(index_dir, name + ".npz"), "alphabet": [],
                          "distinct_tokens": 0} for name in files}
        known: Dict[str, Dict[int, int]] = {name: {} for name in files}
        return [self._pass(pass_no, indexes, known) for pass_no in (1, 2)]
