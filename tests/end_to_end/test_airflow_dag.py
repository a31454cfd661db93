"""examples/airflow/t2t_datagen_dag.py under a real Airflow: `airflow dags test` runs the job.

Airflow lives in a virtualenv of its own (it pins SQLAlchemy, FastAPI, ... that the project's
environment must not get), created once per machine under ~/.cache/t2t-datagen-airflow
(`T2T_AIRFLOW_VENV` to put it elsewhere) from PyPI, with apache-airflow alone: no Beam or
Google provider, which also shows that the DAG file imports without them. Each test module
run gets its own AIRFLOW_HOME with a SQLite metadata DB (`airflow db migrate`) and the DAGs
folder set to examples/airflow, so the DAG finds the project (and the bundled sample) from
its own location, as it does when used where it is shipped. The task's interpreter is the
one running these tests (`python` param, given in the run's conf as a scheduler's trigger
would give it).

Where PyPI cannot be reached the tests skip with pip's reason, except under CI=true, where
a missing Airflow is a failure.

What `airflow dags test` does here (Airflow 3.3): it runs retries: a task that fails with
retries left goes `up_for_retry`, the command waits out `retry_delay` and runs the next try. On `execution_timeout` the BashOperator sends
SIGTERM to the task's process group and the try fails at once, without waiting for the job
to exit or reading what it prints after that (so the job's `ERROR interrupted (SIGTERM)`
line is not in the task log; its summary JSON says "interrupted"). Each try gets the same
timeout, so the timed-out day is then run again as an operator would rerun it (a second
`dags test` of the same logical date clears and reruns its task), with the normal timeout.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from cached_venvs import cache_dir, installed_venv
from datagen_helpers import output_bytes
from local_chunk_gate import gate_variables
from repo_paths import REPO_ROOT as ROOT

pytestmark = pytest.mark.slow

DAG_DIR = os.path.join(ROOT, "examples", "airflow")
SAMPLE = os.path.join(ROOT, "sample_data", "enzh-mlqe-pe")
PROBLEM = "translate_enzh_wmt8k"

AIRFLOW_VERSION = "3.3.2"
AIRFLOW_VENV = cache_dir("airflow", "airflow", AIRFLOW_VERSION)


def _install_airflow():
    """bin/airflow of the cached virtualenv, created on first use."""
    venv = installed_venv(AIRFLOW_VENV, ["apache-airflow==" + AIRFLOW_VERSION], "Airflow")
    return os.path.join(venv, "bin", "airflow")


class Airflow:
    """The Airflow CLI with its own AIRFLOW_HOME (SQLite DB) and the examples DAG folder."""

    def __init__(self, executable, home):
        self.executable = executable
        self.home_entry = "AIRFLOW_HOME=%s" % home
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("AIRFLOW", "T2T_DATAGEN_", "PYTHONPATH"))}
        self.env.update({
            "AIRFLOW_HOME": str(home),  # also marks every process a task starts
            "AIRFLOW__CORE__DAGS_FOLDER": DAG_DIR,
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "PYTHONDONTWRITEBYTECODE": "1",  # no __pycache__ in examples/airflow
            # A failed try is not retried unless a test asks for it: the DAG's own retry
            # delay (300 s) would make `dags test` wait that long.
            "T2T_DATAGEN_RETRIES": "0",
        })

    def __call__(self, *args, timeout=300, **env):
        return subprocess.run([self.executable] + list(args), env=dict(self.env, **env),
                              cwd=ROOT, capture_output=True, text=True, timeout=timeout)

    def dags_test(self, logical_date, conf, **env):
        start = time.time()
        run = self("dags", "test", "t2t_datagen", logical_date, "-c", json.dumps(conf), **env)
        run.seconds = time.time() - start
        run.output = run.stdout + run.stderr
        return run


@pytest.fixture(scope="module")
def airflow(tmp_path_factory):
    cli = Airflow(_install_airflow(), tmp_path_factory.mktemp("airflow_home"))
    migrate = cli("db", "migrate")
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr
    return cli


# The DAG's default extra_args.
RUNNER_FLAGS = ["--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
                "--direct_num_workers", "2"]


def _flags(output_dir):
    """The job's flags as the DAG's command gives them with its default params."""
    return ["--train_source", os.path.join(SAMPLE, "train.en"),
            "--train_target", os.path.join(SAMPLE, "train.zh"),
            "--dev_source", os.path.join(SAMPLE, "dev.en"),
            "--dev_target", os.path.join(SAMPLE, "dev.zh"),
            "--output_dir", str(output_dir)] + RUNNER_FLAGS


@pytest.fixture(scope="module")
def direct_output(tmp_path_factory):
    """What `python -m pipeline.datagen` writes for the DAG's default flags."""
    out = tmp_path_factory.mktemp("direct") / "out"
    run = subprocess.run([sys.executable, "-m", "pipeline.datagen"] + _flags(out), cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return output_bytes(out)


# The timed-out job: its 2 worker processes (not the driver: --in_process_below_mb 0) hold every
# encode chunk (tests/local_chunk_gate.py), so it is still in its encode pass when any timeout
# after its lock fires, however fast or loaded the machine (flags that only slowed it, more
# bisection passes, stopped doing so once the search took fewer passes).
SLOW_FLAGS = RUNNER_FLAGS + ["--in_process_below_mb", "0"]


def _held_chunks(gate_dir):
    """The environment variables that make a job's workers hold every encode chunk."""
    return gate_variables(str(gate_dir), 0)


@pytest.fixture(scope="module")
def timeout_seconds(tmp_path_factory):
    """An execution_timeout that fires after the slowed job has taken its output lock (from
    then on a SIGTERM leaves an "interrupted" summary) and before it ends, on this machine as
    loaded as it is now: the job is run directly until it holds its lock (a fixed 5 s fired
    before the lock on a busy machine, so no summary was written). Twice the time to the
    lock, plus the task's own start-up; the job must still be running half as long again
    after that (then it is killed), else the measurement says why no timeout fits."""
    out = tmp_path_factory.mktemp("timed") / "out"
    lock = out / ("%s.datagen.lock" % PROBLEM)
    start = time.monotonic()
    job = subprocess.Popen([sys.executable, "-m", "pipeline.datagen"] + _flags(out)[:-len(
        RUNNER_FLAGS)] + SLOW_FLAGS, cwd=ROOT, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
        env=dict(os.environ, **_held_chunks(tmp_path_factory.mktemp("measure") / "gate")))
    to_lock = None
    while job.poll() is None and to_lock is None:
        if lock.exists():
            to_lock = time.monotonic() - start
        time.sleep(0.05)
    assert to_lock is not None, "the slowed job ended (%s) before it held its lock" % (
        job.returncode)
    timeout = int(2 * to_lock) + 3
    # the job must still be running well after the timeout: then it is stopped, not waited for
    while job.poll() is None and time.monotonic() - start < timeout * 1.5:
        time.sleep(0.05)
    still_running = job.poll() is None
    if still_running:
        os.killpg(job.pid, signal.SIGKILL)  # the driver and its worker processes
    job.wait()
    assert still_running, (
        "the slowed job ended after %.1f s and held its lock after %.1f s: no timeout of %d s "
        "falls safely in between" % (time.monotonic() - start, to_lock, timeout))
    print("\nslowed job: lock after %.1f s, still running after %.1f s; execution_timeout %d s"
          % (to_lock, timeout * 1.5, timeout))
    return timeout


def _processes_with_env(entry):
    """Pids of processes whose environment holds `entry` ("NAME=value"). Every process the
    task started inherits the Airflow CLI's environment, also the job's worker processes and
    their fork server (whose command lines do not name the job)."""
    pids = []
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                if entry.encode() in f.read().split(b"\0"):
                    pids.append(int(pid))
        except (OSError, ValueError):
            pass
    return pids


def _left_running(entry, seconds=120.0):
    """The processes still holding `entry` once none does, or after `seconds` (a guard
    against a hang: they were signalled, a busy machine only makes them slower to end)."""
    deadline = time.time() + seconds
    while _processes_with_env(entry) and time.time() < deadline:
        time.sleep(0.1)
    return _processes_with_env(entry)


def test_timed_out_day_is_stopped_retried_then_rerun_to_a_direct_runs_bytes_then_a_noop(
        airflow, direct_output, timeout_seconds, tmp_path):
    prefix = tmp_path / "t2t"
    day = prefix / "2026-11-20"
    conf = {"python": sys.executable, "output_dir": str(prefix)}

    # 1. An execution_timeout measured to fall inside the slowed job's passes
    # (`timeout_seconds`) and one retry, 2 s later.
    slow = dict(conf, extra_args=SLOW_FLAGS)
    timed_out = airflow.dags_test("2026-11-20", slow, **_held_chunks(tmp_path / "gate"),
                                  T2T_DATAGEN_TIMEOUT_SECONDS=str(timeout_seconds),
                                  T2T_DATAGEN_RETRIES="1", T2T_DATAGEN_RETRY_DELAY_SECONDS="2")
    log = timed_out.output
    assert timed_out.returncode != 0, log[-3000:]
    assert log.count("Process timed out") == 2, log[-6000:]  # the try and its retry
    assert log.count("Sending SIGTERM signal to process group") == 2, log[-6000:]
    assert "up_for_retry" in log, log[-6000:]
    assert "is in use by" not in log, log[-6000:]  # the retry did not find the lock held
    leftover = _left_running(airflow.home_entry)
    assert not leftover, "processes of the task left running: %s" % leftover
    summary = json.loads((day / ("%s.datagen_summary.json" % PROBLEM)).read_text())
    assert (summary["status"], summary["error"]) == ("interrupted", "Interrupted: SIGTERM")
    assert not (day / ("%s.datagen.lock" % PROBLEM)).exists()
    assert not (day / ("%s.DATAGEN_COMPLETE" % PROBLEM)).exists()
    assert not list(day.glob(PROBLEM + "-*"))

    # 2. The day rerun with the DAG's own timeout completes, byte-identical to a direct run.
    done = airflow.dags_test("2026-11-20", conf)
    assert done.returncode == 0, done.output[-6000:]
    assert "Command exited with return code 0" in done.output
    assert output_bytes(day) == direct_output
    shard = day / ("%s-train-00000-of-00010" % PROBLEM)
    mtime = shard.stat().st_mtime_ns

    # 3. The same day again: nothing to do, nothing rewritten.
    again = airflow.dags_test("2026-11-20", conf)
    assert again.returncode == 0, again.output[-6000:]
    assert "Output already complete, nothing done" in again.output
    assert shard.stat().st_mtime_ns == mtime
    assert output_bytes(day) == direct_output
    print("\ndags test seconds: timeout+retry %.1f, run %.1f, noop %.1f"
          % (timed_out.seconds, done.seconds, again.seconds))


def test_missing_input_fails_the_task_with_the_jobs_error_line_and_params_stay_quoted(
        airflow, tmp_path):
    missing = str(tmp_path / "no such $(touch INJECTED); file.en")
    conf = {"python": sys.executable, "output_dir": str(tmp_path / "t2t"),
            "train_source": missing, "dev_source": ""}
    run = airflow.dags_test("2026-11-21", conf)
    assert run.returncode != 0, run.output[-3000:]
    error_lines = [line for line in run.output.splitlines() if " ERROR " in line]
    assert len(error_lines) == 1 and missing in error_lines[0], run.output[-6000:]
    assert "Command exited with return code 2" in run.output
    assert "--dev_source" not in run.output  # "" leaves the dev split out
    assert not list(tmp_path.rglob("INJECTED")) and not os.path.exists(
        os.path.join(ROOT, "INJECTED"))
    assert not (tmp_path / "t2t").exists()  # bad input leaves nothing behind


def test_the_readme_recipe_migrates_reserializes_and_tests_the_dag(tmp_path):
    """README's Airflow recipe as written (tests/readme_examples.py), in a copy of the
    checkout whose `.venv` is the test venv, with a HOME of its own where `~/airflow-venv` is
    the cached Airflow venv (the recipe's install lines are left out): `db migrate`, `dags
    reserialize`, `dags list` showing the DAG, and `dags test` running the job on the sample
    with the DAG's default params into the copy's local_output/airflow/2026-11-28."""
    import readme_examples
    from plain_install import copy_of_checkout
    venv = os.path.dirname(os.path.dirname(_install_airflow()))
    home = tmp_path / "home"
    home.mkdir()
    os.symlink(venv, str(home / "airflow-venv"))
    copy = copy_of_checkout(tmp_path / "clone")
    os.symlink(sys.prefix, os.path.join(copy, ".venv"))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIRFLOW", "T2T_DATAGEN_", "PYTHON"))}
    env.update(HOME=str(home), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run(["bash", "-c", readme_examples.shell_script("airflow")], cwd=copy,
                          env=env, capture_output=True, text=True, timeout=1200)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert "t2t_datagen" in done.stdout  # `dags list | grep`
    assert "Command exited with return code 0" in output, output[-6000:]
    day = os.path.join(copy, "local_output", "airflow", "2026-11-28")
    assert os.path.exists(os.path.join(day, "%s.DATAGEN_COMPLETE" % PROBLEM)), output[-6000:]
