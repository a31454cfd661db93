"""The job run again and again in one process (a scheduler's worker, a notebook, a test
session) holds no more descriptors after the second run than after the first, and leaves
nothing in TMPDIR: on local disk and on S3 (moto_server, whose client pools hold up to 72
connections each). A test process once reached over 1024 descriptors (the leak was a test
proxy's, tests/end_to_end/test_test_stores.py); this keeps the job itself from being one."""

import gc
import os
import tempfile

import pytest

from datagen_helpers import ENVI, FNAPI
from object_store_servers import BUCKET
from pipeline import datagen

pytestmark = pytest.mark.slow

RUNS = 2  # the first run warms up what stays (imports, caches); the second must add nothing


def _descriptors():
    gc.collect()  # what only waits for the collector is no leak: it goes at its next turn
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("where", ["local", "s3"])
def test_runs_in_one_process_leave_no_descriptor_and_nothing_in_tmpdir(
        where, request, tmp_path, monkeypatch):
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    src = os.path.join(ENVI, "iwslt15.tst2013.100.en")
    tgt = os.path.join(ENVI, "iwslt15.tst2013.100.vi")
    flags = ["--problem", "p", "--vocab_size", "300", "--num_train_shards", "2"] + FNAPI
    if where == "s3":
        s3 = request.getfixturevalue("s3")
        flags += s3.beam_flags()
    counts = []
    for run in range(RUNS):
        out = ("s3://%s/repeated/%d" % (BUCKET, run) if where == "s3"
               else str(tmp_path / ("out%d" % run)))
        assert datagen.main(["--train_source", src, "--train_target", tgt, "--output_dir",
                             out] + flags) == 0
        counts.append(_descriptors())
    assert counts[-1] <= counts[0], counts
    assert sorted(os.listdir(temp)) == []
