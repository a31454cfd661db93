"""T2T's subtoken-count refinement as Beam stages, over suffix-array token indexes.

`BuildTokenIndexes` turns the counted tokens of each vocabulary into a
`subword_index.TokenIndex` written to a file (the checkpoint a continuing pass reads).
`LearnSubwordVocabs` runs the bisection over min_count in rounds, one Beam stage each:
`_RefineProbesFn` over (vocabulary, share) work items. Each item replays the bisection with
the sizes the earlier rounds learnt (side inputs of a few numbers), takes its share of the
round's probes on its vocabulary and runs their `num_iterations` refinement iterations:
segment the tokens with the probe's previous vocabulary, then T2T's longest-first acceptance
over the index. A probe's vocabulary goes to the pass's result, its size to the next rounds.

No worker counts or holds substrings: see `transforms.codecs.subword_index` for why the
result is exactly T2T's.
"""

import functools
import io
import itertools
from typing import (Any, Dict, Iterable, Iterator, List, Literal, Mapping, Optional, Sequence,
                    Tuple, TypeAlias, TypedDict, Union)

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.pvalue import TaggedOutput
from apache_beam.typehints.decorators import no_annotations
from apache_beam.utils import shared

from transforms.storage import file_io
from transforms.storage.heap import release_free_memory
from transforms.codecs import subword_learner as learner
from transforms.codecs.token_arrays import TokenArrays
from transforms.reporting.progress_marks import MarkEach, ProgressMarks
from transforms.storage.object_stores import ObjectStores, StoreSettings

SIZES = "sizes"
LEARNT = "learnt"
PROBES = "probes"


class IndexInfo(TypedDict):
    """A vocabulary's token index as `BuildTokenIndexes` wrote it."""
    path: str                   # the index file
    alphabet: List[str]         # the characters of its tokens, sorted
    distinct_tokens: int


Probe = Tuple[str, int]         # (vocab_name, min_count)
Learnt = Tuple[Probe, int]      # a probe's vocabulary size after its last iteration
WorkItem = Tuple[str, IndexInfo, int]  # (vocab_name, info, share)
# What `_RefineProbesFn` yields: (round, {probe: vocab list}) and, tagged, the learnt sizes,
# the sizes per iteration and the round's probes.
LearntOut: TypeAlias = TaggedOutput[Literal["learnt"], Learnt]
SizesOut: TypeAlias = TaggedOutput[Literal["sizes"], Tuple[int, int, Dict[Probe, int]]]
ProbesOut: TypeAlias = TaggedOutput[Literal["probes"], Tuple[int, Dict[str, List[int]]]]
RefineOut = Union[Tuple[int, Dict[Probe, List[str]]], LearntOut, SizesOut, ProbesOut]


# Progress marks (`transforms.reporting.progress_marks`) of a round's probes, planned (when the round's
# work item share 0 plans them) and learnt, beside the round's stage so that they come as it
# runs: `r{round:03d}.{vocab_name}.{min_count}`.
PROBES_PLANNED, PROBES_LEARNT = "probes-planned", "probes-learnt"


# The stage that ends the search (`_FinishSearchFn`) puts this before its rounds' prefixes.
FINISH_MARK_PREFIX = "rest."


def round_mark_prefix(round_no: int) -> str:
    return "r%03d." % round_no


def _planned_marks(item, stage_prefix=""):
    round_no, probes = item
    return [stage_prefix + round_mark_prefix(round_no) + "%s.%d" % (name, t)
            for name, planned in probes.items() for t in planned]


def _learnt_marks(item, stage_prefix=""):
    round_no, vocabs = item
    return [stage_prefix + round_mark_prefix(round_no) + "%s.%d" % (name, t)
            for name, t in vocabs]


def _load_index(path, stores=None):
    from transforms.codecs.subword_index import TokenIndex
    return TokenIndex.load(file_io.read_bytes(path, stores))


