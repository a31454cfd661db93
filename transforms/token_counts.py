"""SampleAndCountTokens: T2T's byte-budget vocab sample, tokenized, counted by a Beam combine.

Each input file is sampled independently (one worker per file, as T2T's stride sampling is
sequential within a file); the sampled lines are tokenized with T2T's invertible tokenizer and
counted per file, and `CombinePerKey(sum)` adds the counts of all files that feed one
vocabulary. The output is `(vocab_name, token, count)` triples, plus per-file sampling statistics.
"""

import collections

import apache_beam as beam

from transforms import file_io
from transforms.codecs import tokenizer
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


class SampleAndCountTokens(beam.PTransform):
    """(vocab_name, path, file_size) -> token counts and sampling statistics.

    `tokenize` splits a sampled line into the counted units (T2T's tokenizer by default).
    Returns a dict of PCollections: `counts` ((vocab_name, token, count) triples), `stats`
    (one dict per file) and `distinct` ((vocab_name, number of distinct tokens)).
    """

    def __init__(self, byte_budget, on_invalid_utf8="error", tokenize=tokenizer.encode):
        super().__init__()
        self._on_invalid = on_invalid_utf8
        self._tokenize = tokenize
        self._budget = byte_budget

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
        return {"counts": triples, "stats": sampled[STATS], "distinct": distinct}
