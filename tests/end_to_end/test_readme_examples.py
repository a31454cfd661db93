"""The examples of README and docs/ run as a user runs them (tests/readme_examples.py finds
them): the quick start's command and `inspect` on the bundled sample, the cleaning YAML on it,
the pandas lines on the Parquet output it makes, and the local S3 recipe end to end (moto's
server, the sample written to it, `inspect` reading it back). The Airflow recipe runs in tests/end_to_end/test_airflow_dag.py, beside the cached
Airflow venv. Issue 45, items 4 and 7: `pd.read_parquet` of a glob raised
FileNotFoundError, and the cleaning example dropped 22% of the sample's clean pairs.
"""

import json
import os
import re
import signal
import subprocess
import sys

import pytest

import readme_examples
from object_store_servers import free_port
from pipeline import datagen
from plain_install import copy_of_checkout
from repo_paths import REPO_ROOT, SAMPLE_DATA

pytestmark = pytest.mark.slow

SAMPLE = os.path.join(SAMPLE_DATA, "enzh-mlqe-pe")
JOB_LINE = re.compile(r"^\d\d:\d\d:\d\d +\S")


@pytest.fixture(scope="module")
def cleaned(tmp_path_factory):
    """(output directory, summary) of the README's cleaning example on the sample's train
    split, `--dedup pairs`, written as Parquet (for the pandas example)."""
    root = tmp_path_factory.mktemp("readme-cleaning")
    filters = root / "filters.yaml"
    filters.write_text(readme_examples.block("cleaning"))
    out = root / "out"
    assert datagen.main([
        "--train_source", os.path.join(SAMPLE, "train.en"),
        "--train_target", os.path.join(SAMPLE, "train.zh"),
        "--filters", str(filters), "--dedup", "pairs", "--output_dir", str(out),
        "--output_format", "parquet", "--problem", "p", "--vocab_size", "2000",
        "--num_train_shards", "2", "--runner", "FnApiRunner"]) == 0
    with open(out / "p.datagen_summary.json") as f:
        return str(out), json.load(f)


def test_the_cleaning_example_fits_the_sample(cleaned):
    """As README says under the YAML: 2 of 7,000 pairs dropped, both by LengthRatioFilter."""
    _, summary = cleaned
    train = summary["splits"]["train"]
    assert (train["pairs_read"], train["pairs_rejected"]) == (7000, 2)
    assert train["rejected_by_reason"] == {"LengthRatioFilter": 2}


def test_the_language_id_example_runs_cld2_in_the_job(tmp_path):
    """README's LanguageIDFilter example (id_method cld2) through the whole job: what it
    drops, each under the filter's name, as README says under it."""
    pytest.importorskip("pycld2")
    filters = tmp_path / "filters.yaml"
    filters.write_text(readme_examples.block("cleaning-lid"))
    out = tmp_path / "out"
    assert datagen.main([
        "--train_source", os.path.join(SAMPLE, "train.en"),
        "--train_target", os.path.join(SAMPLE, "train.zh"),
        "--filters", str(filters), "--output_dir", str(out), "--problem", "p",
        "--vocab_size", "2000", "--num_train_shards", "1", "--runner", "FnApiRunner"]) == 0
    with open(out / "p.datagen_summary.json") as f:
        train = json.load(f)["splits"]["train"]
    assert (train["pairs_read"], train["rejected_by_reason"]) == (
        7000, {"LanguageIDFilter": LID_EXAMPLE_DROPS})


LID_EXAMPLE_DROPS = 352


def test_the_quick_start_command_runs_as_written(tmp_path):
    """README's quick start by hand: the job on the sample, then `inspect`, from a directory
    holding the project's `sample_data` (python: this interpreter)."""
    import shlex
    os.symlink(SAMPLE_DATA, tmp_path / "sample_data")
    script = readme_examples.shell_script("quick-start")
    outputs = []
    for command in script.replace("\\\n", " ").strip().split("\n")[1:]:  # after `set -e...`
        argv = shlex.split(command)
        assert argv[0] == "python", command
        done = subprocess.run([sys.executable] + argv[1:], cwd=str(tmp_path), env=dict(
            os.environ, PYTHONPATH=REPO_ROOT), capture_output=True,
            text=True, timeout=1200)
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append(done.stdout)
    assert outputs[0].startswith("datagen complete: problem translate_enzh_wmt8k"), outputs[0]
    assert re.search(r"^dev +1000 +1000 +0 +1$", outputs[0], re.M), outputs[0]
    assert re.search(r"^train +7000 +7000 +0 +10$", outputs[0], re.M), outputs[0]
    assert len(re.findall(r"^  source: \S", outputs[1], re.M)) == 2, outputs[1]


