"""The job against a Dask cluster it cannot use, or loses: one line and exit 2, never a
traceback, and nothing committed.

- no scheduler at `--dask_client_address`;
- workers that do not run the driver's project: one from an environment without the project
  (a virtualenv that sees the test environment's libraries, not the project), one with another
  version of it installed (a copy of this checkout, version 0.0.9, `pip install --target`):
  both refused in one line naming each worker. The job's check is shipped by value, so it runs
  where the project cannot be imported;
- the scheduler killed while the encode pass runs.
"""

import contextlib
import os
import re
import signal
import subprocess
import sys
import sysconfig
import time
from importlib.metadata import version

import pytest

from cluster_jobs import COMMON, INPUTS, KINDS, Job
from clusters import free_port
from dask_cluster import DaskCluster, close_clients
from plain_install import copy_of_checkout

pytestmark = pytest.mark.slow

WORD = KINDS["word"]
SITE_PACKAGES = sysconfig.get_paths()["purelib"]  # the test environment's libraries


def _one_error_line(job):
    errors = job.errors()
    assert len(errors) == 1, job.lines[-20:]
    assert not any("Traceback" in line for line in job.lines), job.lines[-20:]
    return errors[0]


def test_no_scheduler_at_the_address_is_one_line(tmp_path):
    address = "tcp://127.0.0.1:%d" % free_port()
    job = Job(INPUTS + COMMON + WORD + [
        "--output_dir", str(tmp_path / "out"), "--runner", "DaskRunner",
        "--dask_client_address", address, "--dask_connection_timeout", "2"])
    assert job.finish() == 2, job.lines[-20:]
    line = _one_error_line(job)
    assert "the Dask scheduler at %s does not answer" % address in line


def _venv_without_project(path):
    """A virtualenv whose interpreter imports the test environment's libraries (Beam, Dask)
    through a .pth line, but not the project: the project's own editable .pth file is read
    only in a site directory, and that directory is not one of this venv's."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    site = subprocess.run([str(path / "bin" / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    with open(os.path.join(site, "test-libraries.pth"), "w") as f:
        f.write(SITE_PACKAGES + "\n")
    return str(path / "bin" / "python"), site


def _other_version(venv, site, checkout):
    """Installs a copy of this checkout as version 0.0.9 into `venv`'s site directory."""
    copy = copy_of_checkout(checkout)
    setup = os.path.join(copy, "setup.py")
    with open(setup) as f:
        text = f.read()
    with open(setup, "w") as f:
        f.write(re.sub(r'version="[^"]+"', 'version="0.0.9"', text))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-compile", "--target", site, copy],
                   check=True, capture_output=True, text=True)


def test_workers_without_the_project_or_with_another_version_are_refused(tmp_path):
    bare_python, _ = _venv_without_project(tmp_path / "bare")
    old_python, old_site = _venv_without_project(tmp_path / "old")
    _other_version(tmp_path / "old", old_site, tmp_path / "checkout")
    cluster = DaskCluster(tmp_path / "dask", workers=0)
    try:
        cluster.start()
        outside = {"PYTHONPATH": ""}  # neither the repository nor tests/
        cluster.add_worker("bare", bare_python, env=outside, cwd=str(tmp_path))
        cluster.add_worker("old", old_python, env=outside, cwd=str(tmp_path))
        job = Job(INPUTS + COMMON + WORD + [
            "--output_dir", str(tmp_path / "out"), "--runner", "DaskRunner",
            "--dask_client_address", cluster.address])
        assert job.finish() == 2, job.lines[-20:]
        line = _one_error_line(job)
    finally:
        close_clients()
        cluster.stop()
    assert "Dask workers refused: " in line
    assert re.search(r"bare \(tcp://127\.0\.0\.1:\d+\) cannot import this project "
                     r"\(no module named pipeline\)", line), line
    assert re.search(r"old \(tcp://127\.0\.0\.1:\d+\) runs t2t-beam-datagen 0\.0\.9, the "
                     r"driver %s" % re.escape(version("t2t-beam-datagen")), line), line
    assert not (tmp_path / "out" / "p.DATAGEN_COMPLETE").exists()


