"""The text output's stand-in for `PairEncoder` (`--output_format text`): the pairs' text as
records, keyed for the shuffle as encoded pairs are, and counted without a vocabulary.

No vocabulary is learnt for a text output (the trainer tokenizes), so there are no ids to
count: a pair's lengths are its sides' characters (the summary and the length report say
so: `transforms.encode.length_stats` takes whatever unit the tally holds), and its record is
the Example of the two sides' bytes (`transforms.shards.text_format.text_record`), which
the text format writes as two line-aligned files. Same calls as `PairEncoder`, so the encode
DoFn reads, rejects, shuffles and writes fragments as for every format.
"""

from typing import List

from transforms.formats.example_proto import Int64FeaturesWriter
from transforms.pairs.chunk_reading import LinePair
from transforms.pairs.pair_encoding import BlockPlan, EncodedBlock, PairTally, shard_records


class TextPairs:
    """Records of pairs' text (`examples`: the Example writer)."""

    def __init__(self, examples: Int64FeaturesWriter) -> None:
        self._examples = examples

    @staticmethod
    def measure(pairs: List[LinePair], plan: BlockPlan) -> PairTally:
        """`pairs`' characters (each side's characters are its length)."""
        tally = PairTally()
        for _, source, target in pairs:
            tally.chars[0] += len(source)
            tally.chars[1] += len(target)
            tally.ids[0] += len(source)
            tally.ids[1] += len(target)
            tally.lengths.append((len(source), len(target)))
        return tally

    def encode(self, pairs: List[LinePair], plan: BlockPlan) -> EncodedBlock:
        """As `PairEncoder.encode`, with the text as the record; no pair is too long (a
        text output takes no --max_length) and no tag is written (nor --lang_tags taken)."""
        serialize = self._examples.serialize
        records = [serialize({"inputs": source.encode("utf-8"),
                              "targets": target.encode("utf-8")})
                   for _, source, target in pairs]
        return EncodedBlock(shard_records(pairs, records, plan), self.measure(pairs, plan),
                            PairTally(), [])
