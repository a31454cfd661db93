"""Packed examples (`--packed_length N`): several pairs in one record, as Tensor2Tensor 1.15.7
packs them for TPU training.

T2T's `Text2TextProblem.generate_data` hands each shard, after its shuffle, to `_pack_fn`,
which calls `generator_utils.pack_examples(examples, has_inputs=True, packed_length,
spacing=packed_spacing, chop_long_sequences=not has_inputs)` with `queue_size` at its default
of 10. For a translate problem that is `spacing` 0 (`Text2TextProblem.packed_spacing`; no
translate problem overrides it) and no chopping (pairs have inputs). The rule, here as there:

- a queue of at most `QUEUE_SIZE` open records, oldest first;
- each pair goes into the first open record where both sides still fit: a side fits when the
  record's side, plus `spacing` zeros, plus the pair's side has at most `packed_length` ids;
- a pair that fits nowhere opens a new record; when the queue is full, its oldest record is
  written first (a pair longer than `packed_length` thus ends up alone in its record, which
  then never fits anything: T2T writes such pairs unchanged, and its reader's `max_length`,
  the problem's `packed_length`, drops them in training);
- at the end the open records are written, oldest first.

A packed record holds `inputs` and `targets` (the sides concatenated, `spacing` zeros between
pairs; no padding to `packed_length`), `inputs_segmentation`/`targets_segmentation` (the
pair's number in the record, from 1; 0 on spacing) and `inputs_position`/`targets_position`
(the id's position within its pair; 0 on spacing), int64 lists as `generator_utils.to_example`
writes them. The bytes here are the deterministic serialization (`Int64FeaturesWriter`); T2T's
own `SerializeToString()` writes the map in the protobuf runtime's hash order, so equality
with T2T is of the features, record by record (tests/end_to_end/test_packing_and_max_length.py
runs T2T's `_pack_fn` itself on the same shards).

Pure Python: no Beam, no TensorFlow. The shard writer (`transforms.encode.shuffled_shards`) packs
each shard's records in shard order, which is this job's shuffled order.
"""

from operator import itemgetter
from typing import (Callable, Dict, Hashable, Iterable, Iterator, List, Mapping, Optional,
                    Sequence, Tuple, TypeVar)

from transforms.codecs.varints import count_varints, encode_varints, varint
from transforms.contracts.elements import JsonValue, PackingReport
from transforms.formats.example_proto import (PAIR_FEATURE, Int64FeaturesWriter,
                                              VarintExampleWriter, int64_varints)

SPACING = 0     # Text2TextProblem.packed_spacing, as every translate problem passes it
QUEUE_SIZE = 10  # pack_examples' default queue_size, which Text2TextProblem keeps
PACKED_FEATURES = ("inputs", "targets", "inputs_segmentation", "inputs_position",
                   "targets_segmentation", "targets_position")
PAIR_FEATURES = ("inputs", "targets")

Ids = List[int]
PackedExample = Dict[str, Ids]
T = TypeVar("T")


def pack_groups(pairs: Iterable[Tuple[int, int, T]], packed_length: int,
                spacing: int = SPACING, queue_size: int = QUEUE_SIZE,
                key: Optional[Callable[[T], Hashable]] = None) -> Iterator[List[T]]:
    """The items of each packed record, in T2T's order, from (inputs length, targets
    length, item) of each pair (`generator_utils.pack_examples(..., has_inputs=True)`'s
    choice; see the module docstring): only the lengths decide.

    `key` (None: one queue, T2T's): a queue of its own per `key(item)`, so that a record
    holds the pairs of one key only (a language pair: `pack_records`); each queue packs its
    pairs as T2T's one queue would, and at the end the open records of every queue are
    written in the order they were opened."""
    if packed_length < 1 or spacing < 0 or queue_size < 1:
        raise ValueError("packed_length and queue_size must be positive, spacing not negative")
    # open records per key: [inputs length, targets length, [items], when opened]
    queues: Dict[Hashable, List[List]] = {}
    queue = queues[None] = []
    opened = 0
    for a, b, item in pairs:
        if key is not None:
            queue = queues.setdefault(key(item), [])
        for record in queue:
            if (record[0] + spacing + a <= packed_length
                    and record[1] + spacing + b <= packed_length):
                record[0] += spacing + a
                record[1] += spacing + b
                record[2].append(item)
                break
        else:
            if len(queue) == queue_size:
                yield queue.pop(0)[2]
            queue.append([a, b, [item], opened])
            opened += 1
    for record in sorted((r for queue in queues.values() for r in queue), key=lambda r: r[3]):
        yield record[2]