@pytest.mark.parametrize("name, example, cleaning", [
    ("dedup-normalized", lambda r: readme_examples.shell_script("dedup-normalized", replace=r),
     {"dedup": "normalized", "dedup_scope": "source"}),
    ("dedup-minhash", lambda r: readme_examples.shell_script("dedup-minhash", replace=r),
     {"dedup": "minhash", "dedup_scope": "pair"}),
    ("decontaminate", lambda r: readme_examples.shell_script("decontaminate", replace=r),
     {"dedup": "none"})])
def test_the_near_duplicate_examples_run_as_written(tmp_path, name, example, cleaning):
    """docs/cleaning.md's commands: its setup lines (`S`, `RUN`), then the example, with bash
    from a directory holding the project's `sample_data` (`python`: this interpreter), the
    output under the test's directory instead of /tmp."""
    os.symlink(SAMPLE_DATA, tmp_path / "sample_data")
    script = (readme_examples.shell_script("near-dedup-setup")
              + example([("/tmp/", str(tmp_path) + "/")]))
    env = dict(os.environ, PYTHONPATH=REPO_ROOT,
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    done = subprocess.run(["bash", "-c", script], cwd=str(tmp_path), env=env,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    (out,) = [p for p in tmp_path.iterdir() if p.name.startswith("out-")]
    with open(out / "p.datagen_summary.json") as f:
        summary = json.load(f)
    assert summary["status"] == "complete"
    assert {k: summary["cleaning"].get(k) for k in cleaning} == cleaning
    if name == "decontaminate":
        assert summary["cleaning"]["decontaminate"]["ngram"] == 8
        assert summary["splits"]["dev"]["pairs_written"] == 1000  # dev is never touched


def test_the_pandas_example_reads_the_parquet_output(cleaned, monkeypatch):
    out, summary = cleaned
    monkeypatch.chdir(os.path.dirname(out))  # the example reads "out"
    scope = {}
    exec(compile(readme_examples.block("pandas"), "README.md (pandas)", "exec"), scope)
    train = scope["train"]
    assert list(train.columns) == ["inputs", "targets"]
    assert len(train) == summary["splits"]["train"]["pairs_written"] == 6998
    assert all(row[-1] == 1 for row in train["inputs"])  # ids + EOS, as the Example holds


def test_the_local_s3_recipe_runs_as_written(tmp_path):
    """The recipe in a copy of the checkout whose `.venv` is the test venv (it has moto), on
    a free port instead of 5000: moto's server started, the bucket made, `./run_local.sh`
    writing the sample to s3://t2t/enzh, `inspect` reading a record back, the server
    stopped; every line on stderr the job's own."""
    copy = copy_of_checkout(tmp_path / "clone")
    os.symlink(sys.prefix, os.path.join(copy, ".venv"))
    port = str(free_port())
    script = readme_examples.shell_script("s3-local", replace=[("5000", port)])
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "T2T_DATAGEN_", "AWS_"))}
    proc = subprocess.Popen(["bash", "-c", script], cwd=copy, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=900)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the server, if the script stopped early
        except ProcessLookupError:
            pass
    assert proc.returncode == 0, stderr[-3000:]
    assert "datagen complete: problem translate_enzh_wmt8k" in stdout
    assert "output: s3://t2t/enzh" in stdout
    assert re.search(r"^translate_enzh_wmt8k train: 1 of 7000 records", stdout, re.M), stdout
    assert re.search(r"^  source: \S", stdout, re.M), stdout
    noise = [line for line in stderr.splitlines() if not JOB_LINE.match(line)
             and not line.startswith("Records decoded back to text: ")]
    assert noise == [], stderr[-3000:]
