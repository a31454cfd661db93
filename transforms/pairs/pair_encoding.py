"""Encoding pairs: blocks of valid line pairs become serialized `tf.train.Example` records keyed
for the deterministic shuffle, with the counts the summary and length report need.

Pure Python (no Beam, no TensorFlow): it takes the two loaded `Vocabulary` objects and an
Example writer (`transforms.formats.example_proto.PairExampleWriter`), and hands back
records grouped by shard; writing them is the caller's (`transforms.encode.encode_pairs`). Each side
is encoded and its EOS ids appended, exactly as T2T's `text2text_generate_encoded`.

The shuffle order is global and fixed by the seed: a pair's key is a 64-bit hash of the seed
and its position (split, dataset index, line number), and a shard is a contiguous range of the
key space, so a pair lands in the same shard at the same place whichever worker encodes it.
"""

import hashlib
from itertools import repeat
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

from transforms.pairs.chunk_reading import LinePair
from transforms.codecs.varints import encode_varints
from transforms.codecs.vocabulary import Vocabulary
from transforms.contracts.elements import FragmentEntry
from transforms.formats.example_proto import PairExampleWriter

LINE_CACHE_SIZE = 1 << 17  # lines per side whose Example entries are kept (~60 MB at most)

# {text: (Example feature entry, ids with EOS, ids without EOS, OOV words, characters)}
LineEntry = Tuple[bytes, int, int, int, int]
LineEntries = Dict[str, LineEntry]
PairLengths = Tuple[int, int]  # (source, target) ids with EOS of a pair


def shuffle_key(seed: int, split: str, pair_index: int, line_number: int) -> int:
    """A 64-bit key from the seed and the pair's position: the global shuffle order."""
    return shuffle_keys(seed, split, pair_index)(line_number)


def shuffle_keys(seed: int, split: str, pair_index: int) -> Callable[[int], int]:
    """line number -> `shuffle_key(seed, split, pair_index, line number)`: the part the lines
    of a file pair share is formatted once."""
    prefix = b"%d\x00%s\x00%d\x00" % (seed, split.encode(), pair_index)
    blake2b, from_bytes = hashlib.blake2b, int.from_bytes

    def key(line_number: int) -> int:
        return from_bytes(blake2b(prefix + b"%d" % line_number, digest_size=8).digest(), "big")
    return key


def order_keys(pair_index: int) -> Callable[[int], int]:
    """line number -> a key in input order (--keep_order): the dataset's index, then the
    line's number, so the keys sort as the split's datasets and lines come (all in the
    first part of the key space: one shard a split)."""
    def key(line_number: int) -> int:
        return (pair_index << 32) | line_number
    return key


def copy_keys(seed: int, split: str, pair_index: int) -> Callable[[int, int], int]:
    """(line number, copy) -> the shuffle key of a repeated record's copy 1, 2, ... (copy 0
    is the record itself, `shuffle_keys`): --mix_shards upsamples small pairs so."""
    prefix = b"%d\x00%s\x00%d\x00" % (seed, split.encode(), pair_index)
    blake2b, from_bytes = hashlib.blake2b, int.from_bytes

    def key(line_number: int, copy: int) -> int:
        return from_bytes(blake2b(prefix + b"%d\x00%d" % (line_number, copy),
                                  digest_size=8).digest(), "big")
    return key


def shard_of(key: int, num_shards: int) -> int:
    """Shards are contiguous ranges of the key space."""
    return (key * num_shards) >> 64


class PairTally:
    """What a chunk's encoded (or only measured) pairs add up to: each pair's lengths with
    EOS, and per side the ids without EOS, the OOV words and the characters."""

    def __init__(self) -> None:
        self.lengths: List[PairLengths] = []
        self.ids = [0, 0]      # [source, target] ids without EOS
        self.oov = [0, 0]      # [source, target] out-of-vocabulary words
        self.chars = [0, 0]    # [source, target] characters of the stripped lines

    def token_counts(self) -> List[int]:
        """[source ids, source OOV words, target ids, target OOV words]."""
        return [self.ids[0], self.oov[0], self.ids[1], self.oov[1]]

    def plus(self, other: "PairTally") -> "PairTally":
        """A new tally of both."""
        both = PairTally()
        both.add(self)
        both.add(other)
        return both

    def add(self, other: "PairTally") -> None:
        """Adds `other`'s pairs to this tally (a block's to its chunk's)."""
        self.lengths.extend(other.lengths)
        for mine, theirs in ((self.ids, other.ids), (self.oov, other.oov),
                             (self.chars, other.chars)):
            mine[0] += theirs[0]
            mine[1] += theirs[1]


