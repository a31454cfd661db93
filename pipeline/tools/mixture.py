"""A mixture of a many-pairs output's language pairs for training: each pair's own shards read
at a rate, as seqio's Mixtures, Grain's mixing and fairseq's sampling do.

    from pipeline.tools import mixture
    mixed = mixture.Mixture("out", temperature=5, seed=1)      # or rates={"en-de": 2, ...}
    reader.make_dataset(mixed, batch_size=4096, mode="t2t")      # tf.data
    batches.grain_batches(mixed, 4096, mode="t2t")               # ArrayRecord, no TensorFlow
    batches.parquet_batches(mixed, 4096, mode="t2t")             # Parquet, no TensorFlow
    for pair, record in mixed.records(): ...                     # serialized Examples

A job with several corpora writes each language pair's records in shards of its own
(`{problem}~{src}-{tgt}-train-...`, listed per pair in the summary's `language_pairs`), so
the rate of each pair is the trainer's to choose. `Mixture` takes the output directory (its
complete output: `reader.complete_output_files`' checks) and either a temperature (pair p's
rate is (n_p / N) ** (1 / T) times its corpora's weight, normalized: `transforms.pairs.mixing`,
n_p its pairs written) or per-pair rates (normalized; a pair left out is not read). Packed
records (--packed_length) are drawn at a pair's rate over its pairs per record, so that the
pairs, not the records, arrive at the rates.

The stream is deterministic: record i comes from the pair a seeded numpy generator draws for
it (`draw`), and each pair's records are read again once read (a pair is repeated, not
exhausted: the stream is as long as the trainer takes, or `num_records`). So the share of
pair p among the first n records is a multinomial sample of rate p (tested within its
sampling error), and the same seed gives the same stream on any machine. Each cycle through
a pair comes in a new order, as fairseq resamples each epoch and Grain's `mix` shuffles its
sources: its shards in an order drawn for that cycle, through a shuffle buffer of
`SHUFFLE_BUFFER` records (tf.data's kind: bounded memory whatever the pair's size), both
seeded by (seed, pair, cycle). `records(shuffle=False)` reads them in name order every cycle.
tf.data (`reader.make_dataset`) draws with `tf.data.Dataset.sample_from_datasets` instead
(TensorFlow's own, seeded), each pair through `Dataset.shuffle` reshuffled every repeat.

Importing this module imports no TensorFlow (`pipeline.tools.batches` uses it), and a local
output is mixed without importing Beam (`pipeline.tools.output_files`): a trainer's process
pays neither import, and Beam's start-up line is not printed.
"""

import random
import warnings
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from pipeline.tools import output_files
from pipeline.tools.bucketing import buffer_shuffled
from transforms.pairs import mixing
from transforms.shards.record_formats import format_of
from transforms.storage import paths

DRAW_BLOCK = 4096  # pair choices drawn at once (the stream is the same for any block size)
SHUFFLE_BUFFER = 10_000  # records of a pair shuffled at once (each pair has its own buffer)


