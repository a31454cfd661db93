"""SampleAndCountTokens: T2T's byte-budget vocab sample, tokenized, counted by a Beam combine.

Each input file is sampled independently (one worker per file, as T2T's stride sampling is
sequential within a file); the sampled lines are tokenized with T2T's invertible tokenizer and
counted per file, and `CombinePerKey(sum)` adds the counts of all files that feed one
vocabulary. The output is batches of `(vocab_name, token, count)` triples, the input of the
refinement passes, plus per-file sampling statistics.
"""

import collections
import zlib

import apache_beam as beam

from transforms import file_io
from transforms.codecs import tokenizer
from transforms.codecs.subword import ESCAPE_CHARS, RESERVED_TOKENS
from transforms.text_lines import iter_raw_lines, sample_lines_for_vocab

STATS = "stats"


class _SampleFileFn(beam.DoFn):
    """(vocab_name, path, file_size) -> ((vocab_name, token), count) for the file's sample."""

    def __init__(self, byte_budget, on_invalid_utf8="error", tokenize=tokenizer.encode):
        self._budget = byte_budget
        self._on_invalid = on_invalid_utf8
        self._tokenize = tokenize

    def process(self, item):
        vocab_name, path, file_size = item
        counts = collections.Counter()
        lines = chars = 0
        with file_io.open_text_source(path) as f:
            for line in sample_lines_for_vocab(iter_raw_lines(f), file_size, self._budget, path,
                                               self._on_invalid):
                counts.update(self._tokenize(line))
                lines += 1
                chars += len(line)
        for token, count in counts.items():
            yield (vocab_name, token), count
        yield beam.pvalue.TaggedOutput(STATS, {
            "vocab": vocab_name, "path": path, "sampled_lines": lines, "sampled_chars": chars,
            "distinct_tokens_in_file": len(counts)})


class _AlphabetFn(beam.CombineFn):
    """Batches of (vocab_name, token, count) -> {vocab_name: sorted alphabet}."""

    def __init__(self, vocab_names):
        self._names = list(vocab_names)

    def create_accumulator(self):
        return {}

    def add_input(self, acc, batch):
        for name, token, _ in batch:
            acc.setdefault(name, set()).update(token)
        return acc

    def merge_accumulators(self, accs):
        out = {}
        for acc in accs:
            for name, chars in acc.items():
                out.setdefault(name, set()).update(chars)
        return out

    def extract_output(self, acc):
        out = {}
        for name in self._names:
            chars = set(acc.get(name, ())) | set(ESCAPE_CHARS)
            for token in RESERVED_TOKENS:
                chars.update(token)
            out[name] = sorted(chars)
        return out


class SampleAndCountTokens(beam.PTransform):
    """(vocab_name, path, file_size) -> token batches, alphabets and sampling statistics.

    Tokens are spread over `num_batches` batches by a stable hash of the token.

    `tokenize` splits a sampled line into the counted units (T2T's tokenizer by default).
    `batches` and `alphabets` (what the subword refinement needs) only when `batched`.
    Returns a dict of PCollections: `counts` ((vocab_name, token, count) triples), `batches`
    (lists of such triples),
    `alphabets` (one {vocab_name: sorted characters}), `stats` (one dict per file) and
    `distinct` ((vocab_name, number of distinct tokens)).
    """

    def __init__(self, vocab_names, byte_budget, num_batches=16, on_invalid_utf8="error",
                 tokenize=tokenizer.encode, batched=True):
        super().__init__()
        self._batched = batched
        self._on_invalid = on_invalid_utf8
        self._tokenize = tokenize
        self._names = list(vocab_names)
        self._budget = byte_budget
        self._num_batches = num_batches

    def expand(self, files):
        sampled = (files
                   | "Spread" >> beam.Reshuffle()
                   | "SampleAndTokenize" >> beam.ParDo(
                       _SampleFileFn(self._budget, self._on_invalid, self._tokenize))
                   .with_outputs(STATS, main="counts"))
        totals = sampled.counts | "SumCounts" >> beam.CombinePerKey(sum)
        triples = totals | "Flatten" >> beam.MapTuple(lambda key, count: (key[0], key[1], count))
        distinct = (triples
                    | "VocabName" >> beam.Map(lambda t: t[0])
                    | "CountDistinct" >> beam.combiners.Count.PerElement())
        outputs = {"counts": triples, "stats": sampled[STATS], "distinct": distinct}
        if self._batched:
            # A fixed number of batches keyed by a stable token hash: large enough elements
            # for the refinement passes to do real work per element, whatever the bundles.
            outputs["batches"] = (
                triples
                | "KeyByTokenHash" >> beam.Map(
                    lambda t, n=self._num_batches: (zlib.crc32(t[1].encode("utf-8")) % n, t))
                | "GroupIntoBatches" >> beam.GroupByKey()
                | "DropKey" >> beam.MapTuple(lambda _, batch: list(batch)))
            outputs["alphabets"] = outputs["batches"] | "Alphabets" >> beam.CombineGlobally(
                _AlphabetFn(self._names))
        return outputs