class BlockPlan(NamedTuple):
    """How every block of one chunk is encoded (the chunk's, so built once a chunk).

    `key_of`: line number -> the record's key (`shuffle_keys`, `order_keys`); `num_shards`:
    how many shards the keys are spread over; `max_length`: --max_length (0: no limit);
    `prefix`/`target_prefix`: (varints, how many) of ids put before every input's / target's
    (a language tag; NLLB-style on the target); `pair_entry`: the records' `lang_pair`
    feature entry (`bytes_entry`), if any."""
    key_of: Callable[[int], int]
    dataset_index: int
    num_shards: int
    max_length: int = 0
    prefix: Tuple[bytes, int] = (b"", 0)
    pair_entry: bytes = b""
    target_prefix: Tuple[bytes, int] = (b"", 0)


class EncodedBlock(NamedTuple):
    """What one block of pairs gave: its records by shard (shard -> [(key, dataset index,
    line number, record)]), the counts of the pairs written, those of the pairs
    --max_length drops (`too_long`), and those pairs (`dropped`: the caller rejects them)."""
    by_shard: Dict[int, List[FragmentEntry]]
    written: PairTally
    too_long: PairTally
    dropped: List[LinePair]


def shard_records(pairs: List[LinePair], records: List[bytes], plan: BlockPlan
                  ) -> Dict[int, List[FragmentEntry]]:
    """{shard: [(key, dataset index, line number, record)]} of `pairs`' `records`, each
    keyed by `plan.key_of(line number)`, in the pairs' order."""
    by_shard: Dict[int, List[FragmentEntry]] = {}
    key_of, index, num_shards = plan.key_of, plan.dataset_index, plan.num_shards
    for (number, _, _), record in zip(pairs, records):
        key = key_of(number)
        by_shard.setdefault(shard_of(key, num_shards), []).append(
            (key, index, number, record))
    return by_shard


