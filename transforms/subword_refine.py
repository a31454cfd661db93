"""LearnSubwordVocabs: T2T's subtoken-count refinement iterations as Beam stages.

Input: batches of (vocab_name, token, count). For every requested probe (vocab_name,
min_count) the transform runs `num_iterations` refinement iterations, each as three stages:

1. `_WindowsFn` segments each token with the previous iteration's vocabulary (a side input)
   and emits, per (probe, partition), the summed counts of the windows at segment starts;
2. `CombinePerKey` sums those dicts per (probe, partition) across workers;
3. `_SelectFn` does the longest-first acceptance for the partition.

The partial selections are merged per probe and assembled into vocabularies, which are the
side input of the next iteration. Partitions split the substring counts so no worker holds
all of them; see `transforms.codecs.subword_learner` for why the result is exactly T2T's.
The first iteration is the same for every min_count, so it is computed once per vocab_name.
"""

import apache_beam as beam

from transforms.codecs import subword_learner as learner


class _WindowsFn(beam.DoFn):
    def __init__(self, probes, num_partitions, max_subtoken_length):
        self._probes = probes  # {vocab_name: [min_count, ...]}
        self._parts = num_partitions
        self._max_len = max_subtoken_length
        self._seg = None
        self._seg_source = None

    def _segmentation_vocabs(self, vocabs):
        if self._seg_source is not vocabs:
            self._seg = {key: learner.vocab_for_segmentation(v) for key, v in vocabs.items()}
            self._seg_source = vocabs
        return self._seg

    def process(self, batch, vocabs=None):
        by_name = {}
        for name, token, count in batch:
            if name in self._probes:
                by_name.setdefault(name, []).append((token, count))
        for name, tokens in by_name.items():
            if vocabs is None:
                jobs = [((name, learner.FIRST_ITERATION), None)]
            else:
                seg = self._segmentation_vocabs(vocabs)
                jobs = [((name, t), seg[(name, t)]) for t in self._probes.get(name, ())]
            for probe, seg_vocab in jobs:
                windows = learner.count_windows(tokens, self._max_len, seg_vocab)
                for part, counts in learner.split_windows(windows, self._parts).items():
                    yield (probe, part), counts


class _MergeCountsFn(beam.CombineFn):
    """Sums dicts of counts."""

    def create_accumulator(self):
        return {}

    def add_input(self, acc, counts):
        if not acc:
            return dict(counts)
        return learner.merge_counts(acc, counts)

    def merge_accumulators(self, accs):
        accs = iter(accs)
        out = next(accs)
        for acc in accs:
            learner.merge_counts(out, acc)
        return out

    def extract_output(self, acc):
        return acc


class _SelectFn(beam.DoFn):
    def __init__(self, probes):
        self._probes = probes

    def process(self, item):
        ((name, key), _partition), windows = item
        wanted = self._probes[name] if key == learner.FIRST_ITERATION else [key]
        for min_count, selection in learner.select_partition(windows, wanted).items():
            yield (name, min_count), selection


class _MergeSelectionsFn(beam.CombineFn):
    def create_accumulator(self):
        return learner.empty_selection()

    def add_input(self, acc, selection):
        return learner.merge_selections(acc, selection)

    def merge_accumulators(self, accs):
        out = learner.empty_selection()
        for acc in accs:
            learner.merge_selections(out, acc)
        return out

    def extract_output(self, acc):
        return acc


def _assemble_all(selections, alphabets, probes, reserved_tokens):
    """{probe: selection} -> {probe: vocab list}, for every probe (empty input included)."""
    out = {}
    for name, min_counts in probes.items():
        for t in min_counts:
            selection = selections.get((name, t), learner.empty_selection())
            out[(name, t)] = learner.assemble_vocab(selection, alphabets[name], reserved_tokens)
    return out


class LearnSubwordVocabs(beam.PTransform):
    """Token batches -> one dict {(vocab_name, min_count): vocab list}, plus iteration sizes.

    `probes` is {vocab_name: [min_count, ...]}; `alphabets` a singleton PCollection
    {vocab_name: alphabet}. Returns (vocabs, sizes) where `sizes` holds one
    (iteration, {(vocab_name, min_count): size}) per iteration, for the logs.
    """

    def __init__(self, probes, alphabets, max_subtoken_length, num_partitions,
                 num_iterations=4, reserved_tokens=learner.RESERVED_TOKENS):
        super().__init__()
        self._probes = {name: sorted(set(ts)) for name, ts in probes.items() if ts}
        self._alphabets = alphabets
        self._max_len = max_subtoken_length
        self._parts = num_partitions
        self._iterations = num_iterations
        self._reserved = tuple(reserved_tokens)

    def expand(self, batches):
        vocabs = None
        size_reports = []
        for it in range(1, self._iterations + 1):
            side = {} if vocabs is None else {"vocabs": beam.pvalue.AsSingleton(vocabs)}
            selections = (
                batches
                | "Windows%d" % it >> beam.ParDo(
                    _WindowsFn(self._probes, self._parts, self._max_len), **side)
                | "SumWindows%d" % it >> beam.CombinePerKey(_MergeCountsFn())
                | "Select%d" % it >> beam.ParDo(_SelectFn(self._probes))
                | "MergeSelections%d" % it >> beam.CombinePerKey(_MergeSelectionsFn())
                | "Collect%d" % it >> beam.combiners.ToDict())
            vocabs = selections | "Assemble%d" % it >> beam.Map(
                _assemble_all, alphabets=beam.pvalue.AsSingleton(self._alphabets),
                probes=self._probes, reserved_tokens=self._reserved)
            size_reports.append(vocabs | "Sizes%d" % it >> beam.Map(
                lambda v, it=it: (it, {k: len(s) for k, s in v.items()})))
        sizes = size_reports | "AllSizes" >> beam.Flatten()
        return vocabs, sizes
