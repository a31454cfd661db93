"""The text output's stand-in for `PairEncoder` (`--output_format text`): the pairs' text as
records, keyed for the shuffle as encoded pairs are, and counted without a vocabulary.

No vocabulary is learnt for a text output (the trainer tokenizes), so there are no ids to
count: a pair's lengths are its sides' characters (the summary and the length report say
so: `transforms.encode.length_stats` takes whatever unit the tally holds), and its record is
the Example of the two sides' bytes (`transforms.shards.text_format.text_record`), which
the text format writes as two line-aligned files. Same calls as `PairEncoder`, so the encode
DoFn reads, rejects, shuffles and writes fragments as for every format.
"""

from typing import Callable, Dict, List, Optional, Tuple

from transforms.contracts.elements import FragmentEntry
from transforms.formats.example_proto import Int64FeaturesWriter
from transforms.pairs.chunk_reading import LinePair
from transforms.pairs.pair_encoding import PairTally, shard_of


class TextPairs:
    """Records of pairs' text (`examples`: the Example writer)."""

    def __init__(self, examples: Int64FeaturesWriter) -> None:
        self._examples = examples

    @staticmethod
    def measure(pairs: List[LinePair], tally: PairTally,
                prefix: Tuple[bytes, int] = (b"", 0),
                target_prefix: Tuple[bytes, int] = (b"", 0)) -> None:
        """Adds `pairs`' characters to `tally` (each side's characters are its length)."""
        for _, source, target in pairs:
            tally.chars[0] += len(source)
            tally.chars[1] += len(target)
            tally.ids[0] += len(source)
            tally.ids[1] += len(target)
            tally.lengths.append((len(source), len(target)))

    def encode(self, pairs: List[LinePair], key_of: Callable[[int], int], dataset_index: int,
               num_shards: int, by_shard: Dict[int, List[FragmentEntry]],
               tally: PairTally, max_length: int = 0,
               too_long: Optional[PairTally] = None, prefix: Tuple[bytes, int] = (b"", 0),
               pair_entry: bytes = b"", target_prefix: Tuple[bytes, int] = (b"", 0)
               ) -> List[LinePair]:
        """As `PairEncoder.encode`, with the text as the record; no pair is too long (a
        text output takes no --max_length) and no tag is written (nor --lang_tags taken)."""
        self.measure(pairs, tally)
        serialize = self._examples.serialize
        for number, source, target in pairs:
            key = key_of(number)
            by_shard.setdefault(shard_of(key, num_shards), []).append((
                key, dataset_index, number, serialize({"inputs": source.encode("utf-8"),
                                                       "targets": target.encode("utf-8")})))
        return []