def segment_numbers(lengths: Sequence[int], spacing: int) -> List[int]:
    """Each sequence's number in a side of a packed record, as T2T's `SequencePacker.add`
    numbers it: one more than the side's last segmentation entry, which is spacing (0) or
    nothing only after an empty sequence (kept as T2T has it)."""
    numbers: List[int] = []
    last: Optional[int] = None
    for k, n in enumerate(lengths):
        number = 1 if k == 0 or last is None else last + 1
        numbers.append(number)
        if n:
            last = number
        elif k and spacing:
            last = 0
    return numbers


def pack_pairs(pairs: Iterable[Tuple[Sequence[int], Sequence[int]]], packed_length: int,
               spacing: int = SPACING, queue_size: int = QUEUE_SIZE
               ) -> Iterator[Tuple[PackedExample, int]]:
    """(packed features, pairs in it) of `pairs` [(inputs ids, targets ids)], as lists: the
    reference form (`pack_records` writes the same records as bytes)."""
    groups = pack_groups(((len(a), len(b), (list(a), list(b))) for a, b in pairs),
                         packed_length, spacing, queue_size)
    for group in groups:
        features: PackedExample = {}
        for side, name in enumerate(PAIR_FEATURES):
            sequences = [pair[side] for pair in group]
            numbers = segment_numbers([len(ids) for ids in sequences], spacing)
            ids: Ids = []
            segmentation: Ids = []
            position: Ids = []
            for k, (sequence, number) in enumerate(zip(sequences, numbers)):
                padding = [0] * (spacing if k else 0)
                ids += padding + sequence
                segmentation += padding + [number] * len(sequence)
                position += padding + list(range(len(sequence)))
            features.update({name: ids, name + "_segmentation": segmentation,
                             name + "_position": position})
        yield features, len(group)


class PackingTally:
    """What packing one shard did: records written, pairs in them, ids per side (spacing
    excluded), records longer than `packed_length` on a side (a pair alone that T2T's reader
    drops in training) and {pairs in a record: records}."""

    def __init__(self) -> None:
        self.records = 0
        self.pairs = 0
        self.ids = [0, 0]
        self.over_length = 0
        self.pairs_per_record: Dict[int, int] = {}

    def add(self, lengths: Sequence[int], ids: Sequence[int], pairs: int,
            packed_length: int) -> None:
        """One record: its sides' `lengths` (spacing included) and `ids` (without)."""
        self.records += 1
        self.pairs += pairs
        self.ids[0] += ids[0]
        self.ids[1] += ids[1]
        if max(lengths) > packed_length:
            self.over_length += 1
        self.pairs_per_record[pairs] = self.pairs_per_record.get(pairs, 0) + 1

    def report(self) -> PackingReport:
        """JSON-able, for the shard's report (`ShardReport["packing"]`)."""
        return {"records": self.records, "pairs": self.pairs, "ids": list(self.ids),
                "over_length": self.over_length,
                "pairs_per_record": sorted(self.pairs_per_record.items())}


# a pair's sides as varints, their id counts, and its `lang_pair` (b"": none)
_PairVarints = Tuple[bytes, bytes, int, int, bytes]


