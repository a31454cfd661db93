"""pipeline/tools/reader.py in graph mode: `make_dataset` built in a `tf.compat.v1` graph and
run by a `Session` through an initializable iterator, as tensorflow/nmt's iterator tests and
training loop run `get_iterator`, and in an Estimator-style `input_fn` graph as T2T 1.15's
`Problem.make_estimator_input_fn` hands its dataset to the Estimator (issue 50, item 1: the
packed-records check iterated the dataset in Python, which raised `RuntimeError:
tf.data.Dataset only supports Python-style iteration in eager mode`).

Each graph's batches are compared with the same call's batches in eager mode. The outputs
are written as the job leaves them (`reader_outputs`), a summary beside the shards.
"""

import random

import numpy as np
import pytest

from reader_outputs import write_output
from transforms.shards.record_formats import TFRecordFormat

tf = pytest.importorskip("tensorflow")
reader = pytest.importorskip("pipeline.tools.reader")


def _random_pairs(seed, count, eos):
    """`count` pairs of ids in [3, 500), each side 1..30 ids, ending in `eos` unless None."""
    rng = random.Random(seed)
    tail = [] if eos is None else [eos]
    return [([rng.randrange(3, 500) for _ in range(rng.randint(1, 30))] + tail,
             [rng.randrange(3, 500) for _ in range(rng.randint(1, 30))] + tail)
            for _ in range(count)]


def _packed_records(pairs, packed_length):
    """T2T-style packed records of `pairs` (each record's pairs one after another, up to
    `packed_length` ids a side), with their segmentation and position features."""
    records, current = [], None
    for inputs, targets in pairs:
        if current is None or max(len(current["inputs"]) + len(inputs),
                                  len(current["targets"]) + len(targets)) > packed_length:
            current = {key: [] for key in ("inputs", "targets", "inputs_segmentation",
                                           "inputs_position", "targets_segmentation",
                                           "targets_position")}
            records.append(current)
        segment = max(current["inputs_segmentation"], default=0) + 1
        for side, ids in (("inputs", inputs), ("targets", targets)):
            current[side] += ids
            current[side + "_segmentation"] += [segment] * len(ids)
            current[side + "_position"] += list(range(len(ids)))
    return records


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """{name: shard pattern} of three complete outputs: word records (mode nmt), T2T-style
    records and packed T2T-style records (mode t2t)."""
    made = {}
    for name, flags, records in (
            ("word", {"vocab_type": "word"}, _random_pairs(1, 300, None)),
            ("t2t", {}, _random_pairs(2, 300, 1)),
            ("packed", {"packed_length": 64}, _packed_records(_random_pairs(3, 300, 1), 64))):
        directory = tmp_path_factory.mktemp(name)
        write_output(directory, "p", TFRecordFormat(), {None: records}, shards=3, flags=flags)
        made[name] = str(directory / "p-train-*")
    return made


CASES = {
    "nmt": ("word", dict(mode="nmt", batch_size=16, num_buckets=5, src_max_len=20)),
    "t2t": ("t2t", dict(mode="t2t", batch_size=256)),
    "t2t packed": ("packed", dict(mode="t2t", batch_size=256)),
}


def _eager(pattern, **kw):
    return [{k: np.asarray(v) for k, v in batch.items()}
            for batch in reader.make_dataset(pattern, shuffle=False, **kw).as_numpy_iterator()]


def _same(got, expected):
    assert len(got) == len(expected) > 3
    for g, e in zip(got, expected):
        assert sorted(g) == sorted(e)
        for key in e:
            np.testing.assert_array_equal(g[key], e[key])


@pytest.mark.parametrize("case", sorted(CASES))
def test_make_dataset_in_a_session_with_an_initializable_iterator(outputs, case):
    """tensorflow/nmt's way: the dataset built in a graph, an initializable iterator
    re-initialized every epoch, `sess.run(get_next)` until OutOfRangeError."""
    name, kw = CASES[case]
    expected = _eager(outputs[name], **kw)
    with tf.Graph().as_default():
        assert not tf.executing_eagerly()
        dataset = reader.make_dataset(outputs[name], shuffle=False, **kw)
        iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
        batch = iterator.get_next()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.tables_initializer())
            for _ in range(2):  # two epochs, as nmt's train loop re-initializes
                sess.run(iterator.initializer)
                got = []
                while True:
                    try:
                        got.append(sess.run(batch))
                    except tf.errors.OutOfRangeError:
                        break
                _same(got, expected)
    if case == "t2t packed":
        assert "inputs_segmentation" in expected[0]


def test_t2t_mode_in_an_estimator_style_input_fn(outputs):
    """T2T 1.15's way: `estimator_input_fn(params, config)` returns the dataset; the
    Estimator builds it in a fresh graph, makes an initializable iterator initialized by a
    hook when the session is created, and trains on `weights_nonzero` (targets != 0) in a
    MonitoredSession until the data ends. One pass sees every target id of the records."""
    pattern = outputs["t2t"]
    pairs = _random_pairs(2, 300, 1)

    def estimator_input_fn(params, config):  # T2T's Problem.make_estimator_input_fn
        del config
        return reader.make_dataset(pattern, params["batch_size"], mode="t2t", random_seed=7,
                                   drop_long_sequences=False)

    class DatasetInitializerHook(tf.compat.v1.train.SessionRunHook):  # the Estimator's
        def __init__(self, iterator):
            self._iterator = iterator

        def after_create_session(self, session, coord):
            del coord
            session.run(self._iterator.initializer)

    with tf.Graph().as_default() as graph:
        graph.seed = 1
        assert not tf.executing_eagerly()
        dataset = estimator_input_fn({"batch_size": 512}, None)
        iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
        features = iterator.get_next()
        labels = features["targets"]
        embedding = tf.compat.v1.get_variable("embedding", [500, 8])
        logits = tf.matmul(tf.nn.embedding_lookup(embedding, labels),
                           tf.transpose(embedding))
        weights = tf.cast(tf.not_equal(labels, 0), tf.float32)  # T2T's weights_nonzero
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        counted = tf.reduce_sum(weights)
        loss = tf.reduce_sum(xent * weights) / counted
        step = tf.compat.v1.train.get_or_create_global_step()
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, step)
        tokens, steps = 0, 0
        with tf.compat.v1.train.MonitoredSession(
                hooks=[DatasetInitializerHook(iterator)]) as sess:
            while not sess.should_stop():
                try:
                    _, seen = sess.run([train, counted])
                except tf.errors.OutOfRangeError:
                    break
                tokens += int(seen)
                steps += 1
    assert steps > 3
    assert tokens == sum(len(targets) for _, targets in pairs)
