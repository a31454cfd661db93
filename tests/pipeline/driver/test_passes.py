"""pipeline/driver/passes: every pass goes through one PassRunner, which numbers it in the log
against the passes the job expects, stops before a pass once the run lost its lock, and says
why a pass failed on a remote runner or a worker died in one line."""

import json
import logging
import tempfile
import threading

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from driver_fixtures import pass_runner
from pipeline.driver.passes import PassFailed, PassRunner, WorkerDied
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


def _wait_for_file(element, path):
    """The pass's one element waits until `path` exists: the pass runs until the progress
    line has been asked for (an event, not a time)."""
    import os
    import time
    for _ in range(60000):
        if os.path.exists(path):
            return element
        time.sleep(0.01)
    raise AssertionError("the pass's progress was never asked for")


def test_no_progress_line_follows_the_end_of_its_pass(tmp_path, caplog):
    """Issue 50, item 19: a progress line worked out while the pass ended (a listing that
    takes long on a busy machine) was logged after `pass N done`. Here the line is worked out
    only once the pass has said it is done: it is not logged."""
    asked = str(tmp_path / "asked")
    done = threading.Event()

    class _Done(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith("pass 1 done"):
                done.set()

    heartbeat = []

    def progress(seconds):
        heartbeat.append(threading.current_thread())
        open(asked, "w").close()
        assert done.wait(300), "the pass never ended"
        return "a line worked out as the pass ended"

    run_pass = PassRunner(PipelineOptions(["--runner", "FnApiRunner"]), lambda: None,
                          progress_seconds=0.01)
    handler = _Done()
    logging.getLogger("datagen").addHandler(handler)
    try:
        with caplog.at_level(logging.INFO, logger="datagen"):
            run_pass("waits", lambda p: p | beam.Create([1]) | beam.Map(_wait_for_file, asked),
                     progress=progress)
            assert done.wait(300)
            # the heartbeat, released by the end, has had its chance to log once its thread
            # ended (it ends once it sees the pass stopped)
            heartbeat[0].join(300)
    finally:
        logging.getLogger("datagen").removeHandler(handler)
    messages = [m for m in caplog.messages if m.startswith("pass 1")]
    assert messages[0] == "pass 1: waits" and messages[-1].startswith("pass 1 done"), messages
    assert "pass 1: a line worked out as the pass ended" not in messages, messages


def test_no_pass_leaves_a_temp_dir(tmp_path, monkeypatch):
    """Beam's Pipeline() makes a `beam-pipeline-temp*` dir that only run() removes: a dry
    run's pass (translated, never run) and a pass whose build failed left one in TMPDIR each
    (720 in /tmp after a day of tests). Nor may a pass that ran leave anything."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    dry = pass_runner()
    dry("translated", one_stage)

    def broken(p):
        one_stage(p)
        raise ValueError("a build that fails")

    with pytest.raises(ValueError, match="a build that fails"):
        dry("broken", broken)
    ran = PassRunner(PipelineOptions(["--runner", "FnApiRunner"]), lambda: None)
    ran("ran", one_stage)
    assert sorted(p.name for p in temp.iterdir()) == []
