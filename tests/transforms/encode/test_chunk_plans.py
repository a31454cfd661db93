"""transforms/encode/chunk_plans: each of a chunk's optional keys becomes a typed part of its
plan, and a chunk without them gets the plain plan (every shard of its split, no cleaning, no
copies); the lines past a shorter file get an `UnmatchedPlan`."""

from transforms.encode.chunk_plans import (Cleaned, Copies, PairsPlan, UnmatchedPlan,
                                           plan_of)
from transforms.encode.encode_pairs import plan_chunks
from transforms.pairs.chunk_reading import ChunkSpan

DS = {"split": "train", "index": 2, "pair": "en-de"}


def _chunks():
    source = {"lines": 25, "checkpoints": [[0, 0], [10, 100], [20, 200]]}
    target = {"lines": 23, "checkpoints": [[0, 0], [10, 90], [20, 180]]}
    return plan_chunks(DS, "a.en", "a.de", source, target)


def test_a_plain_chunk_goes_to_every_shard_of_its_split_and_nothing_else():
    plan = plan_of(_chunks()[1], {"train": 4})
    assert plan == PairsPlan(_chunks()[1], DS, ChunkSpan("a.en", "a.de", 10, 10), (100, 90),
                             0, 4, None, None)


def test_each_optional_key_becomes_its_typed_part():
    chunk = dict(_chunks()[0], dropped="/w/d.dropped", lengths_before=True, shards=[3, 2],
                 copies=[7, 100, 250])
    plan = plan_of(chunk, {"train": 8})
    assert isinstance(plan, PairsPlan)
    assert (plan.first_shard, plan.num_shards) == (3, 2)
    assert plan.cleaned == Cleaned("/w/d.dropped", True)
    assert plan.copies == Copies(offset=7, lines=100, records=250)
    # cleaning that dropped none of the dataset's lines still measures the lengths before it
    assert plan_of(dict(_chunks()[0], dropped=None, lengths_before=True),
                   {"train": 8}).cleaned == Cleaned(None, True)
    # a bitmap alone: the lines are skipped, not measured
    assert plan_of(dict(_chunks()[0], dropped="/w/d"), {"train": 8}).cleaned == Cleaned(
        "/w/d", False)


def test_the_lines_past_the_shorter_file_only_reject():
    unmatched = _chunks()[-1]
    assert plan_of(unmatched, {"train": 4}) == UnmatchedPlan(
        unmatched, "train", "source", "a.en", 200, 23, 3)
