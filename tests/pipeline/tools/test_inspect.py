"""`python -m pipeline.tools.inspect`: records decoded back to the input text with the output's own
vocab files, for every vocab type; record selection by seed; the summary figures; one-line
errors with exit status 2."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from datagen_helpers import DATA_DIR, run_datagen
from pipeline.tools import inspect
from repo_paths import REPO_ROOT as ROOT

# Runs whole jobs (once per vocab type, module-scoped) and a subprocess: the full suite only.
pytestmark = pytest.mark.slow

ENVI = os.path.join(DATA_DIR, "envi-nmt-testdata")
SRC = os.path.join(ENVI, "iwslt15.tst2013.100.en")
TGT = os.path.join(ENVI, "iwslt15.tst2013.100.vi")

# problem -> the job's flags: each vocab type, one of them shared, one with a dev split
JOBS = {
    "sw": ["--vocab_type", "subword", "--vocab_size", 300, "--num_train_shards", 3],
    "bpe": ["--vocab_type", "byte_bpe", "--vocab_size", 400, "--shared_vocab",
            "--num_train_shards", 2],
    "wd": ["--vocab_type", "word", "--vocab_size", 8192, "--num_train_shards", 2,
           "--dev_source", SRC, "--dev_target", TGT],
}


def _stripped_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f]


PAIRS = set(zip(_stripped_lines(SRC), _stripped_lines(TGT)))


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """{problem: output dir} of one tiny real job per vocab type."""
    root = tmp_path_factory.mktemp("inspect")
    out = {}
    for problem, flags in JOBS.items():
        out[problem] = root / problem
        summary = run_datagen(out[problem], SRC, TGT, "--problem", problem, *flags)
        assert summary["status"] == "complete"
    return out


def _run(capsys, *argv):
    """(exit status, stdout, stderr) of `main(argv)`."""
    status = inspect.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _json(capsys, *argv):
    status, out, err = _run(capsys, *argv, "--json")
    assert status == 0, err
    return json.loads(out)


@pytest.mark.parametrize("problem,vocab_type", [("sw", "subword"), ("bpe", "byte_bpe"),
                                                ("wd", "word")])
def test_every_record_decodes_to_its_input_pair(outputs, capsys, problem, vocab_type):
    report = _json(capsys, outputs[problem], "--num_records", 1000)
    assert report["problem"] == problem and report["vocab_type"] == vocab_type
    records = report["records"]
    assert len(records) == report["records_in_split"] == 100
    assert [r["position"] for r in records] == list(range(100))
    assert {(r["source"], r["target"]) for r in records} == PAIRS
    for r in records:
        assert r["inputs_length"] == len(r["inputs"]) and r["targets_length"] == len(r["targets"])
    summary = report["summary"]
    assert summary["status"] == "complete"
    assert summary["splits"]["train"] == {
        "pairs_read": 100, "pairs_written": 100, "pairs_rejected": 0,
        "rejected_by_reason": {}, "shards": JOBS[problem][JOBS[problem].index(
            "--num_train_shards") + 1]}
    assert set(summary["vocab"]) == ({"shared"} if problem == "bpe" else {"source", "target"})


def test_text_output_shows_records_lengths_and_figures(outputs, capsys):
    status, out, err = _run(capsys, outputs["sw"], "--num_records", 4)
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("sw train: 4 of 100 records, the first in shard order")
    sources = [line[len("  source: "):] for line in lines if line.startswith("  source: ")]
    targets = [line[len("  target: "):] for line in lines if line.startswith("  target: ")]
    assert len(sources) == len(targets) == 4
    assert set(zip(sources, targets)) <= PAIRS
    assert sum("inputs " in line and " ids, targets " in line for line in lines) == 4
    assert any(line.split() == ["train", "100", "100", "0", "3"] for line in lines)
    assert any(line.startswith("source") and "vocab.sw.300.subwords.en" in line
               for line in lines)


def test_dev_split_and_word_vocab_sizes(outputs, capsys):
    report = _json(capsys, outputs["wd"], "--split", "dev", "--num_records", 3)
    assert report["split"] == "dev" and len(report["records"]) == 3
    assert {(r["source"], r["target"]) for r in report["records"]} <= PAIRS
    # word records carry no EOS: the lengths are the words of the line
    for r in report["records"]:
        assert r["inputs_length"] == len(r["source"].split())
    assert set(report["summary"]["splits"]) == {"dev", "train"}


def test_seed_picks_reproducibly_and_not_the_first(outputs, capsys):
    out = outputs["bpe"]
    every = _json(capsys, out, "--num_records", 100)["records"]
    first = _json(capsys, out, "--num_records", 5)["records"]
    a = _json(capsys, out, "--num_records", 5, "--seed", 3)["records"]
    b = _json(capsys, out, "--num_records", 5, "--seed", 3)["records"]
    c = _json(capsys, out, "--num_records", 5, "--seed", 4)["records"]
    assert a == b and len(a) == 5
    assert first == every[:5]
    positions = [r["position"] for r in a]
    assert positions != [r["position"] for r in first]
    assert positions != [r["position"] for r in c]
    assert positions == sorted(set(positions))
    assert a == [every[p] for p in positions]  # the record at that place in the split


def test_problem_found_or_named_when_several(outputs, capsys, tmp_path):
    both = tmp_path / "both"
    shutil.copytree(outputs["sw"], both)
    shutil.copytree(outputs["wd"], both, dirs_exist_ok=True)
    status, out, err = _run(capsys, both)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "2 problems (sw, wd): pass --problem" in err
    assert _json(capsys, both, "--problem", "wd", "--num_records", 1)["vocab_type"] == "word"


def _one_line_error(capsys, *argv):
    status, out, err = _run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("python -m pipeline.tools.inspect: error: ")
    return err


def test_errors_are_one_line_and_exit_2(outputs, capsys, tmp_path):
    incomplete = tmp_path / "incomplete"
    shutil.copytree(outputs["sw"], incomplete)
    os.remove(incomplete / "sw.DATAGEN_COMPLETE")
    assert "no complete datagen output" in _one_line_error(capsys, incomplete)
    assert "no complete output of problem sw" in _one_line_error(
        capsys, incomplete, "--problem", "sw")
    assert "no such directory" in _one_line_error(capsys, tmp_path / "nowhere")
    assert "unknown split 'dev'" in _one_line_error(capsys, outputs["sw"], "--split", "dev")
    assert "--num_records" in _one_line_error(capsys, outputs["sw"], "--num_records", -1)
    huge = "100000000000000000000"  # itertools.islice's ValueError traceback before ranges
    assert "--num_records: must be an integer from 0 to 9223372036854775807" in _one_line_error(
        capsys, outputs["sw"], "--num_records", huge)
    assert "--seed: must be an integer from" in _one_line_error(
        capsys, outputs["sw"], "--seed", huge)
    assert "unknown flag --bogus" in _one_line_error(capsys, outputs["sw"], "--bogus")

    no_vocab = tmp_path / "no_vocab"
    shutil.copytree(outputs["sw"], no_vocab)
    os.remove(no_vocab / "vocab.sw.300.subwords.vi")
    assert "vocab.sw.300.subwords.vi" in _one_line_error(capsys, no_vocab)
    no_bpe = tmp_path / "no_bpe"
    shutil.copytree(outputs["bpe"], no_bpe)
    os.remove(no_bpe / "vocab.bpe.400.bpe" / "merges.txt")
    assert "no vocab.json + merges.txt" in _one_line_error(capsys, no_bpe)

    cut = tmp_path / "cut"
    shutil.copytree(outputs["wd"], cut)
    shard = cut / "wd-train-00001-of-00002"
    whole = shard.read_bytes()
    shard.write_bytes(whole[:-3])
    assert "wd-train-00001-of-00002: %d bytes, the summary records %d" % (
        len(whole) - 3, len(whole)) in _one_line_error(capsys, cut, "--num_records", 100)
    shard.write_bytes(whole[:-1] + bytes([whole[-1] ^ 1]))  # same size: the framing finds it
    assert "wd-train-00001-of-00002: record checksum mismatch" in _one_line_error(
        capsys, cut, "--num_records", 100)


def test_command_line(outputs):
    env = dict(os.environ, PYTHONPATH=ROOT)
    cmd = [sys.executable, "-m", "pipeline.tools.inspect"]
    done = subprocess.run(cmd + [str(outputs["sw"]), "--num_records", "2", "--seed", "7"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "2 of 100 records, picked at random (seed 7)" in done.stdout
    failed = subprocess.run(cmd + [str(outputs["sw"]), "--split", "test"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=600)
    assert failed.returncode == 2 and failed.stdout == ""
    assert failed.stderr.count("\n") == 1 and "unknown split 'test'" in failed.stderr


@pytest.mark.parametrize("summary", [b"", b"[1, 2]"], ids=["cut short", "not a summary"])
def test_a_marker_without_a_readable_summary_is_one_line(tmp_path, capsys, summary):
    """A copy cut short (issue 50, item 13): exit 2 and one line naming the summary."""
    (tmp_path / "p.DATAGEN_COMPLETE").write_text("2026-12-01T00:00:00+00:00\n")
    (tmp_path / "p.datagen_summary.json").write_bytes(summary)
    status, out, err = _run(capsys, tmp_path)
    assert status == 2 and out == "" and "Traceback" not in err
    assert err.count("\n") == 1 and "incomplete output: %s" % (
        tmp_path / "p.datagen_summary.json") in err, err
