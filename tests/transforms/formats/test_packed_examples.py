"""transforms/formats/packed_examples.py against Tensor2Tensor 1.15.7's own
`generator_utils.pack_examples` (the oracle): the same records, in the same order, for any
pairs, lengths, spacing and queue size; and the Example bytes round trip."""

import pytest
from hypothesis import given, settings, strategies as st

import t2t_reference as t2t
from transforms.formats.example_proto import Int64FeaturesWriter
from transforms.formats.packed_examples import (PACKED_FEATURES, QUEUE_SIZE, SPACING,
                                                PackingTally, pack_pairs, pack_records,
                                                packing_figures, unpack)

ids = st.lists(st.integers(0, 70000), max_size=14)
pairs_of = st.lists(st.tuples(ids, ids), max_size=60)


def _t2t(pairs, packed_length, spacing=SPACING, queue_size=QUEUE_SIZE):
    examples = [{"inputs": list(a), "targets": list(b)} for a, b in pairs]
    return list(t2t.generator_utils.pack_examples(
        examples, True, packed_length, spacing=spacing, queue_size=queue_size,
        chop_long_sequences=False))


@settings(max_examples=300, deadline=None)
@given(pairs_of, st.integers(1, 30), st.integers(0, 3), st.integers(1, 12))
def test_packs_as_t2t_pack_examples(pairs, packed_length, spacing, queue_size):
    ours = list(pack_pairs(pairs, packed_length, spacing, queue_size))
    theirs = _t2t(pairs, packed_length, spacing, queue_size)
    assert [features for features, _ in ours] == theirs
    assert sum(n for _, n in ours) == len(pairs)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(ids.filter(bool), ids.filter(bool)), max_size=40),
       st.integers(1, 25))
def test_records_unpack_to_their_pairs_in_order(pairs, packed_length):
    # spacing 0 (T2T's for translation): the records hold every pair once, none split
    packed = list(pack_pairs(pairs, packed_length))
    unpacked = [pair for features, _ in packed for pair in unpack(features)]
    assert sorted(unpacked) == sorted((list(a), list(b)) for a, b in pairs)
    for features, n in packed:
        assert len(unpack(features)) == n
        assert all(len(features[k]) == len(features[k.split("_")[0]]) for k in PACKED_FEATURES)


@settings(max_examples=200, deadline=None)
@given(pairs_of, st.integers(1, 30))
def test_pack_records_writes_pack_pairs_features_as_bytes(pairs, packed_length):
    """The shard writer's path (ids kept as varints) against the reference on lists, also
    for records in another layout (the protobuf runtime's parse then)."""
    examples = Int64FeaturesWriter()
    want = [examples.serialize(f) for f, _ in pack_pairs(pairs, packed_length)]
    records = [examples.serialize({"inputs": a, "targets": b}) for a, b in pairs]
    assert list(pack_records(records, packed_length, PackingTally())) == want
    reordered = [examples.serialize({"targets": b, "inputs": a, "x": [7]}) for a, b in pairs]
    assert list(pack_records(reordered, packed_length, PackingTally())) == want


def test_defaults_are_what_text2text_problem_passes_for_translation():
    # Text2TextProblem._maybe_pack_examples: spacing=self.packed_spacing (0 unless a
    # problem overrides it; no translate problem does), chop_long_sequences=not has_inputs
    # (False), queue_size left at pack_examples' default
    import inspect as pyinspect
    default = pyinspect.signature(t2t.generator_utils.pack_examples).parameters["queue_size"]
    assert (SPACING, QUEUE_SIZE) == (0, default.default)


def test_pack_records_writes_the_features_sorted_and_counts_what_it_did():
    examples = Int64FeaturesWriter()
    pairs = [([5, 6, 1], [7, 1]), ([8, 1], [9, 9, 9, 1]), ([3] * 20 + [1], [4, 1]),
             ([2, 1], [2, 2, 1])]
    records = [examples.serialize({"inputs": a, "targets": b}) for a, b in pairs]
    tally = PackingTally()
    packed = list(pack_records(records, 10, tally))
    want = _t2t(pairs, 10)
    assert [examples.parse(r) for r in packed] == want
    import tensorflow as tf
    for record, features in zip(packed, want):
        assert record == tf.train.Example(features=tf.train.Features(feature={
            k: tf.train.Feature(int64_list=tf.train.Int64List(value=v))
            for k, v in features.items()})).SerializeToString(deterministic=True)
    assert tally.report() == {"records": 2, "pairs": 4, "ids": [28, 11], "over_length": 1,
                              "pairs_per_record": [(1, 1), (3, 1)]}
    figures = packing_figures([tally.report(), tally.report()], 10)
    assert figures["records"] == 4 and figures["pairs"] == 8 and figures["over_length"] == 2
    assert figures["fill"] == {"inputs": 1.4, "targets": 0.55}
    assert figures["histogram"] == [[1, 2], [3, 2]]


def test_bad_settings_are_refused():
    with pytest.raises(ValueError):
        list(pack_pairs([([1], [1])], 0))