class _PackedRecordWriter:
    """Packed records as bytes, their ids kept as varints throughout: each side is its
    pairs' varints joined, its segmentation and position built of varints too."""

    def __init__(self, spacing: int = SPACING) -> None:
        self._writer = VarintExampleWriter(PACKED_FEATURES, (PAIR_FEATURE,))
        self._examples = Int64FeaturesWriter()
        self._spacing = spacing
        self._padding = b"\x00" * spacing
        self._positions: Dict[int, bytes] = {}  # n -> the varints of 0 .. n - 1
        self._texts: Dict[str, bytes] = {}  # a record's bytes features, as read

    def sides(self, record: bytes) -> _PairVarints:
        """A pair record's sides as concatenated varints, their id counts and its
        `lang_pair` (b"" without one)."""
        texts = self._texts
        texts.clear()
        features = int64_varints(record, texts)
        if features is None:  # not this project's layout: through the protobuf runtime
            parsed = self._examples.parse_all(record)
            inputs, targets = (encode_varints(parsed.get(name, [])) for name in PAIR_FEATURES)
            pair = parsed.get(PAIR_FEATURE, b"")
        else:
            inputs, targets = features.get("inputs", b""), features.get("targets", b"")
            pair = texts.get(PAIR_FEATURE, b"")
        return inputs, targets, count_varints(inputs), count_varints(targets), pair

    def _position(self, n: int) -> bytes:
        known = self._positions.get(n)
        if known is None:
            known = self._positions[n] = encode_varints(range(n))
        return known

    def write(self, group: List[_PairVarints], tally: PackingTally, packed_length: int
              ) -> bytes:
        """The record of `group`'s pairs (of one language pair, whose `lang_pair` it
        carries), counted into `tally`."""
        packed: Dict[str, bytes] = {}
        lengths, ids = [], []
        join = self._padding.join
        sides = (([pair[0] for pair in group], [pair[2] for pair in group]),
                 ([pair[1] for pair in group], [pair[3] for pair in group]))
        for name, (sequences, counts) in zip(PAIR_FEATURES, sides):
            numbers = segment_numbers(counts, self._spacing)
            packed[name] = join(sequences)
            packed[name + "_segmentation"] = join(
                varint(number) * n for number, n in zip(numbers, counts))
            packed[name + "_position"] = join(self._position(n) for n in counts)
            ids.append(sum(counts))
            lengths.append(ids[-1] + self._spacing * (len(counts) - 1))
        tally.add(lengths, ids, len(group), packed_length)
        pair = group[0][4]
        return self._writer.serialize(packed, {PAIR_FEATURE: pair} if pair else None)


def pack_records(records: Iterable[bytes], packed_length: int, tally: PackingTally
                 ) -> Iterator[bytes]:
    """The packed records (serialized Examples) of `records` (serialized Examples of one
    pair each, in shard order), counted into `tally`; streamed, holding at most
    `QUEUE_SIZE` open records (per language pair). The bytes equal `pack_pairs`' features
    serialized by `Int64FeaturesWriter` (the tests hold them equal).

    Records of several language pairs (a `lang_pair` feature: a --mix_shards shard) are
    packed per pair, a queue each (`pack_groups`' `key`): T2T's packing has no place for a
    feature of the pair, and a record of one pair keeps its `lang_pair`, and its target
    language tag in every segment the same. A shard of one pair packs as T2T packs it."""
    writer = _PackedRecordWriter()

    def items() -> Iterator[Tuple[int, int, _PairVarints]]:
        for record in records:
            pair = writer.sides(bytes(record))
            yield pair[2], pair[3], pair

    for group in pack_groups(items(), packed_length, key=itemgetter(4)):
        yield writer.write(group, tally, packed_length)


def unpack(features: Mapping[str, Sequence[int]]) -> List[Tuple[List[int], List[int]]]:
    """The pairs (inputs ids, targets ids) of a packed record's features, in its order,
    from the segmentation features (spacing dropped); for `inspect` and tests."""
    sides = []
    for side in PAIR_FEATURES:
        segments: Dict[int, List[int]] = {}
        for value, segment in zip(features[side], features[side + "_segmentation"]):
            if segment:
                segments.setdefault(segment, []).append(value)
        sides.append(segments)
    numbers = sorted(set(sides[0]) | set(sides[1]))
    return [(sides[0].get(n, []), sides[1].get(n, [])) for n in numbers]


def packing_figures(reports: Iterable[PackingReport], packed_length: int
                    ) -> Dict[str, JsonValue]:
    """A split's packing, summed from its shards' `PackingTally.report()`s: for the
    summary, the final table and the length report."""
    records = pairs = over = 0
    ids = [0, 0]
    per_record: Dict[int, int] = {}
    for report in reports:
        records += report["records"]
        pairs += report["pairs"]
        over += report["over_length"]
        for side, n in enumerate(report["ids"]):
            ids[side] += n
        for k, n in report["pairs_per_record"]:
            per_record[k] = per_record.get(k, 0) + n
    capacity = records * packed_length
    return {
        "packed_length": packed_length, "records": records, "pairs": pairs,
        "pairs_per_record": round(pairs / records, 4) if records else 0.0,
        "ids": {"inputs": ids[0], "targets": ids[1]},
        "fill": {side: round(n / capacity, 4) if capacity else 0.0
                 for side, n in zip(PAIR_FEATURES, ids)},
        "over_length": over,
        "histogram": [[k, per_record[k]] for k in sorted(per_record)]}