class Mixture:
    """The language pairs of `output_dir`'s `split` at `temperature` (default 5) or at
    `rates` ({pair: rate}), drawn with `seed`; `num_records` (None: no end) bounds the
    stream. `flags`: Beam's file system flags for an object store (as
    `reader.complete_output_files` takes them). ValueError for an output of one language
    pair, an unknown pair, a rate for a pair without records, or a split written as one
    mixed set (--mix_shards); a UserWarning names the pairs without records (every pair
    rejected) a temperature leaves out."""

    def __init__(self, output_dir: str, temperature: Optional[float] = None,
                 rates: Optional[Mapping[str, float]] = None, seed: int = 0,
                 split: str = "train", num_records: Optional[int] = None,
                 problem: Optional[str] = None, flags: Optional[Sequence[str]] = None,
                 require_complete: bool = True) -> None:
        from pipeline.tools import reader
        if temperature is not None and rates is not None:
            raise ValueError("give a temperature or rates, not both")
        if require_complete:  # raises IncompleteOutputError for an incomplete output
            reader.complete_output_files(output_dir, split, problem, flags=flags)
        problem = output_files.find_problem(output_dir, problem)
        summary = output_files.read_summary(output_dir, problem)
        books = summary["splits"].get(split, {}).get("language_pairs")
        if not books:
            raise ValueError("%s: the %s split holds one language pair: read it with "
                             "make_dataset or the batches" % (output_dir, split))
        if not any(entry["shards"] for entry in books.values()):
            raise ValueError("%s: the %s split is one mixed set of shards (--mix_shards): read "
                             "it with make_dataset or the batches" % (output_dir, split))
        self.output_dir = output_dir
        self.split = split
        self.seed = seed
        self.num_records = num_records
        self.files: Dict[str, List[str]] = {
            pair: [paths.join(output_dir, name) for name in sorted(entry["shards"])]
            for pair, entry in sorted(books.items())}
        # a pair of which every pair was rejected (--max_length) has no records to mix
        empty = sorted(pair for pair, entry in books.items() if not entry["pairs_written"])
        if rates is not None:
            unknown = sorted(set(rates) - set(books))
            if unknown:
                raise ValueError("no language pair %s in %s (it has %s)" % (
                    ", ".join(unknown), output_dir, ", ".join(sorted(books))))
            if any(not rate >= 0 for rate in rates.values()) or not sum(rates.values()) > 0:
                raise ValueError("rates must be 0 or more, some more than 0: %r" % (rates,))
            named = [pair for pair in empty if rates.get(pair, 0) > 0]
            if named:
                raise ValueError("%s: language pair %s has no records (every pair of it was "
                                 "rejected: its books in the summary say why): give it no rate"
                                 % (output_dir, ", ".join(named)))
            total = float(sum(rates.values()))
            chosen = {pair: rates.get(pair, 0.0) / total for pair in sorted(books)}
        else:
            if empty:
                warnings.warn("%s: language pair %s has no records (every pair of it was "
                              "rejected: its books in the summary say why), left out of the "
                              "mixture" % (output_dir, ", ".join(empty)), stacklevel=2)
            chosen = mixing.temperature_shares(
                {pair: [(entry["pairs_written"], entry.get("weight", 1.0))]
                 for pair, entry in books.items()}, 5.0 if temperature is None else temperature)
        # packed records (--packed_length) hold several pairs each: a pair's records are
        # drawn at its rate over its pairs per record, so its pairs arrive at its rate
        per_record = {pair: entry["packing"]["pairs_per_record"]
                      for pair, entry in books.items() if entry.get("packing", {}).get(
                          "pairs_per_record")}
        if per_record:
            chosen = {pair: rate / per_record.get(pair, 1.0) for pair, rate in chosen.items()}
            total = sum(chosen.values())
            chosen = {pair: rate / total for pair, rate in chosen.items()}
        self.rates: Dict[str, float] = {pair: rate for pair, rate in sorted(chosen.items())
                                        if rate > 0}

    @property
    def pairs(self) -> List[str]:
        """The pairs read (rate above 0), in order."""
        return list(self.rates)

    def all_files(self) -> List[str]:
        """Every shard the mixture reads."""
        return [path for pair in self.pairs for path in self.files[pair]]

    def draw(self, seed: Optional[int] = None) -> Iterator[int]:
        """The index (into `pairs`) of each record's pair, from a generator seeded with
        `seed` (default: the mixture's)."""
        generator = np.random.default_rng(self.seed if seed is None else seed)
        weights = np.array([self.rates[pair] for pair in self.pairs])
        weights = weights / weights.sum()
        produced = 0
        while self.num_records is None or produced < self.num_records:
            block = generator.choice(len(weights), size=DRAW_BLOCK, p=weights)
            for index in block.tolist():
                if self.num_records is not None and produced >= self.num_records:
                    return
                produced += 1
                yield index

    def _pair_records(self, index: int, shuffle: bool, seed: int) -> Iterator[bytes]:
        """The records (serialized Examples) of pair `pairs[index]`, over and over: each
        cycle in a new order drawn from (seed, pair, cycle) (`shuffle`), else its shards in
        name order."""
        pair = self.pairs[index]
        cycle = 0
        while True:
            rng = random.Random("%d %s %d" % (seed, pair, cycle))
            files = list(self.files[pair])
            if shuffle:
                rng.shuffle(files)
            records = (record for path in files for record in format_of(path).read_shard(path))
            found = False
            for record in buffer_shuffled(records, SHUFFLE_BUFFER, rng) if shuffle else records:
                found = True
                yield record
            if not found:
                raise ValueError("%s: language pair %s has no records" % (self.output_dir, pair))
            cycle += 1

    def records(self, shuffle: bool = True, seed: Optional[int] = None
                ) -> Iterator[Tuple[str, bytes]]:
        """(pair, serialized Example) of the mixed stream (`draw`), each pair reshuffled
        every cycle unless `shuffle` is False. `seed`: the stream's, instead of the
        mixture's own (both the draw and the orders)."""
        seed = self.seed if seed is None else seed
        streams = [self._pair_records(i, shuffle, seed) for i in range(len(self.pairs))]
        pairs = self.pairs
        for index in self.draw(seed):
            yield pairs[index], next(streams[index])

    def tf_records(self, tf: Any, shuffle: bool = True, seed: Optional[int] = None) -> Any:
        """The mixed stream as a `tf.data.Dataset` of serialized records: each pair's shards
        repeated (with `shuffle`, through `Dataset.shuffle(SHUFFLE_BUFFER)` reshuffled every
        repeat), drawn by `tf.data.Dataset.sample_from_datasets` with the seed."""
        from pipeline.tools.reader import _record_files, _records_dataset
        seed = self.seed if seed is None else seed
        datasets = []
        for index, pair in enumerate(self.pairs):
            dataset = _records_dataset(tf, _record_files(self.files[pair], False))
            if shuffle:
                dataset = dataset.shuffle(SHUFFLE_BUFFER, seed=seed * 1009 + index,
                                          reshuffle_each_iteration=True)
            datasets.append(dataset.repeat())
        mixed = tf.data.Dataset.sample_from_datasets(
            datasets, weights=[self.rates[pair] for pair in self.pairs], seed=seed)
        return mixed.take(self.num_records) if self.num_records is not None else mixed
