"""The job on a Dask cluster of separate hosts that share no disk (the `hosts` fixture:
tests/multihost_cluster.py): the store (moto_server), the scheduler and two worker hosts,
each in network, mount and PID namespaces of its own; the driver is this machine.

Each test runs the job on the sample corpus in the bucket and compares the whole output with
a DirectRunner run of the same flags (tests/multihost_jobs.py):
- every vocabulary kind: subword with cleaning (a --filters file on the driver's disk only:
  no host sees it), both worker hosts encoding; byte_bpe learnt; sentencepiece learnt and
  word with a given vocabulary (--word_vocab on the driver's disk), as two jobs of
  different problems on the cluster at once, into one directory;
- a worker host lost whole (every process of w2, its nanny's too, killed at once) while the
  byte_bpe vocab pass runs, and while the word job's encode pass runs beside the other job:
  the scheduler removes w2 with work on it, w1 runs that work again, and the outputs are
  the same.
"""

import os
import shutil

import pytest

from multihost_jobs import (COMMON, assert_rescheduled, assert_same_as_direct, log,
                            lose_host_in_pass, on_workers, pass_starts, start_job)
from repo_paths import DATA_DIR

pytestmark = pytest.mark.slow

FILTERS = """filters:
  - LengthFilter: {unit: [word, char], min_length: 1, max_length: [60, 120]}
  - LengthRatioFilter: {unit: [word, char], threshold: 4}
  - LangidFilter: {languages: [en, zh]}
remove_duplicates: {lowercase: true}
"""


@pytest.fixture
def cluster(hosts):
    hosts.ensure_up()
    return hosts


@pytest.fixture(scope="module")
def driver_disk(tmp_path_factory):
    """A directory of the driver's own: no host sees it."""
    return tmp_path_factory.mktemp("driver")


def test_subword_with_cleaning_runs_on_both_hosts_as_direct_runner_does(
        cluster, driver_disk, tmp_path_factory):
    filters = driver_disk / "filters.yaml"
    filters.write_text(FILTERS)
    assert on_workers(cluster, filters) == {"w1": False, "w2": False}
    flags = ["--problem", "p", "--vocab_size", "2000", "--filters", str(filters),
             "--dedup", "pairs"] + COMMON
    job = start_job(cluster, flags, "clean", tmp_path_factory)
    before, _ = pass_starts(cluster, job, "of 4: encode")
    assert job.finish() == 0, log(job)
    encoders = {name for name, _ in cluster.starts()[before:]}
    assert encoders == {"w1", "w2"}
    assert_same_as_direct(cluster, job, flags, "clean", tmp_path_factory)


def test_byte_bpe_survives_a_worker_host_lost_in_the_vocab_pass(cluster, tmp_path_factory):
    flags = ["--problem", "p", "--vocab_type", "byte_bpe", "--vocab_size", "2000"] + COMMON
    job = start_job(cluster, flags, "bpe-lost", tmp_path_factory)
    before, running = lose_host_in_pass(cluster, "w2", job, "pass 1 of 2: byte_bpe vocab")
    assert_same_as_direct(cluster, job, flags, "bpe-lost", tmp_path_factory)
    assert running, "the vocab pass ended before w2 was lost: nothing was tested"
    assert_rescheduled(cluster, before)


def test_two_jobs_at_once_each_as_alone_and_a_worker_host_lost_in_the_encode_pass(
        cluster, driver_disk, tmp_path_factory):
    """SentencePiece learnt and a given word vocabulary (a file on the driver's disk), two
    problems into one directory of the bucket at the same time; w2 is lost once the second
    job's encode pass runs there."""
    vocab = driver_disk / "words.txt"
    shutil.copy(os.path.join(DATA_DIR, "nmt_vocab", "vocab.en"), vocab)
    first = ["--problem", "pa", "--vocab_type", "sentencepiece", "--vocab_size", "4000"] + COMMON
    second = ["--problem", "pb", "--vocab_type", "word", "--word_vocab", str(vocab)] + COMMON
    jobs = [start_job(cluster, flags, "two", tmp_path_factory) for flags in (first, second)]
    for job in jobs:  # both run at once: each has started before either ends
        job.wait_for_line("pass 1 of 2")
    assert all(job.proc.poll() is None for job in jobs), [log(j) for j in jobs]
    before, running = lose_host_in_pass(cluster, "w2", jobs[1], "pass 2 of 2: encode")
    for job, flags in zip(jobs, (first, second)):
        assert_same_as_direct(cluster, job, flags, "two", tmp_path_factory)
    assert running, "the encode pass ended before w2 was lost: nothing was tested"
    assert_rescheduled(cluster, before)
