"""T2T's subtoken-count refinement as Beam stages, over suffix-array token indexes.

`BuildTokenIndexes` turns the counted tokens of each vocabulary into a
`subword_index.TokenIndex` written to a file (the checkpoint later passes read).
`LearnSubwordVocabs` runs, for every requested probe (vocab_name, min_count),
`num_iterations` refinement iterations, each as one stage:

1. `_SelectFn`, one element per (vocabulary, probe, partition): segments the vocabulary's
   tokens with the probe's previous vocabulary (a side input) and does T2T's longest-first
   acceptance over the partition's windows (a contiguous range of the suffix array);
2. `CombinePerKey` merges the partitions' partial selections per probe;
3. the merged selections are assembled into vocabularies, the next iteration's side input.

The first iteration is the same for every min_count (the vocabulary is the alphabet), so it
runs once per vocabulary with all of its probes' min_counts. No worker counts substrings:
see `transforms.codecs.subword_index` for why the result is exactly T2T's.
"""

import json
import typing

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.utils import shared

from transforms.codecs import subword_learner as learner


def _load_index(path):
    from transforms.codecs.subword_index import TokenIndex
    with FileSystems.open(path, compression_type="uncompressed") as f:
        return TokenIndex.load(f.read())


class _BuildIndexFn(beam.DoFn):
    """(vocab_name, [(token, count)]) -> (vocab_name, {path, alphabet, distinct_tokens})."""

    def __init__(self, index_dir, max_subtoken_length):
        self._dir = index_dir
        self._max_len = max_subtoken_length

    def process(self, item):
        from transforms.codecs.subword_index import TokenIndex
        name, token_counts = item
        token_counts = [tc for tc in token_counts if tc[0] is not None]
        index = TokenIndex.build(token_counts, self._max_len)
        path = FileSystems.join(self._dir, "%s.npz" % name)
        with FileSystems.create(path + ".tmp") as f:
            index.save(f)
        FileSystems.rename([path + ".tmp"], [path])
        alphabet = learner.build_alphabet((t for t, _ in token_counts))
        yield name, {"path": path, "alphabet": sorted(alphabet),
                     "distinct_tokens": len(token_counts)}


class BuildTokenIndexes(beam.PTransform):
    """(vocab_name, token, count) triples -> one (vocab_name, index info) per vocabulary.

    The index of a vocabulary is built on one worker from its distinct tokens (T2T holds the
    same token counts in one process) and written to `index_dir/{vocab_name}.npz`. Every name
    in `vocab_names` gets an index, an empty one when nothing was sampled for it.
    """

    def __init__(self, vocab_names, index_dir, max_subtoken_length):
        super().__init__()
        self._names = sorted(vocab_names)
        self._dir = index_dir
        self._max_len = max_subtoken_length

    def expand(self, triples):
        keyed = triples | "KeyByVocab" >> beam.Map(lambda t: (t[0], (t[1], t[2])))
        every_name = triples.pipeline | "Names" >> beam.Create(
            [(name, (None, 0)) for name in self._names])
        return ((keyed, every_name)
                | "WithEveryName" >> beam.Flatten()
                | "GroupByVocab" >> beam.GroupByKey()
                | "BuildIndex" >> beam.ParDo(_BuildIndexFn(self._dir, self._max_len)))


