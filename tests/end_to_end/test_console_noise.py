"""What a user's install prints: a venv with only `pip install .` of this checkout
(tests/plain_install.py), the bundled sample, 2 worker processes (DirectRunner,
multi_processing), and a Dask cluster of that install (its workers' logs too).

Noise, precisely: any stderr line that is not one of the job's own log lines. The job's lines
are those its console handler writes (pipeline/runtime/console.py): `HH:MM:SS message` (a
progress detail indented under it), one
record a line. Anything else on stderr (`WARNING:root: apitools not found ...` from a process
that imported Beam before the project's filter, Beam's or TensorFlow's or gRPC's own lines, a
traceback) is noise; a clean run has none.
"""

import os
import re
import subprocess
import sys

import pytest

from dask_cluster import DaskCluster
from plain_install import copy_of_checkout, plain_install_venv
from repo_paths import SAMPLE_DATA

pytestmark = pytest.mark.slow

JOB_LINE = re.compile(r"^\d\d:\d\d:\d\d +\S")
SAMPLE = os.path.join(SAMPLE_DATA, "enzh-mlqe-pe")


def _noise(stderr):
    return [line for line in stderr.splitlines() if not JOB_LINE.match(line)]


def _user_env():
    """The environment without this test run's own settings."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("PYTHON", "T2T_DATAGEN_", "GRPC_", "TF_"))}


@pytest.fixture(scope="module")
def plain_python(tmp_path_factory):
    return plain_install_venv(tmp_path_factory.mktemp("plain-install"))


@pytest.mark.parametrize("where", ["default", "worker processes"])
def test_a_plain_install_with_2_worker_processes_prints_no_noise(plain_python, tmp_path, where):
    """`default`: the sample is below --in_process_below_mb, so the passes run in the driver,
    but the fork server has started (and imported Beam); `worker processes`: every pass runs
    in the 2 processes."""
    extra = ["--in_process_below_mb", "0"] if where == "worker processes" else []
    env = _user_env()
    done = subprocess.run(
        [plain_python, "-m", "pipeline.datagen",
         "--train_source", os.path.join(SAMPLE, "train.en"),
         "--train_target", os.path.join(SAMPLE, "train.zh"),
         "--dev_source", os.path.join(SAMPLE, "dev.en"),
         "--dev_target", os.path.join(SAMPLE, "dev.zh"),
         "--output_dir", str(tmp_path / "out"), "--problem", "translate_enzh_wmt8k",
         "--vocab_size", "8192", "--runner", "DirectRunner",
         "--direct_running_mode", "multi_processing", "--direct_num_workers", "2"] + extra,
        cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "datagen complete" in done.stdout
    assert _noise(done.stderr) == [], done.stderr[-3000:]


def test_a_plain_install_on_a_dask_cluster_prints_no_noise(plain_python, tmp_path):
    """A scheduler and 2 workers of the same install (a cluster's image would hold only that),
    and the job on them: the job prints nothing but its own lines, and neither a worker nor
    the scheduler (it unpickles the task graphs) prints Beam's `apitools not found` line when
    it imports Beam."""
    env = {"PYTHONPATH": ""}  # the install's copy of the project, not the checkout
    cluster = DaskCluster(tmp_path / "dask", python=plain_python, env=env)
    try:
        cluster.start()
        done = subprocess.run(
            [plain_python, "-m", "pipeline.datagen",
             "--train_source", os.path.join(SAMPLE, "dev.en"),
             "--train_target", os.path.join(SAMPLE, "dev.zh"),
             "--output_dir", str(tmp_path / "out"), "--vocab_type", "word", "--vocab_size",
             "2000", "--runner", "DaskRunner", "--dask_client_address", cluster.address],
            cwd=str(tmp_path), env=_user_env(), capture_output=True, text=True, timeout=900)
        logs = [cluster.procs.log(name, lines=100000)
                for name in ("scheduler", "worker-0", "worker-1")]
    finally:
        cluster.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    assert _noise(done.stderr) == [], done.stderr[-3000:]
    for log in logs:
        assert "apitools" not in log and "Traceback" not in log, log[-3000:]


def test_an_editable_install_prints_no_warning_block(tmp_path):
    """`pip install -e .` of a copy of the checkout into a fresh venv (the project alone,
    --no-deps: what setuptools prints does not depend on them): pip's output holds no warning
    (setuptools' "Editable installation ... be careful with folders" block came from the
    packages' layout not being declared, setup.py's package_dir)."""
    source = copy_of_checkout(tmp_path / "source")
    venv = str(tmp_path / "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True,
                   timeout=300)
    done = subprocess.run([sys.executable, "-m", "pip", "--python",
                           os.path.join(venv, "bin", "python"), "install", "--no-deps", "-e",
                           source], capture_output=True, text=True, timeout=900)
    if done.returncode != 0 and "Could not find a version" in done.stderr:
        from cached_venvs import unavailable
        unavailable("setuptools", done.stderr[-500:])
    assert done.returncode == 0, done.stderr[-3000:]
    printed = done.stdout + done.stderr
    assert not re.search(r"warning|deprecat|careful", printed, re.IGNORECASE), printed[-3000:]