class _BuildIndexFn(beam.DoFn):
    """(vocab_name, {token: count} or `TokenArrays`) -> (vocab_name, {path, alphabet,
    distinct_tokens})."""

    def __init__(self, index_dir: str, max_subtoken_length: Optional[int],
                 store_settings: StoreSettings,
                 shared_indexes: Optional[Mapping[str, shared.Shared]] = None,
                 reserved_tokens: Sequence[str] = learner.RESERVED_TOKENS) -> None:
        self._dir = index_dir
        self._max_len = max_subtoken_length
        self._store_settings = store_settings
        self._reserved = tuple(reserved_tokens)
        self._shared = shared_indexes or {}

    def setup(self) -> None:
        self._stores = ObjectStores(self._store_settings)
        self._built: Dict[str, Any] = {}  # path -> the index built here, kept for the rounds

    def process(self, item: Tuple[str, Any]) -> Iterator[Tuple[str, IndexInfo]]:
        from transforms.codecs.subword_index import TokenIndex
        name, counts = item
        # The index is the pass's largest allocation: what the sample's counting and the sum
        # of its parts freed goes back first, or the index stacks on it (~170 MB at full size)
        release_free_memory()
        # `TokenArrays` as they are: no string per token beside the index being built
        index = TokenIndex.build(counts if isinstance(counts, TokenArrays) else counts.items(),
                                 self._max_len)
        path = FileSystems.join(self._dir, "%s.npz" % name)
        saved = io.BytesIO()
        index.save(saved)
        file_io.write_bytes_atomically(path, saved.getvalue(), self._stores)
        if name in self._shared:
            # the rounds in this process take the index as built instead of loading the
            # file (~1 s for a large one); kept alive while this DoFn is (the pass)
            self._built[path] = self._shared[name].acquire(lambda: index, tag=path)
        # the characters of every token: from `TokenArrays`' joined text, not a second list
        # of the tokens' strings (665k at full size) beside the index just built
        text = getattr(counts, "text", None)
        alphabet = learner.build_alphabet(counts if text is None else [text], self._reserved)
        info: IndexInfo = {"path": path, "alphabet": sorted(alphabet),
                           "distinct_tokens": len(counts)}
        yield name, info


class BuildTokenIndexes(beam.PTransform):
    """(vocab_name, {token: count}) -> (vocab_name, index info), one per vocabulary.

    The index of a vocabulary is built on one worker from its distinct tokens (T2T holds the
    same token counts in one process) and written to `index_dir/{vocab_name}.npz`. With
    `shared_indexes` ({vocab_name: Shared}, `LearnSubwordVocabs`' handles) the rounds of the
    same pass that run in the building process use the built index without loading it.
    """

    def __init__(self, index_dir: str, max_subtoken_length: Optional[int],
                 shared_indexes: Optional[Mapping[str, shared.Shared]] = None,
                 reserved_tokens: Sequence[str] = learner.RESERVED_TOKENS) -> None:
        super().__init__()
        self._dir = index_dir
        self._max_len = max_subtoken_length
        self._reserved = tuple(reserved_tokens)
        self._shared = shared_indexes

    def expand(self, totals: beam.PCollection) -> beam.PCollection:
        return totals | "BuildIndex" >> beam.ParDo(_BuildIndexFn(
            self._dir, self._max_len, StoreSettings.from_options(totals.pipeline.options),
            self._shared, self._reserved))