class PairEncoder:
    """Encodes blocks of pairs with the `source` and `target` vocabularies (the same object
    when both sides share one), appending each side's EOS ids (`Vocabulary.eos_ids`) and
    building the records with `examples`.

    Parallel corpora repeat lines a lot (on the en-zh bench corpus 76% of English and 52% of
    Chinese lines occur more than once), so each side keeps its recent lines' entries, already
    serialized; the lines not kept are encoded together: framed as entries by the vocabulary
    where it can (`Vocabulary.encode_entries_many`: the subword kernel, one compiled call a
    block), else as varints (`Vocabulary.encode_varints_many`) framed here.
    """

    def __init__(self, source: Vocabulary, target: Vocabulary,
                 examples: PairExampleWriter) -> None:
        self._vocabularies = (source, target)
        # per side: the EOS ids as varints, and how many
        self._eos = tuple((encode_varints(ids), len(ids))
                          for ids in (source.eos_ids(), target.eos_ids()))
        self._examples = examples
        # per side: line -> (Example entry, id count with EOS, id count without EOS, OOV
        # words, characters): the counts kept so a cached line costs no len() calls
        self._line_entries: Tuple[LineEntries, LineEntries] = ({}, {})
        # the source side's entries under a prefix (a language tag's id): one prefix's at a
        # time (a chunk is one pair's), so memory does not grow with the number of pairs
        self._prefixed: List[Tuple[bytes, LineEntries]] = [(b"", {}), (b"", {})]  # per side

    def _entries(self, side: int, texts: List[str], prefix: Tuple[bytes, int] = (b"", 0)
                 ) -> LineEntries:
        """{text: LineEntry} of one side's lines `texts` (the entry holds the ids, EOS
        appended, after `prefix`: the varints of ids put first, and how many)."""
        cache = self._line_entries[side]
        if prefix[0]:
            if self._prefixed[side][0] != prefix[0]:
                self._prefixed[side] = (prefix[0], {})
            cache = self._prefixed[side][1]
        distinct = list(dict.fromkeys(texts))
        entries: Dict[str, Optional[LineEntry]] = dict(zip(distinct, map(cache.get, distinct)))
        new = [text for text, known in entries.items() if known is None]
        if new:
            eos, eos_count = self._eos[side]
            if len(cache) + len(new) > LINE_CACHE_SIZE:
                cache.clear()
            head, head_count = prefix
            vocabulary = self._vocabularies[side]
            framed, counts = vocabulary.encode_entries_many(
                new, self._examples.entry_frame(side), head, eos)
            made: Dict[str, LineEntry] = dict(zip(new, zip(  # a None entry is replaced below
                framed, map((head_count + eos_count).__add__, counts),  # type: ignore[arg-type]
                map(head_count.__add__, counts), repeat(0), map(len, new))))
            if None in framed:  # the lines the vocabulary did not frame: framed here
                rest = [text for text, entry in zip(new, framed) if entry is None]
                entry = self._examples.entry_from_varints
                for text, (packed, count, oov) in zip(
                        rest, vocabulary.encode_varints_many(rest)):
                    made[text] = (
                        entry(side, head + packed + eos), head_count + count + eos_count,
                        head_count + count, oov, len(text))
            cache.update(made)
            entries.update(made)
        return entries  # type: ignore[return-value]  # every value is set now

    def _known(self, pairs: List[LinePair], prefix: Tuple[bytes, int] = (b"", 0),
               target_prefix: Tuple[bytes, int] = (b"", 0)
               ) -> Tuple[List[LineEntry], List[LineEntry]]:
        """The source and target entries of `pairs`, in their order (`prefix` before each
        source's ids)."""
        sources = self._entries(0, [source for _, source, _ in pairs], prefix)
        targets = self._entries(1, [target for _, _, target in pairs], target_prefix)
        return ([sources[source] for _, source, _ in pairs],
                [targets[target] for _, _, target in pairs])

    @staticmethod
    def _count(tally: PairTally, src_known: List[LineEntry], tgt_known: List[LineEntry]
               ) -> None:
        for side, known in enumerate((src_known, tgt_known)):
            tally.ids[side] += sum(k[2] for k in known)
            tally.oov[side] += sum(k[3] for k in known)
            tally.chars[side] += sum(k[4] for k in known)
        tally.lengths.extend(zip([k[1] for k in src_known], [k[1] for k in tgt_known]))

    def measure(self, pairs: List[LinePair], plan: BlockPlan) -> PairTally:
        """The counts of `pairs` as `plan` would encode them (its prefixes), none written:
        the pairs the cleaning stage dropped, for the lengths before it."""
        tally = PairTally()
        self._count(tally, *self._known(pairs, plan.prefix, plan.target_prefix))
        return tally

    def encode(self, pairs: List[LinePair], plan: BlockPlan) -> EncodedBlock:
        """Encodes a block of `pairs` as `plan` says: each pair's record, keyed by
        `plan.key_of(line number)` (`shuffle_keys`), in its shard's list, and its counts.

        With `plan.max_length` (--max_length; 0: no limit), a pair whose longer side has more
        ids than that, as stored (EOS and a language tag included), is not written, as T2T's
        training-time filter drops it (`transforms.encode.length_stats.dropped`): its counts
        go to `too_long` and the pair to `dropped` (both empty without `max_length`)."""
        written, too_long = PairTally(), PairTally()
        dropped: List[LinePair] = []
        src_known, tgt_known = self._known(pairs, plan.prefix, plan.target_prefix)
        max_length = plan.max_length
        if max_length:
            keep = [s[1] <= max_length and t[1] <= max_length
                    for s, t in zip(src_known, tgt_known)]
            if not all(keep):
                dropped = [pair for pair, kept in zip(pairs, keep) if not kept]
                self._count(too_long, [s for s, kept in zip(src_known, keep) if not kept],
                            [t for t, kept in zip(tgt_known, keep) if not kept])
                pairs = [pair for pair, kept in zip(pairs, keep) if kept]
                src_known = [s for s, kept in zip(src_known, keep) if kept]
                tgt_known = [t for t, kept in zip(tgt_known, keep) if kept]
        self._count(written, src_known, tgt_known)
        join, pair_entry = self._examples.join, plan.pair_entry
        records = [join(src[0], tgt[0], pair_entry) for src, tgt in zip(src_known, tgt_known)]
        return EncodedBlock(shard_records(pairs, records, plan), written, too_long, dropped)
