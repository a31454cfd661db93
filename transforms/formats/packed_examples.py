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
writes them. The bytes here list the features sorted by name (`Int64FeaturesWriter`); T2T's
own `SerializeToString()` writes the map in the protobuf runtime's hash order, so equality
with T2T is of the features, record by record (tests/end_to_end/test_packing.py runs T2T's
`_pack_fn` itself on the same shards).

Pure Python: no Beam, no TensorFlow. The shard writer (`transforms.shuffled_shards`) packs
each shard's records in shard order, which is this job's shuffled order.
"""

from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from transforms.elements import JsonValue, PackingReport
from transforms.formats.example_proto import Int64FeaturesWriter

SPACING = 0     # Text2TextProblem.packed_spacing, as every translate problem passes it
QUEUE_SIZE = 10  # pack_examples' default queue_size, which Text2TextProblem keeps
PACKED_FEATURES = ("inputs", "targets", "inputs_segmentation", "inputs_position",
                   "targets_segmentation", "targets_position")
PAIR_FEATURES = ("inputs", "targets")

Ids = List[int]
PackedExample = Dict[str, Ids]


class _Side:
    """One side of a packed record: its ids, segment numbers and positions
    (`generator_utils.SequencePacker`)."""

    __slots__ = ("ids", "segmentation", "position")

    def __init__(self, first: Sequence[int]) -> None:
        self.ids = list(first)
        self.segmentation = [1] * len(first)
        self.position = list(range(len(first)))

    def can_fit(self, ids: Sequence[int], packed_length: int, spacing: int) -> bool:
        return len(self.ids) + spacing + len(ids) <= packed_length

    def add(self, ids: Sequence[int], spacing: int) -> None:
        padding = [0] * spacing
        # T2T numbers the next segment after the last entry, which is spacing only when the
        # first sequence was empty: kept as it is
        segment = self.segmentation[-1] + 1 if self.segmentation else 1
        self.ids.extend(padding + list(ids))
        self.segmentation.extend(padding + [segment] * len(ids))
        self.position.extend(padding + list(range(len(ids))))


class _Record:
    """An open packed record of pairs (`generator_utils.SequencePairPacker`)."""

    __slots__ = ("inputs", "targets", "pairs")

    def __init__(self, pair: Tuple[Sequence[int], Sequence[int]]) -> None:
        self.inputs, self.targets = _Side(pair[0]), _Side(pair[1])
        self.pairs = 1

    def can_fit(self, pair: Tuple[Sequence[int], Sequence[int]], packed_length: int,
                spacing: int) -> bool:
        return (self.inputs.can_fit(pair[0], packed_length, spacing)
                and self.targets.can_fit(pair[1], packed_length, spacing))

    def add(self, pair: Tuple[Sequence[int], Sequence[int]], spacing: int) -> None:
        self.inputs.add(pair[0], spacing)
        self.targets.add(pair[1], spacing)
        self.pairs += 1

    def features(self) -> PackedExample:
        return {"inputs": self.inputs.ids, "inputs_segmentation": self.inputs.segmentation,
                "inputs_position": self.inputs.position, "targets": self.targets.ids,
                "targets_segmentation": self.targets.segmentation,
                "targets_position": self.targets.position}


def pack_pairs(pairs: Iterable[Tuple[Sequence[int], Sequence[int]]], packed_length: int,
               spacing: int = SPACING, queue_size: int = QUEUE_SIZE
               ) -> Iterator[Tuple[PackedExample, int]]:
    """(packed features, pairs in it) of `pairs` [(inputs ids, targets ids)], in T2T's
    order (`generator_utils.pack_examples(..., has_inputs=True)`; see the module
    docstring)."""
    if packed_length < 1 or spacing < 0 or queue_size < 1:
        raise ValueError("packed_length and queue_size must be positive, spacing not negative")
    queue: List[_Record] = []
    for pair in pairs:
        for record in queue:
            if record.can_fit(pair, packed_length, spacing):
                record.add(pair, spacing)
                break
        else:
            if len(queue) == queue_size:
                oldest = queue.pop(0)
                yield oldest.features(), oldest.pairs
            queue.append(_Record(pair))
    for record in queue:
        yield record.features(), record.pairs


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

    def add(self, features: PackedExample, pairs: int, packed_length: int) -> None:
        self.records += 1
        self.pairs += pairs
        lengths = (len(features["inputs"]), len(features["targets"]))
        for side, segments in enumerate((features["inputs_segmentation"],
                                         features["targets_segmentation"])):
            self.ids[side] += len(segments) - segments.count(0)
        if max(lengths) > packed_length:
            self.over_length += 1
        self.pairs_per_record[pairs] = self.pairs_per_record.get(pairs, 0) + 1

    def report(self) -> PackingReport:
        """JSON-able, for the shard's report (`ShardReport["packing"]`)."""
        return {"records": self.records, "pairs": self.pairs, "ids": list(self.ids),
                "over_length": self.over_length,
                "pairs_per_record": sorted(self.pairs_per_record.items())}


def pack_records(records: Iterable[bytes], packed_length: int, tally: PackingTally,
                 examples: Optional[Int64FeaturesWriter] = None) -> Iterator[bytes]:
    """The packed records (serialized Examples) of `records` (serialized Examples of one
    pair each, in shard order), counted into `tally`; streamed, holding at most
    `QUEUE_SIZE` open records."""
    examples = examples or Int64FeaturesWriter()
    parse, serialize = examples.parse, examples.serialize

    def pairs() -> Iterator[Tuple[Ids, Ids]]:
        for record in records:
            features = parse(bytes(record))
            yield features.get("inputs", []), features.get("targets", [])

    for features, count in pack_pairs(pairs(), packed_length):
        tally.add(features, count, packed_length)
        yield serialize(features)


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