def test_the_scheduler_killed_during_the_encode_pass_is_one_line(tmp_path):
    cluster = DaskCluster(tmp_path / "dask", workers=2)
    out = tmp_path / "out"
    try:
        cluster.start()
        job = Job(INPUTS + COMMON + WORD + ["--encode_chunk_lines", "50"] + [
            "--output_dir", str(out), "--runner", "DaskRunner",
            "--dask_client_address", cluster.address, "--dask_connection_timeout", "5"])
        job.wait_for_line("pass 2 of 2: encode")
        deadline = time.time() + 180
        while time.time() < deadline and not cluster.processing():
            time.sleep(0.05)
        [scheduler] = [p for p in cluster.procs.procs if p.name == "scheduler"]
        os.killpg(scheduler.pid, signal.SIGKILL)
        status = job.finish()
    finally:
        close_clients()
        cluster.stop()
    assert status == 2, job.lines[-20:]
    line = _one_error_line(job)
    assert "lost the Dask scheduler at %s" % cluster.address in line
    assert not (out / "p.DATAGEN_COMPLETE").exists()


def test_a_stopped_worker_is_dropped_when_it_was_and_not_said_to_answer_again(tmp_path):
    """Issue 50, item 17: a worker stopped (SIGSTOP) past the scheduler's
    `distributed.scheduler.worker-ttl` (30 s here: the job names a worker silent after
    15 s, asking every 5 s, so the silent line still comes well before the earliest drop,
    and a healthy worker on a loaded machine heartbeats far more often) is dropped, and its nanny kills it and
    starts a new one. The silent line names the setting; the lost line says after how long
    silent it was dropped (between ttl and twice ttl: the scheduler checks every ttl), by the
    scheduler's clock; no line says the worker answers again. The job completes."""
    ttl = 30
    cluster = DaskCluster(tmp_path / "dask", workers=2,
                          env={"DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL": "%ds" % ttl})
    out = tmp_path / "out"
    try:
        cluster.start()
        cluster.wait_for_workers(2)
        job = Job(INPUTS + COMMON + WORD + ["--encode_chunk_lines", "50"] + [
            "--output_dir", str(out), "--runner", "DaskRunner",
            "--dask_client_address", cluster.address])
        job.wait_for_line("pass 2 of 2: encode")
        deadline = time.time() + 300
        while time.time() < deadline and "worker-1" not in cluster.processing():
            time.sleep(0.05)
        pid = cluster.worker_pids()["worker-1"]
        os.kill(pid, signal.SIGSTOP)
        try:
            job.wait_for_line(" dropped after ", seconds=900)
        finally:
            with contextlib.suppress(ProcessLookupError):  # its nanny killed it
                os.kill(pid, signal.SIGCONT)
        status = job.finish()
    finally:
        close_clients()
        cluster.stop()
    seen = "the job's log:\n" + "\n".join(job.lines)
    assert status == 0, seen
    silent = [line for line in job.lines if "Dask worker worker-1 (" in line]
    assert silent and all(line.endswith(
        "the scheduler drops it after %d-%d s silent (distributed.scheduler.worker-ttl %d s)"
        % (ttl, 2 * ttl, ttl)) for line in silent), seen
    [dropped] = [line for line in job.lines if " dropped after " in line]
    after = re.search(r" WARNING pass 2: Dask worker (tcp://127\.0\.0\.1:\d+) dropped after "
                      r"(\d+) s silent \(distributed\.scheduler\.worker-ttl %d s\): \d+ "
                      r"running and \d+ finished tasks of the pass are computed again$" % ttl,
                      dropped)
    last_silent = int(re.search(r"silent (\d+) s", silent[-1]).group(1))
    assert after and int(after.group(2)) >= max(ttl, last_silent), seen  # when it was dropped
    assert job.lines.index(silent[0]) < job.lines.index(dropped), seen
    assert not [line for line in job.lines if "answers the scheduler again" in line], seen