class _ProbesFn(beam.DoFn):
    """What a stage of probes shares: a vocabulary's index loaded once per worker process
    (or taken as built, `shared_indexes`) and its probes run, each with `num_iterations`
    refinement iterations (`_run`)."""

    def __init__(self, num_iterations, reserved_tokens, shared_indexes, store_settings):
        self._store_settings = store_settings
        self._iterations = num_iterations
        self._reserved = reserved_tokens
        self._shared = shared_indexes
        self._indexes: Dict[str, Any] = {}  # path -> loaded TokenIndex, per worker (`setup`)

    def setup(self) -> None:
        self._indexes = {}
        self._stores = ObjectStores(self._store_settings)

    def _index(self, name, path):
        if path not in self._indexes:
            # One loaded index per vocabulary and worker process, whichever round asks first.
            # A Shared handle keeps one object (a new tag replaces it): one handle per vocabulary.
            self._indexes[path] = self._shared[name].acquire(
                lambda: _load_index(path, self._stores), tag=path)
        return self._indexes[path]

    def _run(self, round_no: int, name: str, info: IndexInfo, wanted: Sequence[int]
             ) -> Tuple[List[RefineOut], Dict[int, int]]:
        """The outputs of `wanted`'s probes on vocabulary `name` in round `round_no` (sizes per
        iteration, learnt sizes, vocabularies) and their sizes, {min_count: size}."""
        sizes: List[Tuple[int, Dict[Probe, int]]] = []
        vocabs = learner.refine_indexed(
            self._index(name, info["path"]), info["alphabet"], wanted, self._iterations,
            self._reserved, on_iteration=lambda it, v: sizes.append(
                (it, {(name, t): len(vocab) for t, vocab in v.items()})))
        outputs: List[RefineOut] = [beam.pvalue.TaggedOutput(SIZES, (round_no, it, report))
                                    for it, report in sizes]
        for t, vocab in vocabs.items():
            outputs.append(beam.pvalue.TaggedOutput(LEARNT, ((name, t), len(vocab))))
            outputs.append((round_no, {(name, t): vocab}))
        return outputs, {t: len(vocab) for t, vocab in vocabs.items()}


class _RefineProbesFn(_ProbesFn):
    """(vocab_name, info, share) -> (round, {(vocab_name, min_count): vocab list}).

    Each work item plans the round itself (`plan`: the bisection replayed with the sizes known
    before the pipeline and those the earlier rounds learnt, side inputs of ((vocab_name,
    min_count), size)); every item gets the same plan. Work item `share` of `num_shares`
    takes every `num_shares`-th probe of the round on its vocabulary and runs all
    `num_iterations` refinement iterations of its probes over the whole index: an iteration
    of a probe needs only that probe's previous vocabulary, so the iterations need no data
    from other work items. Tagged outputs: `learnt` ((vocab_name, min_count), size) after the
    last iteration, for the next rounds' plans (a vocabulary itself is never a side input:
    runners weigh cached side inputs by walking them, and for lists of 10^4..10^6 strings
    that costs more than the refinement); `sizes` (round, iteration, {probe: size}) per
    iteration; `probes` (round, {vocab_name: [min_count, ...]}), the round's plan of the
    vocabulary (from its share 0).
    """

    def __init__(self, round_no, num_shares, num_iterations, reserved_tokens, shared_indexes,
                 plan, store_settings):
        super().__init__(num_iterations, reserved_tokens, shared_indexes, store_settings)
        self._round = round_no
        self._shares = num_shares
        self._plan = plan

    # `learnt_before`: one List[Learnt] per earlier round. Typed Any: Beam reads a `*args`
    # hint as the type of the whole tuple of side inputs, not of each one.
    def process(self, item: WorkItem, *learnt_before: Any) -> Iterator[RefineOut]:
        name, info, share = item
        planned = self._plan(name, itertools.chain.from_iterable(learnt_before))
        if planned and share == 0:
            yield beam.pvalue.TaggedOutput(PROBES, (self._round, {name: planned}))
        # Which probes a share takes turns with the vocabulary: when a round has fewer
        # probes than shares, the first share of every vocabulary is not the only one busy.
        first = (share + self._plan.rank(name)) % self._shares
        wanted = planned[first::self._shares]
        if not wanted:
            if planned:  # the search goes on: have the index loaded for the next round
                self._index(name, info["path"])
            return
        outputs, _ = self._run(self._round, name, info, wanted)
        yield from outputs


