"""pipeline/tools/mixture.py: each cycle through a language pair comes in a new order drawn
from the seed, the same for the same seed (issue 50, item 15: every cycle repeated the
first one's order), and the readers' `shuffle` and `seed` reach the mixture's stream
(`grain_batches(mixture, seed=...)` ignored them).

The outputs are written as the job leaves them (`reader_outputs`): two pairs of 12 records
each, so a stream of a few hundred records cycles through each pair many times.
"""

import numpy as np
import pytest

from pipeline.tools import batches
from pipeline.tools.mixture import Mixture
from reader_outputs import numbered_pairs, write_output
from transforms.formats.example_proto import Int64FeaturesWriter
from transforms.shards.record_formats import ArrayRecordFormat, TFRecordFormat

PER_PAIR = 12
PAIRS = {"en-de": numbered_pairs(100, PER_PAIR), "en-fr": numbered_pairs(200, PER_PAIR)}


@pytest.fixture(params=[TFRecordFormat(), ArrayRecordFormat()], ids=lambda f: f.name)
def output(request, tmp_path):
    write_output(tmp_path, "p", request.param, PAIRS, shards=3)
    return str(tmp_path)


def _cycles(stream):
    """{pair: [the first ids of each cycle's records, ...]} of a stream of (pair, first id);
    only whole cycles."""
    seen = {}
    for pair, first in stream:
        seen.setdefault(pair, []).append(first)
    return {pair: [tuple(ids[i:i + PER_PAIR]) for i in range(0, len(ids) - PER_PAIR + 1,
                                                              PER_PAIR)]
            for pair, ids in seen.items()}


def _records(mixture, **kw):
    parse = Int64FeaturesWriter()
    return _cycles((pair, parse.parse(record)["inputs"][0])
                   for pair, record in mixture.records(**kw))


def _check_reshuffled(cycles):
    """Each cycle holds each of its pair's records once, and not every cycle in one order."""
    for pair, orders in cycles.items():
        first = PAIRS[pair][0][0][0]
        assert len(orders) >= 5, (pair, len(orders))
        assert all(sorted(order) == list(range(first, first + PER_PAIR)) for order in orders)
        assert len(set(orders)) > len(orders) // 2, (pair, orders)


def test_each_cycle_of_a_pair_comes_in_a_new_order_from_the_seed(output):
    mixture = Mixture(output, rates={"en-de": 1, "en-fr": 1}, seed=3, num_records=240)
    cycles = _records(mixture)
    _check_reshuffled(cycles)
    assert _records(Mixture(output, rates={"en-de": 1, "en-fr": 1}, seed=3,
                            num_records=240)) == cycles  # reproducible
    assert _records(mixture, seed=4) != cycles
    in_order = _records(mixture, shuffle=False)
    for pair, orders in in_order.items():  # shuffle=False: name order, every cycle
        first = PAIRS[pair][0][0][0]
        shard_order = [first + k for shard in range(3) for k in range(shard, PER_PAIR, 3)]
        assert set(orders) == {tuple(shard_order)}


def _batch_cycles(batch_iter):
    stream = []
    for batch in batch_iter:
        for row in batch["inputs"]:
            first = int(row[0])
            stream.append(("en-de" if first < 200 else "en-fr", first))
    return _cycles(stream)


def test_grain_batches_of_a_mixture_honour_shuffle_and_seed(tmp_path):
    write_output(tmp_path, "p", ArrayRecordFormat(), PAIRS, shards=3)

    def read(**kw):  # one pair a batch (batch_size 1 row: lengths 2 and 3 in one bucket)
        mixture = Mixture(str(tmp_path), rates={"en-de": 1, "en-fr": 1}, seed=1,
                          num_records=240)
        return _batch_cycles(batches.grain_batches(mixture, 3, mode="t2t", **kw))

    seeded = read(seed=5)
    _check_reshuffled(seeded)
    assert read(seed=5) == seeded
    assert read(seed=6) != seeded  # the seed given is the stream's
    assert read(shuffle=False) == _records(
        Mixture(str(tmp_path), rates={"en-de": 1, "en-fr": 1}, seed=1, num_records=240),
        shuffle=False)
    with pytest.raises(ValueError, match="no epochs"):
        next(batches.grain_batches(Mixture(str(tmp_path), seed=1), 3, mode="t2t",
                                   num_epochs=2))


def test_tf_records_of_a_mixture_reshuffle_each_pair_every_cycle(tmp_path):
    tf = pytest.importorskip("tensorflow")
    write_output(tmp_path, "p", TFRecordFormat(), PAIRS, shards=3)
    mixture = Mixture(str(tmp_path), rates={"en-de": 1, "en-fr": 1}, seed=2, num_records=240)

    def stream(dataset):
        firsts = [int(tf.train.Example.FromString(raw).features.feature["inputs"]
                      .int64_list.value[0]) for raw in dataset.as_numpy_iterator()]
        return _cycles(("en-de" if f < 200 else "en-fr", f) for f in firsts)

    cycles = stream(mixture.tf_records(tf))
    _check_reshuffled(cycles)
    assert stream(mixture.tf_records(tf)) == cycles
    assert all(len(set(orders)) == 1
               for orders in stream(mixture.tf_records(tf, shuffle=False)).values())
    assert np.isclose(sum(mixture.rates.values()), 1.0)
