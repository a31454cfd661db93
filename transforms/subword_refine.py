"""T2T's subtoken-count refinement as Beam stages, over suffix-array token indexes.

`BuildTokenIndexes` turns the counted tokens of each vocabulary into a
`subword_index.TokenIndex` written to a file (the checkpoint a continuing pass reads).
`LearnSubwordVocabs` runs the bisection over min_count in rounds; each round picks its probes
from the sizes learnt so far (a side input) and runs `num_iterations` refinement iterations,
each as two stages:

1. `_SelectFn` over (vocabulary, share) work items: each item takes its share of the round's
   probes on that vocabulary, segments the tokens with each probe's previous vocabulary (a
   side input) and does T2T's longest-first acceptance over the index;
2. `_AssembleVocabsFn`, one global combine, merges the selections and assembles every
   probe's vocabulary: the next iteration's side input.

No worker counts or holds substrings: see `transforms.codecs.subword_index` for why the
result is exactly T2T's.
"""

import json

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.utils import shared

from transforms.codecs import subword_learner as learner


def _load_index(path):
    from transforms.codecs.subword_index import TokenIndex
    with FileSystems.open(path, compression_type="uncompressed") as f:
        return TokenIndex.load(f.read())


class _BuildIndexFn(beam.DoFn):
    """(vocab_name, {token: count}) -> (vocab_name, {path, alphabet, distinct_tokens})."""

    def __init__(self, index_dir, max_subtoken_length):
        self._dir = index_dir
        self._max_len = max_subtoken_length

    def process(self, item):
        from transforms.codecs.subword_index import TokenIndex
        name, counts = item
        index = TokenIndex.build(counts.items(), self._max_len)
        path = FileSystems.join(self._dir, "%s.npz" % name)
        with FileSystems.create(path + ".tmp") as f:
            index.save(f)
        FileSystems.rename([path + ".tmp"], [path])
        alphabet = learner.build_alphabet(counts)
        yield name, {"path": path, "alphabet": sorted(alphabet), "distinct_tokens": len(counts)}


class BuildTokenIndexes(beam.PTransform):
    """(vocab_name, {token: count}) -> (vocab_name, index info), one per vocabulary.

    The index of a vocabulary is built on one worker from its distinct tokens (T2T holds the
    same token counts in one process) and written to `index_dir/{vocab_name}.npz`.
    """

    def __init__(self, index_dir, max_subtoken_length):
        super().__init__()
        self._dir = index_dir
        self._max_len = max_subtoken_length

    def expand(self, totals):
        return totals | "BuildIndex" >> beam.ParDo(_BuildIndexFn(self._dir, self._max_len))


class _SelectFn(beam.DoFn):
    """(vocab_name, info, share) -> ((vocab_name, min_count), (selection, alphabet)).

    Work item `share` of `num_shares` takes every `num_shares`-th probe of the round on this
    vocabulary, so each probe is segmented once: segment the tokens with the probe's previous
    vocabulary (`vocabs`; None in the first iteration, where every character starts a segment)
    and select over all windows of the index.
    """

    def __init__(self, num_shares, shared_indexes):
        self._shares = num_shares
        self._shared = shared_indexes
        self._indexes = None

    def setup(self):
        self._indexes = {}

    def _index(self, name, path):
        if path not in self._indexes:
            # One loaded index per vocabulary and worker process, whichever iteration stage
            # asks first. A Shared handle keeps one object (a new tag replaces it), hence one
            # handle per vocabulary.
            self._indexes[path] = self._shared[name].acquire(lambda: _load_index(path), tag=path)
        return self._indexes[path]

    def process(self, item, probes, vocabs=None):
        name, info, share = item
        wanted = probes.get(name, [])[share::self._shares]
        if not wanted:
            return
        index = self._index(name, info["path"])
        whole = (0, len(index.sa))
        alphabet = info["alphabet"]
        if vocabs is None:
            jobs = [(None, wanted)]
        else:
            jobs = [(index.segment_marks(json.loads(vocabs[(name, t)][1])), [t]) for t in wanted]
        for marks, min_counts in jobs:
            for min_count, selection in index.select(marks, whole, min_counts).items():
                yield (name, min_count), (selection, alphabet)


class _AssembleVocabsFn(beam.CombineFn):
    """Partial selections of all probes -> {probe: (size, vocab list as JSON)}.

    One JSON string per vocabulary keeps the next iteration's side input a handful of
    objects: runners weigh cached side inputs by walking them, which for lists of 10^4..10^6
    strings costs more than the iteration itself.
    """

    def __init__(self, reserved_tokens):
        self._reserved = reserved_tokens

    def create_accumulator(self):
        return {}

    def add_input(self, acc, item):
        probe, (selection, alphabet) = item
        if probe in acc:
            learner.merge_selections(acc[probe][0], selection)
        else:
            acc[probe] = (selection, alphabet)
        return acc

    def merge_accumulators(self, accs):
        out = {}
        for acc in accs:
            for probe, value in acc.items():
                self.add_input(out, (probe, value))
        return out

    def extract_output(self, acc):
        out = {}
        for probe, (selection, alphabet) in acc.items():
            vocab = learner.assemble_vocab(selection, alphabet, self._reserved)
            out[probe] = (len(vocab), json.dumps(vocab, ensure_ascii=False))
        return out


