"""pipeline/driver/job_record: the summary a run writes while it runs ("running") and when it
fails ("failed", "interrupted", with the error), and what it records of the run."""

import json
import os

from driver_fixtures import config, job_record, layout, pass_runner, write


def read(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def make(tmp_path, *flags):
    cfg = config(tmp_path, *flags)
    out = layout(cfg)
    return cfg, out, job_record(cfg, out, pass_runner())


def test_the_summary_says_what_the_run_is(tmp_path):
    cfg, out, record = make(tmp_path, "--seed", "5", "--problem", "pp")
    record.start()
    record.fingerprint = {"flags": {"seed": 5}, "inputs": {}}
    assert record.timed("prepare", lambda a, b: a + b, 2, 3) == 5
    summary = record.summary("complete", splits={"train": {}})
    assert summary["status"] == "complete"
    assert (summary["problem"], summary["seed"], summary["output_dir"]) == (
        "pp", 5, out.output_dir)
    assert summary["flags"] == cfg.flags()
    assert summary["runner"] == "DirectRunner"
    assert summary["passes"] == 0
    assert list(summary["stages"]) == ["prepare"]
    assert summary["stages"]["prepare"]["seconds"] >= 0
    assert summary["fingerprint"] == {"flags": {"seed": 5}, "inputs": {}}
    assert summary["splits"] == {"train": {}}
    assert summary["started_at"] <= summary["finished_at"]
    assert "job_server_start_seconds" not in summary
    json.dumps(summary)  # the summary is JSON


def test_a_running_summary_is_written_into_the_output_dir(tmp_path):
    _, out, record = make(tmp_path)
    os.makedirs(out.output_dir)
    record.start()
    record.write_running()
    assert read(out.summary_path)["status"] == "running"


def test_a_failure_is_recorded_with_its_error(tmp_path):
    _, out, record = make(tmp_path)
    os.makedirs(out.output_dir)
    record.start()
    record.record_failure(ValueError("bad thing"))
    summary = read(out.summary_path)
    assert (summary["status"], summary["error"]) == ("failed", "ValueError: bad thing")
    record.record_failure(KeyboardInterrupt(), "interrupted")
    assert read(out.summary_path)["status"] == "interrupted"


def test_a_failure_leaves_the_summary_of_a_complete_output_alone(tmp_path):
    _, out, record = make(tmp_path)
    write(out.summary_path, '{"status": "complete"}')
    write(out.complete_path)
    record.record_failure(ValueError("late"))
    assert read(out.summary_path) == {"status": "complete"}


def test_a_failure_summary_that_cannot_be_written_does_not_hide_the_error(tmp_path, caplog):
    _, out, record = make(tmp_path, "--output_dir", str(tmp_path / "file" / "out"))
    write(tmp_path / "file", "a regular file")
    record.record_failure(ValueError("first"))  # no raise: the caller raises the first error
    assert "could not write the failure summary" in caplog.text
