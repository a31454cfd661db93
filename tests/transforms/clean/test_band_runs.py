"""Band runs (transforms/clean/band_runs.py): `--dedup minhash`'s buckets grouped in rounds
of bounded size from sorted run files give the groups one GroupByKey gives, whatever the
round size, and a round holds at most its budget of entries."""

import hashlib
import random

import pytest

from transforms.clean.band_runs import (KEY_BYTES, RUN_BUCKETS, bucket_ranges, key_groups,
                                        plan_rounds, read_round, write_run)
from transforms.storage.object_stores import ObjectStores, StoreSettings

MEMBER = 45
RECORD = KEY_BYTES + MEMBER


def _entries(seed, runs=6, per_run=400, keys=700):
    """Per run, entries (key + member) whose keys repeat across and within runs."""
    rng = random.Random(seed)
    pool = [hashlib.blake2b(b"%d" % k, digest_size=KEY_BYTES).digest() for k in range(keys)]
    pool += [bytes([7]) * KEY_BYTES, bytes(KEY_BYTES)]  # a byte 0 ends a key: kept whole
    return [[rng.choice(pool) + rng.randbytes(MEMBER - 1) + b"\0" for _ in range(per_run)]
            for _ in range(runs)]


def _reference(entries):
    """{key: sorted members} of every key held twice or more: what a GroupByKey gives."""
    groups = {}
    for run in entries:
        for entry in run:
            groups.setdefault(entry[:KEY_BYTES], []).append(entry[KEY_BYTES:])
    return {key: sorted(members) for key, members in groups.items() if len(members) > 1}


def _grouped(tmp_path, entries, round_entries):
    stores = ObjectStores(StoreSettings())
    runs = []
    for i, run in enumerate(entries):
        path = str(tmp_path / ("run-%d.bands" % i))
        counts = write_run(path, run, stores)
        assert len(counts) == RUN_BUCKETS and sum(counts) == len(run)
        runs.append((path, counts))
    rounds = list(plan_rounds(runs, round_entries, RECORD))
    groups, seen = {}, 0
    for parts in rounds:
        data = read_round(parts, stores)
        seen += len(data) // RECORD
        for key, members in key_groups(bytes(data), RECORD):
            assert key not in groups  # a key's group is whole in one round
            groups[key] = sorted(members)
    assert seen == sum(map(len, entries))  # every entry in exactly one round
    return groups, rounds


@pytest.mark.parametrize("round_entries", [1, 37, 300, 10 ** 9])
def test_rounds_give_the_groups_of_one_grouping(tmp_path, round_entries):
    entries = _entries(seed=round_entries)
    groups, rounds = _grouped(tmp_path, entries, round_entries)
    assert groups == _reference(entries)
    assert len(rounds) == 1 if round_entries == 10 ** 9 else len(rounds) > 1


def test_a_round_holds_at_most_its_budget_unless_one_bucket_is_more(tmp_path):
    entries = _entries(seed=3, runs=8, per_run=1000, keys=5000)
    _, rounds = _grouped(tmp_path, entries, 200)
    sizes = [sum(length for _, _, length in parts) // RECORD for parts in rounds]
    assert max(sizes) <= 200 and sum(sizes) == 8000
    assert len(rounds) >= 8000 // 200  # no round wasted: the budget is what cuts them


def test_bucket_ranges():
    assert bucket_ranges([0, 5, 0, 5, 5, 0], 10) == [(1, 4), (4, 6)]
    assert bucket_ranges([30, 1, 1, 0], 10) == [(0, 1), (1, 4)]  # a bucket over the budget
    assert bucket_ranges([0, 0, 0], 10) == []
    assert bucket_ranges([3] * 4, 10 ** 6) == [(0, 4)]


def test_an_empty_run_writes_nothing(tmp_path):
    path = tmp_path / "none.bands"
    assert write_run(str(path), [], ObjectStores(StoreSettings())) == []
    assert not path.exists()


def test_a_run_cut_short_is_one_clear_error(tmp_path):
    stores = ObjectStores(StoreSettings())
    path = str(tmp_path / "run.bands")
    counts = write_run(path, _entries(seed=1, runs=1)[0], stores)
    (parts,) = plan_rounds([(path, counts)], 10 ** 9, RECORD)
    with open(path, "r+b") as f:
        f.truncate(RECORD * 10)
    with pytest.raises(IOError, match=r"run.bands: .* \(a run file was cut short\)"):
        read_round(parts, stores)