def _work_items(item, num_shares):
    """(vocab_name, info) -> its (vocab_name, info, share) work items."""
    name, info = item
    for share in range(num_shares):
        yield name, info, share


def _plan_round(known, target_size, lookahead, rounds_left):
    """{vocab_name: {min_count: size}} -> {vocab_name: [min_count, ...]} still to probe."""
    probes = {}
    for name, sizes in known.items():
        _, wanted = learner.next_probes(sizes, target_size, lookahead, rounds_left=rounds_left)
        if wanted:
            probes[name] = wanted
    return probes


def _add_sizes(known, vocabs):
    out = {name: dict(sizes) for name, sizes in known.items()}
    for (name, min_count), (size, _) in vocabs.items():
        out[name][min_count] = size
    return out


class _RefinementIterations(beam.PTransform):
    """One bisection round: `num_iterations` refinement iterations of its probes.

    Input: {"work": (vocab_name, info, share) items, "probes": one {vocab_name:
    [min_count, ...]}}. Output: (vocabs, sizes): one {(vocab_name, min_count): (size, vocab
    list as JSON)} after the last iteration, and one (iteration, {probe: size}) per iteration.
    """

    def __init__(self, num_partitions, num_iterations, reserved_tokens, shared_indexes):
        super().__init__()
        self._parts = num_partitions
        self._iterations = num_iterations
        self._reserved = reserved_tokens
        self._shared = shared_indexes

    def expand(self, inputs):
        probes = beam.pvalue.AsSingleton(inputs["probes"])
        vocabs = None
        size_reports = []
        for it in range(1, self._iterations + 1):
            side = {} if vocabs is None else {"vocabs": beam.pvalue.AsSingleton(vocabs)}
            vocabs = (
                inputs["work"]
                | "Select%d" % it >> beam.ParDo(
                    _SelectFn(self._parts, self._shared), probes=probes, **side)
                | "Assemble%d" % it >> beam.CombineGlobally(_AssembleVocabsFn(self._reserved)))
            size_reports.append(vocabs | "Sizes%d" % it >> beam.Map(
                lambda v, it=it: (it, {probe: size for probe, (size, _) in v.items()})))
        return vocabs, size_reports | "AllSizes" >> beam.Flatten()


class LearnSubwordVocabs(beam.PTransform):
    """Index infos -> vocabularies of the bisection's probes, round after round.

    The input holds one (vocab_name, info) per vocabulary, `info` as `BuildTokenIndexes`
    emits it. Each of `rounds` bisection rounds replays T2T's bisection over `min_count` with
    the sizes learnt so far (`known`: {vocab_name: {min_count: size}} from earlier passes, then
    the earlier rounds' results) and probes the min_count the search needs next plus its
    subtree, each probe with `num_iterations` refinement iterations. The subtree is
    `lookahead` levels deep, or with `fit_rounds` deeper where that lets the search finish in
    the rounds left. A round with nothing left to probe does no work.

    Returns a dict of PCollections: `vocabs` ((round, {(vocab_name, min_count): vocab list})
    per round), `sizes` ((round, iteration, {probe: size})), `probes` ((round, {vocab_name:
    [min_count, ...]})).
    """

    def __init__(self, vocab_names, target_size, num_partitions, rounds=3, lookahead=0,
                 known=None, num_iterations=4, reserved_tokens=learner.RESERVED_TOKENS,
                 fit_rounds=True):
        super().__init__()
        self._fit_rounds = fit_rounds
        self._known = {name: dict((known or {}).get(name, {})) for name in vocab_names}
        self._target = target_size
        self._parts = num_partitions
        self._rounds = rounds
        self._lookahead = lookahead
        self._iterations = num_iterations
        self._reserved = tuple(reserved_tokens)

    def expand(self, indexes):
        shared_indexes = {name: shared.Shared() for name in self._known}
        work = (indexes
                | "Work" >> beam.FlatMap(_work_items, num_shares=self._parts)
                | "Spread" >> beam.Reshuffle())
        state = indexes.pipeline | "Known" >> beam.Create([self._known])
        vocab_reports, size_reports, probe_reports = [], [], []
        for r in range(1, self._rounds + 1):
            probes = state | "Plan%d" % r >> beam.Map(
                _plan_round, target_size=self._target, lookahead=self._lookahead,
                rounds_left=self._rounds - r + 1 if self._fit_rounds else None)
            vocabs, sizes = {"work": work, "probes": probes} | "Round%d" % r >> (
                _RefinementIterations(self._parts, self._iterations, self._reserved,
                                      shared_indexes))
            state = state | "Learnt%d" % r >> beam.Map(
                _add_sizes, vocabs=beam.pvalue.AsSingleton(vocabs))
            vocab_reports.append(vocabs | "Lists%d" % r >> beam.Map(
                lambda v, r=r: (r, {probe: json.loads(text) for probe, (_, text) in v.items()})))
            size_reports.append(sizes | "RoundSizes%d" % r >> beam.MapTuple(
                lambda it, s, r=r: (r, it, s)))
            probe_reports.append(probes | "RoundProbes%d" % r >> beam.Map(lambda p, r=r: (r, p)))
        return {"vocabs": vocab_reports | "AllVocabs" >> beam.Flatten(),
                "sizes": size_reports | "AllSizes" >> beam.Flatten(),
                "probes": probe_reports | "AllProbes" >> beam.Flatten()}