class _SelectFn(beam.DoFn):
    """(vocab_name, info, probe key, partition) -> ((vocab_name, min_count), selection)."""

    def __init__(self, probes, num_partitions, shared_indexes):
        self._probes = probes  # {vocab_name: [min_count, ...]}
        self._parts = num_partitions
        self._shared = shared_indexes
        self._indexes = None
        self._marks = None

    def setup(self):
        self._indexes = {}
        self._marks = {}

    def _index(self, path):
        if path not in self._indexes:
            # One loaded index per worker process, whichever iteration stage asks first.
            self._indexes[path] = self._shared.acquire(lambda: _load_index(path), tag=path)
        return self._indexes[path]

    def process(self, item, vocabs=None):
        name, info, key, part_no = item
        index = self._index(info["path"])
        part = index.partitions(self._parts)[part_no]
        if key == learner.FIRST_ITERATION:
            marks, wanted = None, self._probes[name]
        else:
            cache_key = (name, key)
            if cache_key not in self._marks:
                self._marks.clear()  # keep one probe's marks: the partitions of a probe come together
                self._marks[cache_key] = index.segment_marks(json.loads(vocabs[(name, key)][1]))
            marks, wanted = self._marks[cache_key], [key]
        for min_count, selection in index.select(marks, part, wanted).items():
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


def _work_items(item, probes, num_partitions, first):
    """(vocab_name, info) -> its (vocab_name, info, probe key, partition) work items."""
    name, info = item
    if name not in probes:
        return
    for key in [learner.FIRST_ITERATION] if first else probes[name]:
        for part in range(num_partitions):
            yield name, info, key, part


def _assemble(item, infos, reserved_tokens):
    """((vocab_name, min_count), merged selection) -> (probe, (size, vocab list as JSON)).

    One JSON string per vocabulary keeps the next iteration's side input a handful of
    objects: runners weigh cached side inputs by walking them, which for lists of 10^4..10^6
    strings costs more than the iteration itself.
    """
    probe, selection = item
    vocab = learner.assemble_vocab(selection, infos[probe[0]]["alphabet"], reserved_tokens)
    return probe, (len(vocab), json.dumps(vocab, ensure_ascii=False))


class LearnSubwordVocabs(beam.PTransform):
    """Index infos -> one dict {(vocab_name, min_count): vocab list}, plus iteration sizes.

    The input holds one (vocab_name, info) per vocabulary, `info` as `BuildTokenIndexes`
    emits it. `probes` is {vocab_name: [min_count, ...]}. Returns (vocabs, sizes) where `sizes`
    holds one (iteration, {(vocab_name, min_count): size}) per iteration, for the logs.
    """

    def __init__(self, probes, num_partitions, num_iterations=4,
                 reserved_tokens=learner.RESERVED_TOKENS):
        super().__init__()
        self._probes = {name: sorted(set(ts)) for name, ts in probes.items() if ts}
        self._parts = num_partitions
        self._iterations = num_iterations
        self._reserved = tuple(reserved_tokens)

    def expand(self, indexes):
        shared_indexes = shared.Shared()
        infos = beam.pvalue.AsSingleton(indexes | "InfoDict" >> beam.combiners.ToDict())
        vocabs = None
        size_reports = []
        for it in range(1, self._iterations + 1):
            side = {} if vocabs is None else {"vocabs": beam.pvalue.AsSingleton(vocabs)}
            vocabs = (
                indexes
                | "Work%d" % it >> beam.FlatMap(
                    _work_items, probes=self._probes, num_partitions=self._parts, first=it == 1
                ).with_output_types(typing.Any)
                | "Spread%d" % it >> beam.Reshuffle()
                | "Select%d" % it >> beam.ParDo(
                    _SelectFn(self._probes, self._parts, shared_indexes), **side)
                | "MergeSelections%d" % it >> beam.CombinePerKey(_MergeSelectionsFn())
                | "Assemble%d" % it >> beam.Map(_assemble, infos=infos,
                                                reserved_tokens=self._reserved)
                | "Collect%d" % it >> beam.combiners.ToDict())
            size_reports.append(vocabs | "Sizes%d" % it >> beam.Map(
                lambda v, it=it: (it, {probe: size for probe, (size, _) in v.items()})))
        sizes = size_reports | "AllSizes" >> beam.Flatten()
        vocab_lists = vocabs | "VocabLists" >> beam.Map(
            lambda v: {probe: json.loads(text) for probe, (_, text) in v.items()})
        return vocab_lists, sizes
