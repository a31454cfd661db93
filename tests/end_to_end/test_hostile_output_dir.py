"""Issue 42 items 7 and 8, issue 45 item 2: the output directory (README, "Bad input").

- A refused run (a flag error: an unknown runner, a value out of range, Beam's own option
  check) is one ERROR line, exit 2, before any pass, and leaves no new directory behind.
- A regular file where the job keeps a directory of its own (`.datagen-work`, `rejects`) is
  one line, exit 2, before any pass.
- The output directory removed, replaced by a file, or its lock removed at the start of any
  pass: one line, exit 2, no marker (the lease is renewed before each pass, at the commit
  point and before the marker, whatever the heartbeat saw last).

In-process runs (FnApiRunner) on a few lines.
"""

import logging
import os
import shutil

import pytest

from bad_input_files import FLAGS, corpus as _corpus
from datagen_helpers import assert_no_output, one_line_error

HUGE = "100000000000000000000"


@pytest.mark.parametrize("flags, words", [
    (["--runner", "DaskRuner"], ["unknown --runner DaskRuner (did you mean DaskRunner?)",
                                 "PrismRunner", "DirectRunner"]),
    (["--runner", "apache_beam.runners.NoSuchRunner"], ["has no class NoSuchRunner"]),
    (["--runner", "DataflowRunner", "--setup_file", "./setup.py"],
     ["--runner DataflowRunner: ", "project", "temp_location"]),
    (["--runner", "DirectRunner", "--direct_num_workers", "-3"], ["--direct_num_workers"]),
    (["--vocab_size", HUGE], ["--vocab_size: must be an integer from 1 to 2147483647"]),
    (["--num_train_shards", HUGE], ["--num_train_shards: must be an integer from 1 to 99999"]),
    (["--max_length", "-1"], ["--max_length: must be an integer from 0 to 2147483647, not -1"]),
    (["--packed_length", HUGE], ["--packed_length: must be an integer from 0 to 2147483647"]),
], ids=["unknown-runner", "no-such-class", "dataflow-options", "direct-workers",
        "vocab-size", "shards", "max-length", "packed-length"])
def test_a_refused_run_is_one_line_before_any_pass_and_makes_no_directory(
        tmp_path, capsys, flags, words):
    src, tgt = _corpus(tmp_path / "in")
    out = tmp_path / "new" / "out"  # neither exists
    argv = ["--train_source", src, "--train_target", tgt, "--output_dir", out] + FLAGS
    line = one_line_error(capsys, argv + flags, *words)
    assert " pass 1" not in line
    assert not os.path.exists(tmp_path / "new")


@pytest.mark.parametrize("name", [".datagen-work", "rejects"])
def test_a_file_where_the_job_keeps_a_directory_is_one_line_before_any_pass(
        tmp_path, capsys, name):
    src, tgt = _corpus(tmp_path / "in")
    out = tmp_path / "out"
    out.mkdir()
    (out / name).write_text("someone's notes\n")
    argv = ["--train_source", src, "--train_target", tgt, "--output_dir", out] + FLAGS
    code, errors, err = _main_with_log(capsys, argv)
    assert code == 2 and len(errors) == 1, err
    assert "holds a file named %s" % name in errors[0] and "Traceback" not in err
    assert " pass 1" not in err  # refused before anything ran
    assert sorted(os.listdir(out)) == [name] and (out / name).read_text() == "someone's notes\n"


def _main_with_log(capsys, argv):
    from pipeline import datagen
    code = datagen.main([str(a) for a in argv])
    err = capsys.readouterr().err
    return code, [line for line in err.splitlines() if " ERROR " in line], err


class _AtPassStart(logging.Handler):
    """Runs `act()` once, when the job logs the start of pass `number`: in the driver's main
    thread, before that pass's pipeline runs (an event, not a time)."""

    def __init__(self, number, act):
        super().__init__()
        self.number, self.act, self.done = number, act, False

    def emit(self, record):
        if not self.done and record.getMessage().startswith("pass %d of " % self.number):
            self.done = True
            self.act()


def _remove_dir(out):
    shutil.rmtree(out)


def _replace_by_file(out):
    shutil.rmtree(out)
    out.write_text("not a directory\n")


def _remove_lock(out):
    os.remove(out / "p.datagen.lock")


@pytest.mark.slow
@pytest.mark.parametrize("number", [1, 2], ids=["pass1", "pass2-encode"])
@pytest.mark.parametrize("change, words", [
    (_remove_dir, ["p.datagen.lock"]),
    (_replace_by_file, ["p.datagen.lock", "--output_dir"]),
    (_remove_lock, ["p.datagen.lock was deleted while this run held it"]),
], ids=["removed", "replaced-by-a-file", "lock-removed"])
def test_the_output_dir_changed_under_the_job_is_one_line_and_no_marker(
        tmp_path, capsys, number, change, words):
    src, tgt = _corpus(tmp_path / "in")
    out = tmp_path / "out"
    argv = ["--train_source", src, "--train_target", tgt, "--output_dir", out] + FLAGS
    at = _AtPassStart(number, lambda: change(out))
    log = logging.getLogger("datagen")
    log.addHandler(at)
    try:
        line = one_line_error(capsys, argv, *words)
    finally:
        log.removeHandler(at)
    assert at.done, "the job ran no pass %d" % number
    assert "nothing marked complete" in line
    if os.path.isdir(out):
        assert_no_output(out)
