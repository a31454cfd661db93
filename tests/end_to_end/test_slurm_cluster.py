"""README's SLURM recipe (dask-jobqueue's SLURMCluster) run as written on a real SLURM
cluster the test starts (tests/slurm_cluster.py): slurmctld on this machine, slurmd on two
hosts of their own that share only a directory at the same path, as a cluster's shared file
system. The recipe's text comes from README (tests/readme_examples.py), its placeholders
replaced (the venv's Python, the bridge's address, the shared path, `JOBS = 2`), so README
cannot drift from what is tested.

The recipe's process runs the scheduler and the job's driver; its batch jobs run one Dask
worker on each node. The scheduler is asked (tests/task_hosts.py, its preload) which host
computed each task. Skips without root, namespaces, Debian's SLURM packages or
dask-jobqueue, naming what is missing; fails instead under CI=true.
"""

import json
import os
import subprocess
import sys

import pytest

import readme_examples
import task_hosts
from cluster_jobs import COMMON, INPUTS, KINDS, baseline, books, work_leftovers
from datagen_helpers import output_bytes
from repo_paths import REPO_ROOT
from slurm_cluster import NODES, require_slurm, running_slurm

pytestmark = pytest.mark.slow


def recipe(cluster):
    """README's recipe with this cluster's paths and address, two batch jobs."""
    text = readme_examples.block("slurm")
    for old, new in (("/path/to/t2t-beam-datagen/.venv/bin/python", sys.executable),
                     ('"10.0.0.1"', '"%s"' % cluster.address), ("/shared", cluster.shared),
                     ("JOBS = 10", "JOBS = %d" % len(NODES))):
        assert old in text, old
        text = text.replace(old, new)
    return text


def test_readme_recipe_runs_the_job_on_both_slurm_nodes_as_direct_runner_does(
        tmp_path_factory, request):
    require_slurm()
    work = tmp_path_factory.mktemp("slurm")
    cache = request.getfixturevalue("numba_cache")
    expected, direct = baseline("subword", tmp_path_factory)
    with running_slurm(work, seed=[(cache, cache)]) as cluster:
        script = os.path.join(cluster.shared, "slurm_datagen.py")
        with open(script, "w") as f:
            f.write(recipe(cluster))
        out = os.path.join(cluster.shared, "out")
        tasks = str(work / "task_hosts.txt")
        env = cluster.env(PYTHONPATH=os.pathsep.join([REPO_ROOT, os.path.join(REPO_ROOT,
                                                                               "tests")]),
                          NUMBA_CACHE_DIR=cache, T2T_TEST_TASK_HOSTS=tasks,
                          DASK_DISTRIBUTED__SCHEDULER__PRELOAD='["task_hosts"]')
        with open(work / "recipe.log", "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, script] + INPUTS + COMMON + KINDS["subword"]
                + ["--output_dir", out], stdout=log, stderr=subprocess.STDOUT, env=env,
                cwd=str(work))
            try:
                returncode = proc.wait(900)  # a hang guard, not a time limit
            finally:
                proc.kill()
        assert returncode == 0, (work / "recipe.log").read_text(errors="replace")[-4000:]
        assert output_bytes(out) == expected
        assert work_leftovers(out) == []
        with open(os.path.join(out, "p.datagen_summary.json")) as f:
            assert books(json.load(f)) == books(direct)
        ran = task_hosts.read(tasks)
        assert sorted(ran) == sorted(cluster.ip(name) for name in NODES), ran
        logs = sorted(os.listdir(os.path.join(cluster.shared, "slurm-logs")))
        assert len([name for name in logs if name.endswith(".err")]) == len(NODES), logs
        cluster.wait_until_queue_empty()  # closing the SLURMCluster cancelled its jobs
