"""pipeline/driver/passes: every pass goes through one PassRunner, which numbers it in the log
against the passes the job expects, stops before a pass once the run lost its lock, and says
why a pass failed on a remote runner or a worker died in one line."""

import json
import logging

import apache_beam as beam
import pytest

from driver_fixtures import pass_runner
from pipeline.driver.passes import PassFailed, WorkerDied
from pipeline.output.lock import OutputLock
from pipeline.runtime.errors import DatagenError


def one_stage(p):
    _ = p | "One" >> beam.Create([1])


def test_passes_are_numbered_against_what_the_job_expects(caplog):
    run_pass = pass_runner()
    with caplog.at_level(logging.INFO, logger="datagen"):
        assert run_pass("first", one_stage) == 0.0  # a dry run: translated, not run
        run_pass.expect(2)
        run_pass("second", one_stage)
        run_pass("third", one_stage)
        run_pass("fourth", one_stage)  # more than expected: the count becomes a guess
        run_pass.expect(3, exact=False)
        run_pass("fifth", one_stage)
    assert [m for m in caplog.messages if not m.endswith("(dry run)")] == [
        "pass 1: first", "pass 2 of 3: second", "pass 3 of 3: third", "pass 4 of ~4: fourth",
        "pass 5 of ~7: fifth"]
    assert caplog.messages.count("pass 1 translated (dry run)") == 1
    assert run_pass.count == 5
    assert [label for label, _ in run_pass.passes] == ["first", "second", "third", "fourth",
                                                       "fifth"]


def test_a_run_that_lost_its_lock_builds_no_further_pass(tmp_path):
    """Each pass first renews the lease (whatever the heartbeat saw last): one taken over
    by another run, or deleted, stops the run before the pass."""
    for lost in ("taken", "deleted"):
        run_pass = pass_runner()
        with OutputLock(str(tmp_path), "p", 120.0) as lock:
            run_pass.lock = lock
            run_pass("first", one_stage)
            if lost == "taken":  # another run's lease, as after a take-over
                (tmp_path / "p.datagen.lock").write_text(json.dumps({"run_id": "other"}))
                expected = "p.datagen.lock was taken over by run other"
            else:
                (tmp_path / "p.datagen.lock").unlink()
                expected = "p.datagen.lock was deleted while this run held it"
            with pytest.raises(DatagenError, match=expected):
                run_pass("second", one_stage)
        assert run_pass.count == 1 and len(run_pass.passes) == 1


def test_no_job_server_on_direct_runner():
    run_pass = pass_runner()
    run_pass("first", one_stage)
    assert run_pass.job_server_seconds is None
    run_pass.close()


def test_a_remote_failure_is_its_first_line_and_root_cause():
    java = RuntimeError("Pipeline failed\n  at org.apache.flink.Job.run(Job.java:1)\n"
                        "Caused by: java.lang.RuntimeException: wrapped\n"
                        "Caused by: java.io.IOException: No space left on device\n"
                        "  at java.io.FileOutputStream.write(Native Method)")
    failed = PassFailed(3, "encode 4 chunks", "FlinkRunner", java)
    assert str(failed) == (
        "pass 3 (encode 4 chunks) failed on FlinkRunner: RuntimeError: Pipeline failed ... "
        "Caused by: java.io.IOException: No space left on device")


def test_a_long_remote_failure_is_cut():
    summary = PassFailed.summary(ValueError("x" * 1000))
    assert summary == "ValueError: " + "x" * (PassFailed.MAX_CHARS - len("ValueError: ")) + "..."
    assert PassFailed.summary(ValueError("")) == "ValueError: "


def test_a_dead_worker_says_which_and_suspects_memory_when_killed():
    assert str(WorkerDied(2, ["worker 123 killed by SIGKILL"])) == (
        "pass 2 failed: worker 123 killed by SIGKILL while it ran (out of memory?)")
    assert str(WorkerDied(1, ["worker 7 exited 1", "worker 8 exited 1"])) == (
        "pass 1 failed: worker 7 exited 1; worker 8 exited 1 while it ran")
