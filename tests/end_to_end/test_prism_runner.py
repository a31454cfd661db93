"""The job on Prism, Beam's Go portable runner, from `--runner PrismRunner --prism_location
BIN`: Prism is started once per job on the driver's main thread (pipeline.runtime.job_server),
every pass is submitted to it, and it is stopped at the end, on failure and on Ctrl-C. With
the LOOPBACK environment (the SDK worker in the driver) and with EXTERNAL (Beam's stock worker
pool), the output is byte-identical to DirectRunner's. The binary is built by run_tests.sh
(`tests/prism_binary.py`); without it these tests skip, and fail under CI=true.
"""

import os
import re
import signal

import pytest

import clusters
from prism_binary import prism_binary
from cluster_jobs import COMMON, INPUTS, Job, baseline, books, work_leftovers
from datagen_helpers import output_bytes
from pipeline import datagen

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def prism():
    try:
        return prism_binary()
    except clusters.Unavailable as e:
        clusters.unavailable(str(e))


def _prism_group(lines):
    """The process group id of the job's Prism, from its log line."""
    started = [line for line in lines if "Prism job server started" in line]
    assert len(started) == 1, lines  # one Prism for all the job's passes
    return int(re.search(r"pid (\d+)\)", started[0]).group(1))


def _group_gone(pgid):
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("environment", ["LOOPBACK", "EXTERNAL"])
def test_every_pass_runs_on_prism_byte_identical_to_direct_runner(prism, environment,
                                                                   tmp_path,
                                                                   tmp_path_factory):
    expected, direct = baseline("subword", tmp_path_factory)
    out = tmp_path / "out"
    pool = None
    flags = ["--runner", "PrismRunner", "--prism_location", prism]
    if environment == "EXTERNAL":
        pool = clusters.WorkerPool(str(tmp_path)).start()
        flags += ["--environment_type", "EXTERNAL", "--environment_config", pool.address]
    try:
        job = Job(INPUTS + COMMON + flags + ["--output_dir", str(out)])
        assert job.finish() == 0, "\n".join(job.lines[-20:])
    finally:
        if pool is not None:
            pool.stop()
    assert output_bytes(out) == expected
    assert work_leftovers(out) == []
    passes = [line for line in job.lines if re.search(r" pass \d+ done in ", line)]
    assert len(passes) == 2, job.lines  # vocab, encode: each a job on the one Prism
    assert _group_gone(_prism_group(job.lines)), "Prism still running after the job"
    import json
    summary = json.loads((out / "p.datagen_summary.json").read_text())
    assert summary["runner"] == "PrismRunner"
    assert books(summary) == books(direct)


def test_ctrl_c_ends_the_job_and_stops_prism(prism, tmp_path):
    out = tmp_path / "out"
    job = Job(INPUTS + COMMON + ["--runner", "PrismRunner", "--prism_location", prism,
                                 "--output_dir", str(out)])
    job.wait_for_line("Prism job server started")
    job.wait_for_line("pass 1")
    job.proc.send_signal(signal.SIGINT)
    status = job.finish()
    assert status == 130, "\n".join(job.lines[-20:])
    assert job.lines[-1].endswith("ERROR interrupted (SIGINT)"), job.lines[-5:]
    assert _group_gone(_prism_group(job.lines))
    assert not (out / "p.DATAGEN_COMPLETE").exists()
    assert work_leftovers(out) == []


def test_without_a_binary_the_job_is_refused_with_how_to_build_one(tmp_path, capsys):
    """Beam's PrismRunner would download a binary from GitHub; the job says how to get one
    instead, before it takes the output's lock (nothing is left in the output directory)."""
    for flags, named in (([], "needs --prism_location PATH"),
                         (["--prism_location", str(tmp_path / "none")], "no executable")):
        out = tmp_path / "out"
        assert datagen.main(INPUTS + COMMON + ["--runner", "PrismRunner", "--output_dir",
                                               str(out)] + flags) == 2
        errors = [line for line in capsys.readouterr().err.splitlines() if " ERROR " in line]
        assert len(errors) == 1 and named in errors[0], errors
        assert "go install github.com/apache/beam/sdks/v2/go/cmd/prism@" in errors[0]
        assert not out.exists() or not (out / "p.DATAGEN_COMPLETE").exists()
