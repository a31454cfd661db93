"""Resume on a Dask cluster of separate hosts with s3:// only (issue 49, item 5): the job's
whole tree (the driver here, the scheduler host's and both worker hosts' processes) is
stopped mid-encode, and a rerun on a new scheduler and new workers redoes only the chunks
that had no manifest, ending byte-identical to DirectRunner's run (tests/multihost_jobs.py).

The stop lands on an event: the store is polled (from the driver's namespace) until a
quarter of the encode chunks have written their manifests, never after a sleep. For
`kill -9` a worker plugin (tests/dask_chunk_gate.py) lets each of the two workers encode
at most GATE chunks and holds the rest, so some chunks are surely unfinished when the tree
dies, however fast the machine (without it, all 32 were once done before the kill). Then
- `kill -9`: SIGKILL to the driver first (a driver that outlived its scheduler would fail the
  run and delete the chunks), then every process of the scheduler and worker hosts
  (`kill_host`: a lost machine each). The manifests are counted once nothing runs, and the
  rerun reuses exactly those;
- SIGTERM to every process of the tree, the driver first, as a SLURM walltime sends it (the
  Dask scheduler, nannies and workers, not the test hosts' own machinery): the driver ends
  `interrupted` (exit 143) and keeps its chunks, the Dask processes end; the rerun reuses
  exactly the chunks whose manifests are there once all is stopped. The workers' orderly
  close lets them run the pass's tasks left (each chunk takes milliseconds here: in the runs
  so far every chunk was done by then), so this variant checks the stop and the reuse; the
  redo of unfinished chunks is the SIGKILL variant's.
The sample's 8,000 pairs in chunks of 250 lines: 32 chunks; T2T's own vocabularies are
given (no vocab pass), so the encode pass is the run.
"""

import json
import os
import signal

import psutil
import pytest

from clusters import wait_for
from dask_chunk_gate import ChunkGate
from multihost_jobs import (assert_same_as_direct, log, start_job, store_keys, store_summary,
                            t2t_vocab_files)

pytestmark = pytest.mark.slow

FLAGS = ["--problem", "p", "--encode_chunk_lines", "250"]
CHUNKS = 28 + 4  # 7,000 train pairs and 1,000 dev pairs in chunks of 250
GIVEN = t2t_vocab_files("p")
TREE_HOSTS = ("sched", "w1", "w2")  # the store keeps running: it is the output
GATE = 10  # chunks a worker may encode before the kill -9 (2 workers: at most 20 of 32)


@pytest.fixture
def cluster(hosts):
    hosts.ensure_up()
    return hosts


def _manifests(cluster, prefix):
    return [k for k in store_keys(cluster, prefix)
            if k.startswith(".datagen-work/p/encode-") and "/chunks/" in k]


def _job_processes(host):
    """The processes a job runs on `host` (the Dask scheduler, nanny, worker), not what makes
    the test host itself (`unshare`, its pid 1, the `nsenter` of each service): a SIGTERM to
    those would take the host down, every process with SIGKILL."""
    procs = []
    for pid in host.pids():
        try:
            argv = psutil.Process(pid).cmdline()
        except psutil.Error:
            continue
        if argv and os.path.basename(argv[0]) not in ("unshare", "nsenter") and \
                not any(arg.endswith("host_init.py") for arg in argv):
            procs.append(pid)
    return procs


def _stop_tree(cluster, job, sig):
    """`sig` to the whole tree: SIGKILL to the driver, then every process of the scheduler
    and worker hosts (`kill_host`); SIGTERM to the driver and each Dask process at once
    (each stopped first, signalled, then let go). A stop can leave the `nsenter` that
    started a Dask process stopped (it stops with its child): `kill_host` kills it too,
    else the host's end waited for it minutes (tests/network_hosts.py, `Host.kill`)."""
    if sig == signal.SIGKILL:
        os.kill(job.proc.pid, sig)
        for name in TREE_HOSTS:
            cluster.kill_host(name)
        return
    pids = [job.proc.pid] + [pid for name in TREE_HOSTS
                             for pid in _job_processes(cluster.hosts[name])]
    assert len(pids) >= 1 + 1 + 2 * 2, pids  # a scheduler, a nanny and a worker a host
    for each in (signal.SIGSTOP, sig, signal.SIGCONT):
        for pid in pids:
            try:
                os.kill(pid, each)
            except ProcessLookupError:
                pass


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_a_rerun_after_the_whole_tree_was_stopped_mid_encode_redoes_only_unfinished_chunks(
        cluster, tmp_path_factory, sig):
    prefix = "resume-%d" % sig
    if sig == signal.SIGKILL:  # (SIGTERM's orderly close would wait for a held chunk)
        with cluster.client() as client:
            client.register_plugin(ChunkGate(GATE))
        try:
            _stop_and_rerun(cluster, tmp_path_factory, sig, prefix)
        except BaseException:  # no gated worker is left to the tests sharing the hosts
            for name in TREE_HOSTS:
                cluster.kill_host(name)
            raise
    else:
        _stop_and_rerun(cluster, tmp_path_factory, sig, prefix)


def _stop_and_rerun(cluster, tmp_path_factory, sig, prefix):
    job = start_job(cluster, FLAGS, prefix, tmp_path_factory, GIVEN)
    job.proc.name = "the job"
    wait_for(lambda: len(_manifests(cluster, prefix)) >= CHUNKS // 4,
             "%d chunk manifests in the store" % (CHUNKS // 4), [job.proc], 900)
    at_signal = len(_manifests(cluster, prefix))
    _stop_tree(cluster, job, sig)
    code = job.finish()
    if sig == signal.SIGTERM:  # each Dask process ends on its own
        wait_for(lambda: not any(_job_processes(cluster.hosts[name]) for name in TREE_HOSTS),
                 "the Dask processes gone after SIGTERM", [], 300)
    for name in TREE_HOSTS:  # new hosts for the rerun
        cluster.kill_host(name)
    left = _manifests(cluster, prefix)
    assert CHUNKS // 4 <= at_signal <= len(left) <= CHUNKS
    if sig == signal.SIGKILL:  # (a SIGTERM lets running tasks end: all may be done)
        assert len(left) < CHUNKS, "every chunk was done: nothing tested"
    summary = store_summary(cluster, prefix, "p")
    if sig == signal.SIGKILL:
        assert code == -signal.SIGKILL and summary["status"] == "running"
    else:  # an orderly stop that keeps the finished chunks
        assert (code, summary["status"]) == (128 + sig, "interrupted"), log(job)
    assert "p.DATAGEN_COMPLETE" not in store_keys(cluster, prefix)

    cluster.ensure_up()  # a new scheduler at the same address, and new workers
    finished = len(_manifests(cluster, prefix))
    rerun = start_job(cluster, FLAGS, prefix, tmp_path_factory, GIVEN)
    assert_same_as_direct(cluster, rerun, FLAGS, prefix, tmp_path_factory)  # no work left
    reuse = store_summary(cluster, prefix, "p")["resume"]
    assert reuse["chunks_reused"] == finished, json.dumps(reuse)
    assert reuse.get("chunks_encoded", 0) == CHUNKS - finished, json.dumps(reuse)