class _FinishSearchFn(_ProbesFn):
    """(vocab_name, info, share) -> what `_RefineProbesFn` yields, for the rounds after the
    stages: share 0 of a vocabulary still searching after the parallel rounds runs the rest
    of the bisection here, round after round (numbered on from `first_round`), each probing
    only the min_count the search asks next (`plan`, one wide, no guesses: nothing is
    computed that T2T's search does not read). One stage, whatever the rounds left, so no
    round is built as a stage that has nothing to do."""

    def __init__(self, first_round, num_iterations, reserved_tokens, shared_indexes, plan,
                 store_settings):
        super().__init__(num_iterations, reserved_tokens, shared_indexes, store_settings)
        self._first_round = first_round
        self._plan = plan

    # `learnt_before`: as `_RefineProbesFn.process`'s, one List[Learnt] per parallel round.
    def process(self, item: WorkItem, *learnt_before: Any) -> Iterator[RefineOut]:
        name, info, share = item
        if share != 0:
            return
        learnt: List[Learnt] = list(itertools.chain.from_iterable(learnt_before))
        round_no = self._first_round
        while True:
            wanted = self._plan(name, learnt)
            if not wanted:  # decided
                return
            yield beam.pvalue.TaggedOutput(PROBES, (round_no, {name: wanted}))
            outputs, sizes = self._run(round_no, name, info, wanted)
            yield from outputs
            learnt.extend(((name, t), size) for t, size in sizes.items())
            round_no += 1


def _work_items(item, num_shares):
    """(vocab_name, info) -> its (vocab_name, info, share) work items."""
    name, info = item
    for share in range(num_shares):
        yield name, info, share


# A round also probes the guessed path of the search as far as its turns are clear: up to
# the first node where a guess this fraction either way (from one known size: any slope of
# `SLOPE_RANGE`) could turn the search otherwise (`next_probes`). A wrong guess costs work,
# never a different result.
GUESS_MARGIN = 0.05


class _RoundPlan:
    """The min_counts a round probes on one vocabulary: `next_probes` replayed with the sizes
    known before the pipeline and those learnt since (((vocab_name, min_count), size)
    pairs); at least `width` while the search goes on (one per work item), and the guessed
    path as far as `margin` says its turns are clear."""

    def __init__(self, known, target_size, lookahead, width, margin=None):
        self._known = known
        self._target = target_size
        self._lookahead = lookahead
        self._width = width
        self._margin = margin

    def rank(self, name):
        """The vocabulary's place among all: work items rotate their shares by it."""
        return sorted(self._known).index(name)

    def __call__(self, name, learnt):
        sizes = dict(self._known.get(name, {}))
        sizes.update((t, size) for (n, t), size in learnt if n == name)
        _, wanted = learner.next_probes(sizes, self._target, self._lookahead,
                                        width=self._width, margin=self._margin)
        return wanted


