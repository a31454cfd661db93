"""The TensorFlow-free Example writer gives the bytes tf.train.Example gives."""

import pytest
import tensorflow as tf
from hypothesis import given, settings, strategies as st

from transforms.formats.example_proto import Int64FeaturesWriter, PairExampleWriter

INT64 = st.integers(min_value=-2 ** 63, max_value=2 ** 63 - 1)


def _tf_bytes(features):
    example = tf.train.Example()
    for name, values in features.items():
        example.features.feature[name].int64_list.value.extend(values)
    return example.SerializeToString(deterministic=True)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=12), st.lists(INT64, max_size=40), max_size=4))
def test_same_bytes_as_tensorflow(features):
    writer = Int64FeaturesWriter()
    data = writer.serialize(features)
    assert data == _tf_bytes(features)
    assert writer.parse(data) == features
    parsed = tf.train.Example.FromString(data)
    assert {k: list(v.int64_list.value) for k, v in parsed.features.feature.items()} == features


def test_inputs_targets_record_parses_with_tf_io():
    data = Int64FeaturesWriter().serialize({"targets": [7, 1], "inputs": [3, 4, 5, 1]})
    parsed = tf.io.parse_single_example(data, {
        "inputs": tf.io.VarLenFeature(tf.int64), "targets": tf.io.VarLenFeature(tf.int64)})
    assert parsed["inputs"].values.numpy().tolist() == [3, 4, 5, 1]
    assert parsed["targets"].values.numpy().tolist() == [7, 1]


def test_loads_beside_tensorflow_and_twice():
    # a private descriptor pool: no clash with TensorFlow's tensorflow.Example, nor with itself
    a, b = Int64FeaturesWriter(), Int64FeaturesWriter()
    assert a.serialize({"inputs": [1]}) == b.serialize({"inputs": [1]}) == _tf_bytes({"inputs": [1]})


def test_map_key_order_is_the_protobuf_runtime_order():
    # the runtime's sorter puts a longer key before its own prefix ("ab" < "a" < "")
    features = {k: [i, -i, 2 ** 40] for i, k in enumerate(
        ["a", "b", "ab", "", "ba", "inputs", "targets", "aa", "b0", "é", "\U0001F600"])}
    assert Int64FeaturesWriter().serialize(features) == _tf_bytes(features)


@settings(max_examples=300, deadline=None)
@given(st.lists(INT64, max_size=300), st.lists(INT64, max_size=300))
def test_pair_from_cached_entries_is_tensorflows_example(inputs, targets):
    pairs = PairExampleWriter("inputs", "targets")
    data = pairs.join(pairs.entry(0, inputs), pairs.entry(1, targets))
    assert data == _tf_bytes({"inputs": inputs, "targets": targets})


def test_pair_writer_follows_the_runtime_order_whichever_name_comes_first():
    pairs = PairExampleWriter("targets", "inputs")  # first side sorts after the second
    data = pairs.join(pairs.entry(0, [5, 1]), pairs.entry(1, list(range(200))))
    assert data == _tf_bytes({"targets": [5, 1], "inputs": list(range(200))})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2 ** 63 - 1), max_size=300),
       st.lists(st.integers(min_value=0, max_value=2 ** 63 - 1), max_size=300))
def test_entry_from_varints_is_the_runtimes_entry(inputs, targets):
    """The encode pass builds entries from ids' varints (no message object): same bytes as
    the protobuf runtime's, empty lists and multi-byte lengths included."""
    from transforms.codecs.varints import encode_varints
    pairs = PairExampleWriter("inputs", "targets")
    a = pairs.entry_from_varints(0, encode_varints(inputs))
    b = pairs.entry_from_varints(1, encode_varints(targets))
    assert (a, b) == (pairs.entry(0, inputs), pairs.entry(1, targets))
    assert pairs.join(a, b) == _tf_bytes({"inputs": inputs, "targets": targets})


NAMES = ("inputs", "targets", "inputs_segmentation", "inputs_position",
         "targets_segmentation", "targets_position")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(min_value=0, max_value=2 ** 63 - 1), min_size=1,
                         max_size=100), min_size=6, max_size=6))
def test_varint_examples_are_tensorflows_and_read_back_off_the_wire(values):
    """Packed records' writer (features as varints) gives TensorFlow's bytes, and
    `int64_varints` reads any Example of this layout back; another layout is None."""
    from transforms.codecs.varints import encode_varints
    from transforms.formats.example_proto import VarintExampleWriter, int64_varints
    features = dict(zip(NAMES, values))
    varints = {name: encode_varints(v) for name, v in features.items()}
    data = VarintExampleWriter(NAMES).serialize(varints)
    assert data == _tf_bytes(features) == Int64FeaturesWriter().serialize(features)
    assert int64_varints(data) == varints
    assert int64_varints(data[:-1]) is None and int64_varints(b"") is None
    floats = tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0]))}))
    assert int64_varints(floats.SerializeToString()) is None
