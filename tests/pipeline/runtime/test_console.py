"""What the job prints: only its own short lines by default, pass numbering and progress,
Beam's logging back with --log_level, --help with defaults, and Beam options without the
job's flags (so Beam's workers have nothing to discard)."""

import os
import re
import subprocess
import sys

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from datagen_helpers import envi
from pipeline.runtime import console
from pipeline import datagen
from pipeline.driver import resume as resuming
from pipeline.driver.encode import EncodeStep
from pipeline.output.layout import OutputLayout
from pipeline.driver.options import DatagenOptions, default_config, job_flag_parser, parse_flags
from pipeline.driver.passes import PassRunner
from repo_paths import REPO_ROOT as ROOT
from transforms.shards.shard_fragments import fragment_name

SAMPLE = os.path.join(ROOT, "sample_data", "enzh-mlqe-pe")
# What Beam's and TensorFlow's own logging looks like on this console.
INTERNALS = re.compile(r"apache_beam|Worker:|semi_persistent|Discarding|unparseable|grpc|"
                       r"tensorflow|cpu_feature_guard|oneDNN|absl|Traceback", re.I)


def _datagen(*argv, timeout=600):
    return subprocess.run([sys.executable, "-m", "pipeline.datagen"] + list(argv), cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_sample_job_with_two_worker_processes_prints_only_its_own_short_lines(tmp_path):
    out = tmp_path / "out"
    run = _datagen(
        "--train_source", os.path.join(SAMPLE, "train.en"),
        "--train_target", os.path.join(SAMPLE, "train.zh"),
        "--dev_source", os.path.join(SAMPLE, "dev.en"),
        "--dev_target", os.path.join(SAMPLE, "dev.zh"),
        "--output_dir", str(out), "--problem", "translate_enzh_wmt8k", "--vocab_size", "8192",
        "--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
        "--direct_num_workers", "2", "--in_process_below_mb", "0")
    assert run.returncode == 0, run.stderr
    lines = (run.stderr + run.stdout).splitlines()
    assert len(lines) <= 40, "\n".join(lines)
    assert not [line for line in lines if INTERNALS.search(line)], "\n".join(lines)
    assert max(len(line) for line in lines) <= console.MAX_LINE, "\n".join(lines)
    err = run.stderr
    assert re.search(r"pass 1 of ~?2: vocab source, target", err), err
    assert re.search(r"pass 2 of 2: encode", err), err
    # the first round probes the middle of [1, 1000]; later ones also the guessed next nodes
    assert re.search(r"round 1: source min_count 500 -> \d+; target min_count 500 -> \d+ ", err), err
    assert re.search(r"round 2: source min_count \d+\.\.\d+ -> \d+\.\.\d+", err), err
    assert "pass 2 done in" in err
    table = run.stdout.splitlines()
    assert table[0].startswith("datagen complete: problem translate_enzh_wmt8k")
    assert table[-1].startswith("stages: ")
    assert any(re.match(r"train +7000 +7000 +0 +10$", line) for line in table), run.stdout


@pytest.mark.slow
def test_log_level_brings_beams_logging_back(tmp_path):
    argv = ["--train_source", envi("tst2013", "en"), "--train_target", envi("tst2013", "vi"),
            "--vocab_type", "word", "--runner", "FnApiRunner"]
    quiet = _datagen(*argv, "--output_dir", str(tmp_path / "quiet"))
    loud = _datagen(*argv, "--output_dir", str(tmp_path / "loud"), "--log_level", "info")
    assert quiet.returncode == 0 and loud.returncode == 0, quiet.stderr + loud.stderr
    assert "apache_beam" not in quiet.stderr
    assert "apache_beam" in loud.stderr  # e.g. FnApiRunner's "Running ((ref_Applied..."


def test_job_flags_stay_out_of_beams_options():
    flags, beam_args = parse_flags(["--runner", "FnApiRunner", "--vocab_size", "100",
                                    "--direct_num_workers=2", "--seed", "3", "-v"])
    assert (flags.vocab_size, flags.seed, flags.log_level) == (100, 3, "info")
    assert beam_args == ["--runner", "FnApiRunner", "--direct_num_workers=2"]
    # Beam sends every PipelineOptions subclass's options to its workers; the job's flags
    # are none of them, so workers have nothing to discard.
    assert DatagenOptions not in PipelineOptions.__subclasses__()
    sent = PipelineOptions(beam_args).get_all_options(retain_unknown_options=True)
    assert not {"vocab_size", "seed", "train_source", "log_level"} & set(sent)
    assert sent["runner"] == "FnApiRunner"


def test_help_shows_every_flags_default_and_text(capsys):
    assert datagen.main(["--help"]) == 0
    squashed = " ".join(capsys.readouterr().out.split())
    assert "Required: --output_dir and training data" in squashed
    assert "--vocab_size VOCAB_SIZE Target vocabulary size" in squashed
    assert "(default: 8192)" in squashed and "(default: 10)" in squashed
    import argparse
    for action in job_flag_parser().actions:
        assert action.help, "no help text for %s" % action.option_strings
        if action.option_strings and action.default not in (None, False, argparse.SUPPRESS):
            assert "(default: %s)" % (action.default,) in squashed, action.option_strings


def test_round_lines_fit_a_console_line():
    sizes = {"source:%d" % t: 90000 - t for t in (1, 3, 7, 15, 31, 62, 125, 250, 500, 1000)}
    sizes.update({"target:%d" % t: 80000 - t for t in (2, 5, 9, 17, 34, 70, 140)})
    line = console.round_line(12, sizes)
    assert line == ("  round 12: source min_count 1..1000 -> 89999..89000; "
                    "target min_count 2..140 -> 79998..79860 subtokens")
    assert len("20:18:26 " + line) <= console.MAX_LINE
    assert console.round_line(1, {"shared:6": 8568}) == \
        "  round 1: shared min_count 6 -> 8568 subtokens"


def test_progress_line_gives_rate_and_time_left():
    assert console.progress_line(350000, 760000, 28.0) == (
        "encoded 350,000 of 760,000 pairs (46%), 12,500 pairs/s, about 33 s left, 28 s so far")
    assert console.progress_line(10, 10, 200.0).endswith(
        "(100%), 0 pairs/s, 3 min 20 s so far")
    line = console.progress_line(350000, 760000, 28.0, "then 11 shards")
    assert line == ("encoded 350,000 of 760,000 pairs (46%), 12,500 pairs/s, about 33 s left, "
                    "then 11 shards, 28 s so far")
    assert len("20:18:26 pass 2: " + line) <= console.MAX_LINE


def test_progress_line_before_any_chunk_is_done_says_the_pass_is_starting():
    """Issue 50, item 17: "encoded 0 of 8,000 pairs, 32 s so far", then done 8 s later: the
    pairs count once their chunk is done, so until one is the line says the pass starts."""
    line = console.progress_line(0, 8000, 32.0, "then 11 shards", chunks=2)
    assert line == ("encode starting: 8,000 pairs, 2 chunks, none done, then 11 shards, "
                    "32 s so far")
    assert " 0 of " not in line
    assert console.progress_line(0, 500, 3.0, chunks=1) == \
        "encode starting: 500 pairs, 1 chunk, none done, 3 s so far"
    assert len("20:18:26 pass 2: " + console.progress_line(
        0, 1000000000, 5000.0, "then 1000 shards", chunks=100000)) <= console.MAX_LINE


def test_shards_line_says_the_shuffle_then_the_shards_written_and_the_time_left():
    assert console.shards_line(760000, 0, 11, 70.0, 60.0) == (
        "encoded all 760,000 pairs; shuffling fragments into 11 shards for 10 s, 70 s "
        "so far")
    assert console.shards_line(760000, 4, 11, 80.0, 60.0) == (
        "encoded all 760,000 pairs; 4 of 11 shards written, about 35 s left, 80 s so far")
    assert console.shards_line(760000, 11, 11, 90.0, 60.0) == (
        "encoded all 760,000 pairs; 11 of 11 shards written, 90 s so far")
    assert len("20:18:26 pass 2: " + console.shards_line(
        7600000, 0, 1000, 5000.0, 4000.0)) <= console.MAX_LINE


def test_stages_line_names_the_furthest_stage_and_any_earlier_one_unfinished():
    stages = [("sample", "parts sampled", 13, 13), ("index", "vocabularies indexed", 2, 2),
              ("round 1", "probes learnt", 4, 4), ("round 2", "probes learnt", 1, 4),
              ("round 3", "probes learnt", 0, None)]
    assert console.stages_line(stages, 70.0) == "round 2: 1 of 4 probes learnt, 70 s so far"
    stages[1] = ("index", "vocabularies indexed", 1, 2)
    stages[3] = ("round 2", "probes learnt", 0, None)
    assert console.stages_line(stages, 130.0) == (
        "round 1: 4 of 4 probes learnt; index: 1 of 2 vocabularies indexed, 2 min 10 s so far")
    stages[2] = ("round 1", "probes learnt", 3, 4)
    assert console.stages_line(stages, 130.0) == (  # one stage behind at most
        "round 1: 3 of 4 probes learnt; index: 1 of 2 vocabularies indexed, 2 min 10 s so far")
    assert console.stages_line([("sample", "parts sampled", 0, None)], 5.0) == \
        "sample: nothing done yet, 5 s so far"
    assert console.stages_line([("sample", "parts sampled", 2, None)], 5.0) == \
        "sample: 2 of ? parts sampled, 5 s so far"


def test_passes_are_numbered_out_of_the_expected_count(caplog):
    runner = PassRunner(PipelineOptions(["--runner", "FnApiRunner", "--dry_run", "True"]), lambda: None)
    runner.expect(3, exact=False)
    with caplog.at_level("INFO", logger="datagen"):
        for _ in range(4):
            runner("a pass", lambda p: p)  # a dry run: only translated
        runner.expect(1)
        runner("encode", lambda p: p)
    started = [r.getMessage() for r in caplog.records if ": " in r.getMessage()
               and "translated" not in r.getMessage()]
    assert started == ["pass 1 of ~3: a pass", "pass 2 of ~3: a pass", "pass 3 of ~3: a pass",
                       "pass 4 of ~4: a pass", "pass 5 of 5: encode"]


class _LivePass:
    """A pass runner whose runner reports counters while the pass runs (Prism, Dask)."""

    def __init__(self):
        self.counters = {}

    def live_counters(self):
        return dict(self.counters)


def test_encode_progress_counts_pairs_from_manifests_or_counters_then_the_shards(tmp_path):
    """Never from a listing of the fragments (issue 49): the chunk manifests' names (an object
    per group of chunks) where the runner reports no counters while it runs, else them."""
    layout = OutputLayout(str(tmp_path), "p", 8192)
    live = _LivePass()
    step = EncodeStep(layout, default_config(problem="p"), live, None)
    step.resume_key = "k"
    chunks = [{"ds": {"split": "train", "index": 0}, "first_line": 0, "num_lines": 500},
              {"ds": {"split": "train", "index": 0}, "first_line": 500, "num_lines": 300},
              {"ds": {"split": "dev", "index": 1}, "first_line": 0, "num_lines": 200},
              {"ds": {"split": "train", "index": 0}, "first_line": 800, "unmatched": "source"}]
    manifests = resuming.resume_of(layout, "k", False).manifest_dir
    fragments, shards = step.work_dirs()["fragments"], step.work_dirs()["shards"]
    for directory in (manifests, fragments, shards):
        os.makedirs(directory)
    progress = step.progress(chunks, {"train": 2, "dev": 1})
    assert progress(5.0) == ("encode starting: 1,000 pairs, 3 chunks, none done, then 3 shards, "
                             "5 s so far")
    for shard in (0, 1):  # fragment files say nothing
        open(os.path.join(fragments, fragment_name("train", shard, 0, 0)), "w").close()
    open(os.path.join(manifests, "train-d0-l500+300.json"), "w").close()  # a group of one chunk
    open(os.path.join(manifests, ".train-d0-l0+500.json.tmp-" + "0" * 32), "w").close()
    assert progress(10.0) == ("encoded 300 of 1,000 pairs (30%), 30 pairs/s, about 23 s left, "
                              "then 3 shards, 10 s so far")
    live.counters = {"train.pairs_read": 800, "dev.pairs_read": 200, "train.pairs_encoded": 1}
    assert progress(20.0) == ("encoded all 1,000 pairs; shuffling fragments into 3 "
                              "shards for 0 s, 20 s so far")
    names = layout.shards
    open(os.path.join(shards, names.name("train", 0, 2)), "w").close()
    open(os.path.join(shards, "." + names.name("train", 1, 2) + ".tmp-" + "0" * 32), "w").close()
    assert progress(30.0) == ("encoded all 1,000 pairs; 1 of 3 shards written, about 20 s "
                              "left, 30 s so far")


# README, "Scheduled runs": the job's stdout stays small on every path (its progress and log
# go to stderr), so a scheduler reading stderr to the end before stdout (Airflow's Beam
# provider) cannot block on a full stdout pipe (64 KiB on Linux).
STDOUT_LIMIT = 4096


@pytest.mark.slow
def test_stdout_stays_under_4_kib_on_every_path(tmp_path):
    """Success with many datasets and rejects (the longest table), a no-op rerun, exit 2, an
    interrupt; --help is longer (9 KB) but far below a pipe's 64 KiB."""
    import signal
    # The sample's dev split as 60 line-aligned datasets: 10 are listed in the table.
    with open(os.path.join(SAMPLE, "dev.en"), encoding="utf-8") as f:
        en = f.read().splitlines(keepends=True)
    with open(os.path.join(SAMPLE, "dev.zh"), encoding="utf-8") as f:
        zh = f.read().splitlines(keepends=True)
    parts = tmp_path / "parts"
    parts.mkdir()
    for i in range(60):
        for lang, lines in (("en", en), ("zh", zh)):
            (parts / ("part-with-a-long-name-%02d.%s" % (i, lang))).write_text(
                "".join(lines[i::60]), encoding="utf-8")
    out = tmp_path / "out"
    argv = ["--train_source", str(parts / "*.en"), "--train_target", str(parts / "*.zh"),
            "--output_dir", str(out), "--max_line_chars", "100", "--vocab_size", "1000",
            "--runner", "FnApiRunner"]
    stdouts = {}

    done = _datagen(*argv)
    assert done.returncode == 0, done.stderr
    assert "... 50 more datasets" in done.stdout and "line_too_long" in done.stdout
    stdouts["success"] = done.stdout
    noop = _datagen(*argv)
    assert noop.returncode == 0 and "nothing done" in noop.stdout, noop.stderr
    stdouts["noop"] = noop.stdout
    bad = _datagen(*(argv[:1] + [str(tmp_path / "missing.en")] + argv[2:]))
    assert bad.returncode == 2 and bad.stderr.count("ERROR") == 1, bad.stderr
    stdouts["exit 2"] = bad.stdout

    # SIGTERM to the process group once the first pass runs, as Airflow's timeout sends it.
    job = subprocess.Popen([sys.executable, "-m", "pipeline.datagen"] + argv[:5]
                           + [str(tmp_path / "out2")] + argv[6:], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    err = ""
    for line in job.stderr:
        err += line
        if "pass 1 of" in line:
            os.killpg(job.pid, signal.SIGTERM)
            break
    rest_out, rest_err = job.communicate(timeout=600)
    assert job.returncode == 143, err + rest_err
    stdouts["interrupt"] = rest_out

    for path, text in stdouts.items():
        assert len(text.encode("utf-8")) < STDOUT_LIMIT, (path, len(text.encode()), text)
    helped = _datagen("--help")
    assert helped.returncode == 0 and 0 < len(helped.stdout.encode()) < 64 * 1024


_NOISY_MODULE = '''
import os
from absl import logging
logging.warning("Failed to load jax profiler: No module named 'jax'")
os.write(2, b"WARNING: All log messages before absl::InitializeLog() is called are written "
            b"to STDERR\\n")
os.write(2, b"I0000 00:00:1795826202.156370   29346 port.cc:153] oneDNN custom operations "
            b"are on.\\n")
os.write(2, b"E0000 00:00:1795826202.156370   29346 real.cc:1] a real error\\n")
LOADED = os.environ.get("TF_CPP_MIN_LOG_LEVEL")
'''


def test_quiet_import_holds_a_librarys_start_up_lines_back_and_keeps_the_rest(
        tmp_path, monkeypatch, capfd):
    """What the readers get (`console.quiet_import`): the known start-up lines (TensorFlow's
    C++ INFO lines and absl's note before them, an absl WARNING at import) are held back,
    anything else written to fd 2 is written back; TensorFlow's C++ logging is set to
    warnings while it loads; absl's habit of calling `logging.basicConfig()` on its first
    line leaves the root logger without a handler; every setting is as it was afterwards."""
    import logging
    (tmp_path / "noisy_start_up.py").write_text(_NOISY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    root = logging.getLogger()
    handlers, absl_level = list(root.handlers), logging.getLogger("absl").level
    monkeypatch.setattr(root, "handlers", [])  # a program that configured no logging
    module = console.quiet_import("noisy_start_up")
    assert module.LOADED == "1"
    assert root.handlers == [] and root.filters == []
    assert logging.getLogger("absl").level == absl_level
    assert "TF_CPP_MIN_LOG_LEVEL" not in os.environ
    assert capfd.readouterr().err.splitlines() == [
        "E0000 00:00:1795826202.156370   29346 real.cc:1] a real error"]
    assert console.quiet_import("noisy_start_up") is module  # imported once
    monkeypatch.setattr(root, "handlers", handlers)


def test_quiet_import_leaves_lines_the_program_asked_for(tmp_path, monkeypatch, capfd):
    """TF_CPP_MIN_LOG_LEVEL set by the program: fd 2 is not touched; a level set on the absl
    logger: its lines show."""
    import logging
    (tmp_path / "noisy_asked.py").write_text(_NOISY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    absl = logging.getLogger("absl")
    monkeypatch.setattr(absl, "level", logging.INFO)
    with pytest.MonkeyPatch.context() as m:
        shown = []
        m.setattr(absl, "handle", lambda record: shown.append(record.getMessage()))
        module = console.quiet_import("noisy_asked")
    assert module.LOADED == "0"
    assert shown == ["Failed to load jax profiler: No module named 'jax'"]
    assert "port.cc:153] oneDNN" in capfd.readouterr().err