class LearnSubwordVocabs(beam.PTransform):
    """Index infos -> vocabularies of the bisection's probes, round after round.

    The input holds one (vocab_name, info) per vocabulary, `info` as `BuildTokenIndexes`
    emits it. Each of `rounds` bisection rounds, a stage each, replays T2T's bisection over
    `min_count` with the sizes learnt so far (`known`: {vocab_name: {min_count: size}} from
    before the pipeline, then the earlier rounds' results) and probes the min_count the
    search needs next plus its subtree `lookahead` levels deep, each probe with
    `num_iterations` refinement iterations. Where that is fewer probes than `num_partitions` (the work items of a
    vocabulary), the nodes the search will likely need next fill the round up: guessed from
    the sizes known (`subword_learner.predicted_path`), they let each work item of a round
    advance the search by about a level. With `guess_margin` the round also probes the
    guessed path as far as its turns are clear (a search walking to min_count 1000 is decided
    in its third round, not its sixth); the work items share those probes. A round with
    nothing left to probe does no work; an idle work item of a vocabulary still searching
    loads its index for the rounds to come. With `finish`, one more stage ends every search
    still going on after them (`_FinishSearchFn`: one work item per vocabulary, the rest of
    the bisection one probe after another), so the pipeline always decides the searches and
    builds `rounds` + 1 stages of probes however many rounds they take.

    Returns a dict of PCollections: `vocabs` ((round, {(vocab_name, min_count): vocab list}),
    one per probe), `sizes` ((round, iteration, {probe: size}), one per work item and
    iteration), `probes` ((round, {vocab_name: [min_count, ...]}), one per vocabulary and
    round with something to probe). With `marks`, each round leaves the progress marks of
    its probes, planned and learnt, as it runs.
    """

    def __init__(self, vocab_names: Iterable[str], target_size: int, num_partitions: int,
                 rounds: int = 10, lookahead: int = 0,
                 known: Optional[Mapping[str, Mapping[int, int]]] = None, num_iterations: int = 4,
                 reserved_tokens: Sequence[str] = learner.RESERVED_TOKENS,
                 finish: bool = True, marks: Optional[ProgressMarks] = None,
                 shared_indexes: Optional[Mapping[str, shared.Shared]] = None,
                 guess_margin: Optional[float] = GUESS_MARGIN) -> None:
        super().__init__()
        self._marks = marks  # each round's probes planned and learnt, when given
        self._finish = finish
        self._margin = guess_margin
        self._shared = shared_indexes
        self._known = {name: dict((known or {}).get(name, {})) for name in vocab_names}
        self._target = target_size
        self._parts = num_partitions
        self._rounds = rounds
        self._lookahead = lookahead
        self._iterations = num_iterations
        self._reserved = tuple(reserved_tokens)

    @no_annotations  # Beam takes PCollection hints only: this returns a dict of them
    def expand(self, indexes: beam.PCollection) -> Dict[str, beam.PCollection]:
        shared_indexes = self._shared or {name: shared.Shared() for name in self._known}
        stores = StoreSettings.from_options(indexes.pipeline.options)
        work = (indexes
                | "Work" >> beam.FlatMap(_work_items, num_shares=self._parts)
                | "Spread" >> beam.Reshuffle())
        learnt: List[Any] = []
        vocab_reports: List[Any] = []
        size_reports: List[Any] = []
        probe_reports: List[Any] = []
        for r in range(1, self._rounds + 1):
            plan = _RoundPlan(self._known, self._target, self._lookahead, self._parts,
                              self._margin)
            refined = work | "Round%d" % r >> beam.ParDo(
                _RefineProbesFn(r, self._parts, self._iterations, self._reserved,
                                shared_indexes, plan, stores),
                *[beam.pvalue.AsList(sizes) for sizes in learnt]).with_outputs(
                    LEARNT, SIZES, PROBES, main="vocabs")
            learnt.append(refined[LEARNT])
            if self._marks is not None:
                _ = refined[PROBES] | "Round%dPlanned" % r >> MarkEach(
                    self._marks, PROBES_PLANNED, _planned_marks)
                _ = refined.vocabs | "Round%dLearnt" % r >> MarkEach(
                    self._marks, PROBES_LEARNT, _learnt_marks)
            vocab_reports.append(refined.vocabs)
            size_reports.append(refined[SIZES])
            probe_reports.append(refined[PROBES])
        if self._finish:
            finished = work | "Finish" >> beam.ParDo(
                _FinishSearchFn(self._rounds + 1, self._iterations, self._reserved,
                                shared_indexes, _RoundPlan(self._known, self._target, 0, 1),
                                stores),
                *[beam.pvalue.AsList(sizes) for sizes in learnt]).with_outputs(
                    LEARNT, SIZES, PROBES, main="vocabs")
            if self._marks is not None:
                _ = finished[PROBES] | "FinishPlanned" >> MarkEach(
                    self._marks, PROBES_PLANNED,
                    functools.partial(_planned_marks, stage_prefix=FINISH_MARK_PREFIX))
                _ = finished.vocabs | "FinishLearnt" >> MarkEach(
                    self._marks, PROBES_LEARNT,
                    functools.partial(_learnt_marks, stage_prefix=FINISH_MARK_PREFIX))
            vocab_reports.append(finished.vocabs)
            size_reports.append(finished[SIZES])
            probe_reports.append(finished[PROBES])
        return {"vocabs": vocab_reports | "AllVocabs" >> beam.Flatten(),
                "sizes": size_reports | "AllSizes" >> beam.Flatten(),
                "probes": probe_reports | "AllProbes" >> beam.Flatten()}
