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
import subprocess
import sys
import time
from importlib.metadata import version

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


IMAGE_PINS = ("apache-beam", "dask", "distributed", "cloudpickle")  # what the driver runs


def _dockerfile_text():
    with open(os.path.join(REPO_ROOT, "Dockerfile")) as f:
        return f.read()


def test_the_image_pins_what_the_driver_runs_at_the_venvs_versions():
    """Issue 49, item 7: the image's Beam, Dask, distributed and cloudpickle are the versions
    setup.py resolved in the project's venv (the driver's), and its base image's Python and
    Beam are the venv's too."""
    text = _dockerfile_text()
    pins = dict(re.findall(r'"([A-Za-z0-9_.-]+)==([^"]+)"', text))
    assert pins == {name: version(name) for name in IMAGE_PINS}, pins
    base = re.search(r"^FROM apache/beam_python(\d+\.\d+)_sdk:(\S+)$", text, re.M)
    assert base.groups() == ("%d.%d" % sys.version_info[:2], version("apache-beam"))


def _run_lines(text):
    """The Dockerfile's RUN commands, continuation lines joined."""
    joined = text.replace("\\\n", " ")
    return [line[len("RUN "):] for line in joined.splitlines() if line.startswith("RUN ")]


@pytest.mark.slow
def test_the_images_numba_cache_is_baked_once_and_loaded_by_a_worker(tmp_path):
    """Issue 49, item 7: the Dockerfile's warm-up step, run as it runs at build time (its
    NUMBA_* environment, the cache directory moved under tmp_path), leaves the compiled loops
    in the cache; a second process, as a worker starting from the image, loads them: it
    compiles nothing, so no cache file is added or rewritten."""
    _, image_env = _dockerfile()
    assert image_env["NUMBA_CPU_NAME"] == "generic"  # a cache entry for every node's CPU
    cache = str(tmp_path / "numba-cache")
    [warm] = [run for run in _run_lines(_dockerfile_text()) if "worker_warmup" in run]
    warm = warm.replace(image_env["NUMBA_CACHE_DIR"], cache)
    env = dict(os.environ, **dict(image_env, NUMBA_CACHE_DIR=cache))
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    subprocess.run(["bash", "-c", warm], cwd=REPO_ROOT, env=env, check=True, timeout=900)

    def files():
        return {os.path.join(base, name): os.stat(os.path.join(base, name)).st_mtime_ns
                for base, _, names in os.walk(cache) for name in names}
    baked = files()
    assert any(path.endswith(".nbc") for path in baked), baked
    assert {os.path.basename(p).split(".")[0] for p in baked} >= {"subword_index",
                                                                  "subword_batch"}, baked
    subprocess.run([sys.executable, "-c", "import pipeline.runtime.worker_warmup"],
                   cwd=REPO_ROOT, env=env, check=True, timeout=900)
    assert files() == baked


def test_the_readme_manifest_gives_the_store_secret_and_resource_limits():
    """Issue 49, item 7: README's Kubernetes manifest parses, its workers take the store's
    credentials from the Secret it defines (secretRef), every container has CPU and memory
    limits, and its image is the project's version."""
    import yaml
    import readme_examples
    docs = list(yaml.safe_load_all(readme_examples.block("k8s-manifest")))
    [secret] = [d for d in docs if d["kind"] == "Secret"]
    [cluster] = [d for d in docs if d["kind"] == "DaskCluster"]
    containers = {role: cluster["spec"][role]["spec"]["containers"]
                  for role in ("worker", "scheduler")}
    for role, listed in containers.items():
        for container in listed:
            assert set(container["resources"]["limits"]) == {"cpu", "memory"}, role
            assert container["image"].endswith(":" + version("t2t-beam-datagen"))
    [worker] = containers["worker"]
    assert {"secretRef": {"name": secret["metadata"]["name"]}} in worker["envFrom"]
    assert set(secret["stringData"]) == {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
    threads = worker["args"][worker["args"].index("--nthreads") + 1]
    assert worker["resources"]["limits"]["cpu"] == threads  # a CPU per Dask thread


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
                                DASK_WORKER_NAME=pod,  # the image's cache path is the image's
                                NUMBA_CACHE_DIR=str(tmp_path / "numba-cache")))
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
