"""What a user's install prints: a venv with only `pip install .` of this checkout
(tests/plain_install.py), the bundled sample, 2 worker processes (DirectRunner,
multi_processing), and a Dask cluster of that install (its workers' logs too); `./run_local.sh`
(stdout: the table only); and the readers, which run in a trainer's process: they print
nothing at all, and the ones without TensorFlow import no Beam for a local output (issue 45,
item 6).

Noise, precisely: any stderr line that is not one of the job's own log lines. The job's lines
are those its console handler writes (pipeline/runtime/console.py): `HH:MM:SS message` (a
progress detail indented under it), one
record a line. Anything else on stderr (`WARNING:root: apitools not found ...` from a process
that imported Beam before the project's filter, Beam's or TensorFlow's or gRPC's own lines, a
traceback) is noise; a clean run has none.
"""

import json
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


@pytest.fixture(scope="module")
def plain_python(tmp_path_factory):
    return plain_install_venv(tmp_path_factory.mktemp("plain-install"))


def _clean_env():
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("PYTHON", "T2T_DATAGEN_", "GRPC_", "TF_"))}


SAMPLE_FLAGS = ["--train_source", os.path.join(SAMPLE, "train.en"),
                "--train_target", os.path.join(SAMPLE, "train.zh"),
                "--dev_source", os.path.join(SAMPLE, "dev.en"),
                "--dev_target", os.path.join(SAMPLE, "dev.zh"),
                "--problem", "translate_enzh_wmt8k", "--vocab_size", "8192",
                "--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
                "--direct_num_workers", "2"]
# `default`: the sample is below --in_process_below_mb, so the passes run in the driver (and
# no fork server starts: `small_input.runs_in_driver`); `worker processes`: every pass runs in the
# 2 processes (and writes ArrayRecord, for the readers' test below).
RUNS = {"default": [], "worker processes": ["--in_process_below_mb", "0",
                                            "--output_format", "array_record"]}


@pytest.fixture(scope="module")
def sample_runs(plain_python, tmp_path_factory):
    """{run: (its CompletedProcess, its output directory)}: the sample job in the plain venv."""
    runs = {}
    for where, extra in RUNS.items():
        out = tmp_path_factory.mktemp("plain-run") / "out"
        done = subprocess.run([plain_python, "-m", "pipeline.datagen", "--output_dir", str(out)]
                              + SAMPLE_FLAGS + extra, cwd=str(out.parent), env=_clean_env(),
                              capture_output=True, text=True, timeout=900)
        runs[where] = (done, str(out))
    return runs


@pytest.mark.parametrize("where", sorted(RUNS))
def test_a_plain_install_with_2_worker_processes_prints_no_noise(sample_runs, where):
    done, _ = sample_runs[where]
    assert done.returncode == 0, done.stderr[-3000:]
    assert "datagen complete" in done.stdout
    assert _noise(done.stderr) == [], done.stderr[-3000:]


_READ_EVERY_WAY = r'''
import json, sys
from pipeline.tools import batches
tfrecord, array_record, parquet = sys.argv[1:4]
imported = {}
grain = sum(len(b["inputs"]) for b in batches.grain_batches(array_record, 4096, mode="t2t"))
parquet_rows = sum(len(b["inputs"]) for b in batches.parquet_batches(parquet, 4096,
                                                                      mode="t2t"))
imported["batches"] = sorted({m.split(".")[0] for m in sys.modules} & {"apache_beam",
                                                                       "tensorflow"})
from pipeline.tools import reader
dataset = reader.make_dataset(reader.complete_output_files(tfrecord), 4096, mode="t2t")
tf_rows = sum(int(b["inputs"].shape[0]) for b in dataset)
imported["reader"] = sorted({m.split(".")[0] for m in sys.modules} & {"apache_beam",
                                                                      "tensorflow"})
print(json.dumps({"grain": grain, "parquet": parquet_rows, "tf": tf_rows,
                  "imported": imported}))
'''


