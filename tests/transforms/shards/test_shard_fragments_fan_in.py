"""transforms/shards/shard_fragments: a shard merge reads at most MERGE_FAN_IN fragments at once,
merging in levels through runs in the work directory, and gives the records exactly as one
merge of every fragment would (issue 49, item 2).

The bound is held by the kernel, not by sampling: the merge of 50,000 fragments runs in a
process whose open-file limit (RLIMIT_NOFILE) is what it holds open before the merge plus
MERGE_FAN_IN and the run it writes, so one more open file at any moment would end it with
`Too many open files`; psutil counts its descriptors at every record besides."""

import hashlib
import heapq
import json
import os
import random
import subprocess
import sys

import pytest

from repo_paths import REPO_ROOT
from transforms.shards import shard_fragments
from transforms.shards.shard_fragments import (MERGE_FAN_IN, RUNS_DIR, merge_fragments,
                                               read_fragment, write_fragment)


def _fragments(directory, count, per_fragment, seed=0):
    """`count` fragment files of `per_fragment` entries with keys spread over the key space
    (so every fragment interleaves with the others); returns their paths."""
    rng = random.Random(seed)
    paths = []
    for i in range(count):
        entries = [(rng.getrandbits(64), i % 3, i * per_fragment + j,
                    b"record %d.%d" % (i, j) * (1 + j % 4)) for j in range(per_fragment)]
        path = os.path.join(str(directory), "train-00000-d%d-l%d.frag" % (i % 3, i))
        write_fragment(path, entries)
        paths.append(path)
    return paths


def test_a_merge_in_levels_gives_what_one_merge_of_all_gives(tmp_path):
    paths = _fragments(tmp_path, 3 * MERGE_FAN_IN + 5, 7)
    one_merge = list(heapq.merge(*(read_fragment(p) for p in sorted(paths)),
                                 key=lambda entry: entry[0]))
    assert list(merge_fragments(reversed(paths))) == one_merge
    assert os.listdir(tmp_path / RUNS_DIR) == []  # its runs removed


def test_a_merge_stopped_early_removes_its_runs(tmp_path):
    merged = merge_fragments(_fragments(tmp_path, MERGE_FAN_IN + 1, 2))
    next(merged)
    assert len(os.listdir(tmp_path / RUNS_DIR)) == 1
    merged.close()  # a writer that failed mid-shard
    assert os.listdir(tmp_path / RUNS_DIR) == []


def test_levels_leave_at_most_the_fan_in_for_the_last_merge():
    for inputs in (MERGE_FAN_IN + 1, 76, 4097, 50000, 200000):
        left = inputs
        while left > MERGE_FAN_IN:
            sizes = shard_fragments._group_sizes(left)
            assert sizes and max(sizes) <= MERGE_FAN_IN and min(sizes) >= 2
            left = left - sum(sizes) + len(sizes)
        assert left == MERGE_FAN_IN or inputs <= MERGE_FAN_IN
    assert shard_fragments._group_sizes(76) == [13]  # 13 rewritten, not all 76


_MERGE_UNDER_LIMIT = r"""
import hashlib, json, resource, sys
import psutil
from transforms.shards.shard_fragments import MERGE_FAN_IN, merge_fragments
paths = [line.rstrip("\n") for line in open(sys.argv[1])]
me = psutil.Process()
before = me.num_fds()
limit = before + MERGE_FAN_IN + 1  # the fragments or runs it reads and the run it writes
resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
digest, records, most = hashlib.sha256(), 0, 0
for key, record in merge_fragments(paths):
    digest.update(repr(key).encode() + record)
    records += 1
    most = max(most, me.num_fds())
print(json.dumps({"before": before, "limit": limit, "most": most, "records": records,
                  "sha256": digest.hexdigest()}))
"""


@pytest.mark.slow
def test_50000_fragments_merge_under_a_limit_of_open_files_the_fan_in_sets(tmp_path):
    fragments = tmp_path / "fragments"
    fragments.mkdir()
    paths = _fragments(fragments, 50000, 2)
    expected = hashlib.sha256()
    for key, record in sorted(entry for p in paths for entry in read_fragment(p)):
        expected.update(repr(key).encode() + record)
    listing = tmp_path / "paths.txt"
    listing.write_text("\n".join(paths) + "\n")
    done = subprocess.run([sys.executable, "-c", _MERGE_UNDER_LIMIT, str(listing)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["limit"] < 256  # tighter than the `ulimit -n 256` of the issue
    assert got["records"] == 100000 and got["sha256"] == expected.hexdigest()
    assert got["most"] <= got["before"] + MERGE_FAN_IN
    assert os.listdir(fragments / RUNS_DIR) == []
    assert len(os.listdir(fragments)) == 50000 + 1  # the fragments stay (a retry reads them)


def test_an_s3_client_keeps_a_connection_for_every_stream_of_a_merge_or_the_commit():
    from transforms.storage import object_stores
    assert object_stores.S3_CONNECTIONS >= MERGE_FAN_IN + 1
    assert object_stores.S3_CONNECTIONS >= (object_stores.COPY_THREADS
                                            * object_stores.S3_COPY_PART_THREADS)


@pytest.mark.slow
def test_a_merge_in_levels_on_s3_writes_its_runs_to_the_store_and_removes_them(s3):
    from object_store_servers import ACCESS_KEY, BUCKET, REGION, SECRET_KEY
    from transforms.storage.object_stores import ObjectStores, StoreSettings
    stores = ObjectStores(StoreSettings(s3_endpoint_url=s3.endpoint,
                                        s3_access_key_id=ACCESS_KEY,
                                        s3_secret_access_key=SECRET_KEY,
                                        s3_region_name=REGION))
    rng = random.Random(1)
    paths, everything = [], []
    for i in range(2 * MERGE_FAN_IN + 3):
        entries = [(rng.getrandbits(64), 0, 5 * i + j, b"r%d-%d" % (i, j)) for j in range(5)]
        path = "s3://%s/levels/fragments/train-00000-d0-l%d.frag" % (BUCKET, 5 * i)
        write_fragment(path, entries, stores)
        paths.append(path)
        everything += [((k, d, n), r) for k, d, n, r in entries]
    with s3.record() as requests:
        assert list(merge_fragments(paths, stores)) == sorted(everything)
    runs = [url for method, url, _ in requests if method == "PUT" and RUNS_DIR in url]
    assert runs  # written to the store, beside the fragments
    listed = s3.client().list_objects_v2(Bucket=BUCKET, Prefix="levels/")
    assert sorted(o["Key"].rsplit("/", 1)[-1] for o in listed["Contents"]) == sorted(
        p.rsplit("/", 1)[-1] for p in paths)  # the runs gone, the fragments kept
