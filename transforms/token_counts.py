"""SampleAndCountTokens: T2T's byte-budget vocab sample, tokenized, counted by a Beam combine.

Each input file is sampled independently (one worker per file, as T2T's stride sampling is
sequential within a file); the sampled lines are tokenized with T2T's invertible tokenizer and
counted per file, and `CombinePerKey(sum)` adds the counts of all files that feed one
vocabulary. The output is `(vocab_name, token, count)` triples, plus per-file sampling statistics.
"""

import collections
import contextlib
import itertools

import apache_beam as beam

from transforms import file_io
from transforms.codecs import tokenizer
from transforms.text_lines import InputError, iter_raw_lines, sample_lines_for_vocab

STATS = "stats"


def with_rejected_lines(kept, rejected):
    """A converted side's whole line sequence: the `kept` raw lines (its line file) with the
    lines of rejected units put back where they were (`rejected`: raw `position<TAB>text`
    lines, positions ascending, as `transforms.materialize` writes them)."""
    position = 0
    for raw in rejected:
        at, _, text = raw.partition(b"\t")
        at = int(at)
        yield from itertools.islice(kept, at - position)
        position = at + 1
        yield text
    yield from kept


class _SampleFileFn(beam.DoFn):
    """(vocab_name, path, file_size[, rejected_path]) -> (vocab_name, {token: count}) for the
    file's sample; `rejected_path` (a converted dataset's `.rejected` lines) puts the lines of
    rejected units back into the sample, `file_size` counting them too.

    A file that cannot be read (a truncated `.gz`, invalid UTF-8 with `on_invalid_utf8`
    "error") ends its sample and puts an `error` into the file's statistics for the driver
    to report, rather than failing the pipeline with a worker's traceback.
    """

    def __init__(self, byte_budget, on_invalid_utf8="error", tokenize=tokenizer.encode):
        self._budget = byte_budget
        self._on_invalid = on_invalid_utf8
        self._tokenize = tokenize

    def process(self, item):
        vocab_name, path, file_size, *rejected = item
        counts = collections.Counter()
        lines = chars = 0
        error = None
        try:
            with contextlib.ExitStack() as files:
                raw_lines = iter_raw_lines(files.enter_context(file_io.open_text_source(path)))
                if rejected and rejected[0]:
                    rejected_f = files.enter_context(file_io.open_text_source(rejected[0]))
                    raw_lines = with_rejected_lines(raw_lines, iter_raw_lines(rejected_f))
                for line in sample_lines_for_vocab(raw_lines, file_size, self._budget,
                                                   path, self._on_invalid):
                    counts.update(self._tokenize(line))
                    lines += 1
                    chars += len(line)
        except InputError as e:
            error = str(e)
        yield vocab_name, dict(counts)
        stats = {"vocab": vocab_name, "path": path, "sampled_lines": lines,
                 "sampled_chars": chars, "distinct_tokens_in_file": len(counts)}
        if error:
            stats["error"] = error
        yield beam.pvalue.TaggedOutput(STATS, stats)


class _SumCountsFn(beam.CombineFn):
    """Adds {token: count} dicts: the per-file counts of one vocabulary."""

    def create_accumulator(self):
        return {}

    def add_input(self, acc, counts):
        get = acc.get
        for token, count in counts.items():
            acc[token] = get(token, 0) + count
        return acc

    def merge_accumulators(self, accs):
        accs = list(accs)
        out = max(accs, key=len)
        for acc in accs:
            if acc is not out:
                self.add_input(out, acc)
        return out

    def extract_output(self, acc):
        return acc


def count_triples(item):
    """(vocab_name, {token: count}) -> its (vocab_name, token, count) triples."""
    name, counts = item
    for token, count in counts.items():
        yield name, token, count


class SampleAndCountTokens(beam.PTransform):
    """(vocab_name, path, file_size[, rejected_path]) -> token counts and sampling statistics.

    Each file's sample is counted on one worker into one {token: count} dict, and a
    `CombinePerKey` adds the dicts of the files that feed a vocabulary: a few large elements
    instead of one per distinct token. `tokenize` splits a sampled line into the counted units
    (T2T's tokenizer by default). Returns a dict of PCollections: `totals` ((vocab_name,
    {token: count}), one per name in `vocab_names`, empty when nothing was sampled), `stats`
    (one dict per file) and `distinct` ((vocab_name, number of distinct tokens)).
    `count_triples` flattens a total into (vocab_name, token, count) elements where a
    transform needs one element per token.
    """

    def __init__(self, vocab_names, byte_budget, on_invalid_utf8="error",
                 tokenize=tokenizer.encode):
        super().__init__()
        self._names = sorted(vocab_names)
        self._on_invalid = on_invalid_utf8
        self._tokenize = tokenize
        self._budget = byte_budget

    def expand(self, files):
        sampled = (files
                   | "Spread" >> beam.Reshuffle()
                   | "SampleAndTokenize" >> beam.ParDo(
                       _SampleFileFn(self._budget, self._on_invalid, self._tokenize))
                   .with_outputs(STATS, main="counts"))
        every_name = files.pipeline | "EveryVocab" >> beam.Create(
            [(name, {}) for name in self._names], reshuffle=False)
        totals = ((sampled.counts, every_name)
                  | "WithEveryVocab" >> beam.Flatten()
                  | "SumCounts" >> beam.CombinePerKey(_SumCountsFn()))
        return {"totals": totals,
                "stats": sampled[STATS],
                "distinct": totals | "Distinct" >> beam.MapTuple(lambda n, c: (n, len(c)))}