def test_the_readers_print_nothing_and_batches_imports_no_beam(plain_python, sample_runs,
                                                               tmp_path):
    """The README's readers on the sample's outputs, in a fresh interpreter of the plain
    install: Grain's "Failed to load jax profiler", TensorFlow's oneDNN/CPU-feature lines and
    absl's note, Beam's apitools line and Grain's group-size ERROR were printed here; none
    is now, and `pipeline.tools.batches` imports neither Beam nor TensorFlow, also reading
    packed records (the Parquet output here: --packed_length, its summary read for it)."""
    tfrecord = sample_runs["default"][1]
    array_record = sample_runs["worker processes"][1]
    parquet = str(tmp_path / "parquet")
    done = subprocess.run([plain_python, "-m", "pipeline.datagen", "--output_dir", parquet,
                           "--output_format", "parquet", "--packed_length", "256"]
                          + SAMPLE_FLAGS[:8]
                          + ["--vocab_size", "2000", "--runner", "FnApiRunner"],
                          cwd=str(tmp_path), env=_clean_env(), capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(os.path.join(parquet, "translate_enzh_wmt8k.datagen_summary.json")) as f:
        packing = json.load(f)["splits"]["train"]["packing"]
    assert packing["pairs"] == 7000 and packing["records"] < 7000
    read = subprocess.run([plain_python, "-c", _READ_EVERY_WAY, tfrecord, array_record,
                           parquet], cwd=str(tmp_path), env=_clean_env(), capture_output=True,
                          text=True, timeout=900)
    assert read.returncode == 0, read.stderr[-3000:]
    assert read.stderr == ""
    counts = json.loads(read.stdout)
    # T2T's max_length of packed records is their packed_length: the records over it go
    assert (counts["grain"], counts["parquet"], counts["tf"]) == (
        7000, packing["records"] - packing["over_length"], 7000)
    assert counts["imported"] == {"batches": [], "reader": ["tensorflow"]}
    shown = subprocess.run([plain_python, "-m", "pipeline.tools.inspect", array_record,
                            "--num_records", "1"], cwd=str(tmp_path), env=_clean_env(),
                           capture_output=True, text=True, timeout=900)
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr[-3000:]


def test_run_local_sh_writes_only_the_table_to_stdout(plain_python, tmp_path):
    """`./run_local.sh` in a copy of the checkout whose .venv is the plain install: stdout is
    the job's table and nothing else (README: "the log on stderr, the table on stdout"); its
    own lines go to stderr, as its first-run set-up lines do (every `echo` of the script)."""
    copy = copy_of_checkout(tmp_path / "clone")
    os.symlink(os.path.dirname(os.path.dirname(plain_python)), os.path.join(copy, ".venv"))
    done = subprocess.run(["./run_local.sh", "--num_train_shards", "2"], cwd=copy,
                          env=_clean_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("datagen complete: problem translate_enzh_wmt8k"), \
        done.stdout[:500]
    assert "inspect" not in done.stdout
    assert [line for line in _noise(done.stderr)
            if not line.startswith("Records decoded back to text: ")] == [], done.stderr
    with open(os.path.join(copy, "run_local.sh")) as f:
        echoes = [line.strip() for line in f if line.strip().startswith("echo")]
    assert echoes and all(line.endswith(">&2") for line in echoes), echoes


def test_run_local_sh_says_its_first_run_is_a_one_off_before_pip_runs(tmp_path):
    """Issue 50, item 17: the first run was ~9 silent minutes of pip. In a copy of the
    checkout without .venv, the script's first stderr line says what it does and that it is
    once, with its size and time, as README's Quick start quotes it; the test stops the
    script at that line (the event), before pip has installed anything."""
    import readme_examples
    from datagen_helpers import end_group
    copy = copy_of_checkout(tmp_path / "clone")
    assert not os.path.exists(os.path.join(copy, ".venv"))
    proc = subprocess.Popen(["./run_local.sh"], cwd=copy, env=_clean_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        first = proc.stderr.readline().rstrip("\n")
    finally:
        end_group(proc)
    assert first == readme_examples.block("first-run").strip(), first
    assert "once" in first and "GB" in first and "minutes" in first


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
            cwd=str(tmp_path), env=_clean_env(), capture_output=True, text=True, timeout=900)
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
