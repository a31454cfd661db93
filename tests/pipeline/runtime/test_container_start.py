"""The project's image entrypoint (pipeline/runtime/container_start.py, the Dockerfile's
ENTRYPOINT) started the way the Dask Kubernetes operator starts it, without Kubernetes and
without Docker: the Dockerfile's ENTRYPOINT and ENV, and the operator's default worker
`args` (dask-kubernetes' `make_worker_spec`), with `$(DASK_WORKER_NAME)` expanded as the
kubelet expands it and the scheduler's address in `DASK_SCHEDULER_ADDRESS`, as the operator's
controller sets it. The worker must join the scheduler under its pod's name, warm up, and run
a pass of the job's runner. Anything else the image is started with goes to Beam's boot.
"""

import json
import os
import re
import shlex
import sys
import time

import apache_beam as beam
import pytest

from dask_cluster import DaskCluster, WriteEach, close_clients, runner_options, written
from pipeline.runtime import container_start
from pipeline.runtime.dask_runner import DatagenDaskRunner
from repo_paths import REPO_ROOT

# dask-kubernetes' operator: make_worker_spec's args and make_scheduler_spec's
OPERATOR_WORKER_ARGS = ["dask-worker", "--name", "$(DASK_WORKER_NAME)", "--dashboard",
                        "--dashboard-address", "8788"]
OPERATOR_SCHEDULER_ARGS = ["dask-scheduler", "--host", "0.0.0.0"]


def _dockerfile():
    """(ENTRYPOINT as a list, {ENV name: value}) of the project's Dockerfile."""
    entrypoint, env = None, {}
    with open(os.path.join(REPO_ROOT, "Dockerfile")) as f:
        for line in f:
            if line.startswith("ENTRYPOINT "):
                entrypoint = json.loads(line[len("ENTRYPOINT "):])
            elif line.startswith("ENV "):
                name, value = line[len("ENV "):].strip().split("=", 1)
                env[name] = shlex.split(value)[0]
    return entrypoint, env


def test_the_image_starts_the_projects_entrypoint_with_the_workers_preload():
    entrypoint, env = _dockerfile()
    assert entrypoint == ["python", "-m", container_start.__name__]
    assert json.loads(env["DASK_DISTRIBUTED__WORKER__PRELOAD"]) == [
        "pipeline.runtime.dask_worker"]


def test_the_operators_args_run_dask_and_anything_else_runs_beams_boot():
    assert container_start.command(OPERATOR_WORKER_ARGS, "py") == [
        "py", "-m", "dask", "worker", "--name", "$(DASK_WORKER_NAME)", "--dashboard",
        "--dashboard-address", "8788"]
    assert container_start.command(OPERATOR_SCHEDULER_ARGS, "py") == [
        "py", "-m", "dask", "scheduler", "--host", "0.0.0.0"]
    assert container_start.command(["dask", "worker", "tcp://s:8786"], "py") == [
        "py", "-m", "dask", "worker", "tcp://s:8786"]
    # what Flink, Spark or Dataflow start the SDK container with
    beam_args = ["--id=1-1", "--provision_endpoint=localhost:5000"]
    assert container_start.command(beam_args) == ["/opt/apache/beam/boot"] + beam_args


@pytest.mark.slow
def test_a_worker_started_with_the_operators_spec_runs_a_pass(tmp_path):
    entrypoint, image_env = _dockerfile()
    pod = "t2t-cluster-default-worker-7f9c"
    args = [re.sub(r"\$\(DASK_WORKER_NAME\)", pod, a) for a in OPERATOR_WORKER_ARGS]
    cluster = DaskCluster(tmp_path / "dask", workers=0)
    try:
        cluster.start()
        env = cluster._env(dict(image_env, DASK_SCHEDULER_ADDRESS=cluster.address,
                                DASK_WORKER_NAME=pod))
        cluster.procs.start("pod", [sys.executable] + entrypoint[1:] + args, env=env,
                            cwd=str(tmp_path))
        cluster.wait_for_workers(1)
        assert list(cluster.worker_pids()) == [pod]
        runner = DatagenDaskRunner()
        pipeline = beam.Pipeline(runner=runner, options=runner_options(cluster))
        _ = (pipeline | beam.Create(list(range(6))) | beam.Map(lambda x: x * x)
             | beam.ParDo(WriteEach(str(tmp_path / "out"))))
        pipeline.run().wait_until_finish()
        runner.close()
        assert written(tmp_path / "out") == [0, 1, 4, 9, 16, 25]
        deadline = time.time() + 300
        while "t2t-beam-datagen: warmed up" not in cluster.procs.log("pod", lines=100000):
            assert time.time() < deadline, cluster.procs.log("pod")  # the preload warms it
            time.sleep(0.2)
        assert "Error" not in cluster.procs.log("pod", lines=100000)
    finally:
        close_clients()
        cluster.stop()
