"""Faults a scheduled run meets, through the public command (`pipeline.datagen.main`).

Each case must end with the exit status the README promises (2: bad input or flags), one
ERROR line naming the file, flag or directory (no traceback), and nothing a reader could take
for output: no `{problem}-train*`/`{problem}-dev*` file and no completion marker. Inputs are
a few hundred lines of the sample corpus; every run is in-process (FnApiRunner).
"""

import ast
import bz2
import glob
import gzip
import importlib.metadata
import os
import re
import struct
import sys

import pytest

from datagen_helpers import (DATA_DIR, DIRECT_MP2, assert_books_balance, shard_files,
                             with_t2t_vocab)
from datagen_helpers import main_errors as _main, one_line_error as _assert_one_line_error
from pipeline import datagen
from repo_paths import REPO_ROOT as ROOT
from transforms.formats.example_proto import Int64FeaturesWriter

SAMPLE = os.path.join(ROOT, "sample_data", "enzh-mlqe-pe")
GPT2_DIR = os.path.join(DATA_DIR, "gpt2")
LINES = 200
JOB_FLAGS = ["--problem", "p", "--num_train_shards", "2"]
FLAGS = JOB_FLAGS + ["--runner", "FnApiRunner"]


def _sample(lang, lines=LINES):
    with open(os.path.join(SAMPLE, "train." + lang), "rb") as f:
        return b"".join(f.readline() for _ in range(lines))


def _write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def _truncated(compress, data):
    """`data` compressed and cut in the middle of the stream, as by an interrupted download."""
    packed = compress(data)
    return packed[:len(packed) // 2]


def _examples(path):
    """{feature: ids} of each record of a TFRecord file, read without TensorFlow (its import
    alone takes seconds): 8-byte length, 4-byte CRC, data, 4-byte CRC."""
    with open(path, "rb") as f:
        data = f.read()
    parse = Int64FeaturesWriter().parse
    at = 0
    while at < len(data):
        (length,) = struct.unpack("<Q", data[at:at + 8])
        yield parse(data[at + 12:at + 12 + length])
        at += 12 + length + 4


def _assert_no_output(out, problem="p"):
    """Nothing a reader's glob or marker check would take for output."""
    out = str(out)
    for split in ("train", "dev"):
        assert not shard_files(out, problem, split)
    assert not os.path.exists(os.path.join(out, problem + ".DATAGEN_COMPLETE"))
    assert not glob.glob(os.path.join(out, "rejects", "*"))


# -- 1. truncated or corrupt compressed input --------------------------------------------

@pytest.mark.parametrize("runner", [["--runner", "FnApiRunner"],
                                    pytest.param(DIRECT_MP2, marks=pytest.mark.slow)],
                         ids=["in_process", "2_worker_processes"])
def test_truncated_gzip_is_an_error_not_a_shorter_file(tmp_path, capsys, runner):
    """The issue's reproduction: the vocabulary is learnt, so the scan runs inside the first
    vocab pass (a word vocabulary: one pass, the same path as subword's first pass);
    --on_misaligned reject used to turn the cut file into 'unmatched' lines. The error is
    found in a worker (a separate process with DIRECT_MP2) and reaches the driver as a fact."""
    src = _write(tmp_path / "t.en.gz", _truncated(gzip.compress, _sample("en")))
    tgt = _write(tmp_path / "t.zh", _sample("zh"))
    out = tmp_path / "out"
    _assert_one_line_error(capsys, ["--train_source", src, "--train_target", tgt,
                                    "--output_dir", out, "--on_misaligned", "reject",
                                    "--vocab_type", "word", "--vocab_size", 100]
                           + JOB_FLAGS + runner,
                           "t.en.gz: compressed stream ends early (truncated or corrupt)")
    _assert_no_output(out)
    assert not glob.glob(os.path.join(out, "vocab.*"))


def test_both_sides_truncated_alike_bz2_is_an_error(tmp_path, capsys):
    """Both sides cut to the same number of lines would align: only the stream's missing
    end shows the loss (the vocab files exist, so the prepare pass runs on its own)."""
    src = _write(tmp_path / "t.en.bz2", _truncated(bz2.compress, _sample("en")))
    tgt = _write(tmp_path / "t.zh.bz2", _truncated(bz2.compress, _sample("zh")))
    out = with_t2t_vocab(tmp_path / "out", problem="p")
    line = _assert_one_line_error(capsys, ["--train_source", src, "--train_target", tgt,
                                           "--output_dir", out] + FLAGS,
                                  "compressed stream ends early")
    assert "t.en.bz2" in line and "t.zh.bz2" in line
    _assert_no_output(out)


def test_plain_text_named_gz_is_an_error(tmp_path, capsys):
    src = _write(tmp_path / "plain.en.gz", _sample("en"))
    tgt = _write(tmp_path / "plain.zh", _sample("zh"))
    out = with_t2t_vocab(tmp_path / "out", problem="p")
    _assert_one_line_error(capsys, ["--train_source", src, "--train_target", tgt,
                                    "--output_dir", out] + FLAGS,
                           "plain.en.gz: not a valid gzip stream")
    _assert_no_output(out)


def test_truncated_gzip_tsv_is_an_error(tmp_path, capsys):
    """Formats converted by the prepare pass (here TSV) read compressed files the same way."""
    rows = b"".join(b"%s\t%s\n" % (a, b) for a, b in zip(_sample("en").splitlines(),
                                                          _sample("zh").splitlines()))
    tsv = _write(tmp_path / "c.tsv.gz", _truncated(gzip.compress, rows))
    out = with_t2t_vocab(tmp_path / "out", problem="p")
    _assert_one_line_error(capsys, ["--train_tsv", tsv, "--source_lang", "en", "--target_lang",
                                    "zh", "--output_dir", out] + FLAGS,
                           "c.tsv.gz: compressed stream ends early")
    _assert_no_output(out)


# -- 5. nothing to write -------------------------------------------------------------------

def test_empty_input_is_an_error(tmp_path, capsys):
    src, tgt = _write(tmp_path / "e.en", b""), _write(tmp_path / "e.zh", b"")
    out = tmp_path / "out"
    argv = ["--train_source", src, "--train_target", tgt, "--output_dir", out,
            "--vocab_type", "word", "--vocab_size", 100] + FLAGS
    _assert_one_line_error(capsys, argv, "train: no pairs to write", "e.en", "--allow_empty")
    _assert_no_output(out)
    assert not glob.glob(os.path.join(out, "vocab.*"))


@pytest.mark.slow  # a whole job
def test_every_pair_rejected_is_an_error_unless_allowed(tmp_path, capsys):
    src = _write(tmp_path / "r.en", _sample("en", 50))
    tgt = _write(tmp_path / "r.zh", _sample("zh", 50))
    out = with_t2t_vocab(tmp_path / "out", problem="p")
    argv = ["--train_source", src, "--train_target", tgt, "--output_dir", out,
            "--max_line_chars", 1] + FLAGS
    _assert_one_line_error(capsys, argv, "train: no pairs to write",
                           "all 50 pairs read were rejected (line_too_long: 50)", "r.en")
    _assert_no_output(out)
    with open(os.path.join(out, "p.datagen_summary.json"), encoding="utf-8") as f:
        assert '"status": "failed"' in f.read()

    code, errors, err = _main(capsys, *(argv + ["--allow_empty"]))
    assert code == 0 and not errors, err
    assert len(shard_files(out, "p", "train")) == 2
    assert os.path.exists(os.path.join(out, "p.DATAGEN_COMPLETE"))


@pytest.mark.slow  # a whole job
def test_allow_empty_writes_empty_shards_and_balanced_books(tmp_path, capsys):
    src, tgt = _write(tmp_path / "e.en", b""), _write(tmp_path / "e.zh", b"")
    out = with_t2t_vocab(tmp_path / "out", problem="p")
    summary = datagen.run(["--train_source", src, "--train_target", tgt, "--output_dir",
                           str(out), "--allow_empty"] + FLAGS)
    assert_books_balance(summary)
    assert summary["splits"]["train"]["pairs_read"] == 0
    assert len(shard_files(out, "p", "train")) == 2


@pytest.mark.slow  # a whole job
def test_learnt_bpe_carries_its_eos_token(tmp_path, capsys):
    """--bpe_eos_token with a learnt vocabulary: the token is the vocabulary's special token
    (it used to be missing, failing the encode pass), and every example ends in its id."""
    src = _write(tmp_path / "a.en", _sample("en", 50))
    tgt = _write(tmp_path / "a.zh", _sample("zh", 50))
    out = tmp_path / "out"
    code, errors, err = _main(capsys, "--train_source", src, "--train_target", tgt,
                              "--output_dir", out, "--vocab_type", "byte_bpe", "--vocab_size",
                              260, "--bpe_eos_token", "</s>", *FLAGS)
    assert code == 0 and not errors, err
    with open(os.path.join(out, "vocab.p.260.bpe.en", "vocab.json"), encoding="utf-8") as f:
        assert f.read().startswith('{"<pad>":0,"</s>":1,')  # <pad> first: issue 50, item 2
    examples = [e for path in shard_files(out, "p", "train") for e in _examples(path)]
    assert len(examples) == 50
    assert all(e["inputs"][-1] == 1 and e["targets"][-1] == 1 for e in examples)


# -- 6. flags checked before anything runs or is deleted ---------------------------------

@pytest.mark.parametrize("flags,names", [
    (["--file_byte_budget", 0], ["--file_byte_budget"]),
    (["--file_byte_budget", -100], ["--file_byte_budget"]),
    (["--max_line_chars", -1], ["--max_line_chars"]),
    (["--vocab_type", "byte_bpe", "--bpe_vocab", GPT2_DIR, "--bpe_eos_token", "</s>"],
     ["--bpe_eos_token", "'</s>'", GPT2_DIR]),
    (["--vocab_type", "word", "--word_vocab", "missing.en"], ["--word_vocab", "missing.en"]),
    (["--vocab_type", "byte_bpe", "--bpe_vocab", "{tmp}"], ["--bpe_vocab", "vocab.json"]),
    (["--word_vocab", "v.en"], ["--word_vocab", "--vocab_type word"]),
    (["--vocab_type", "word", "--bpe_min_frequency", 5], ["--bpe_min_frequency", "byte_bpe"]),
    (["--vocab_sise", 100], ["--vocab_sise", "did you mean --vocab_size?"]),
    (["--vocab_size", "many"], ["--vocab_size", "'many'"]),
    (["stray"], ["'stray'"]),
], ids=["budget0", "budget-neg", "max_line_chars", "bpe_eos", "word_vocab_missing",
        "bpe_vocab_empty_dir", "word_vocab_with_subword", "bpe_flag_with_word", "typo",
        "bad_int", "positional"])
def test_bad_flags_stop_before_anything_runs_or_is_deleted(tmp_path, capsys, flags, names):
    """With --overwrite over a complete output: the old marker must survive a refused run."""
    src = _write(tmp_path / "a.en", _sample("en", 20))
    tgt = _write(tmp_path / "a.zh", _sample("zh", 20))
    out = tmp_path / "out"
    out.mkdir()
    marker = out / "p.DATAGEN_COMPLETE"
    marker.write_text("earlier run\n")
    flags = [str(f).replace("{tmp}", str(tmp_path)) for f in flags]
    _assert_one_line_error(capsys, ["--train_source", src, "--train_target", tgt, "--output_dir",
                                    out, "--overwrite"] + flags + FLAGS, *names)
    assert sorted(os.listdir(out)) == ["p.DATAGEN_COMPLETE"]
    assert marker.read_text() == "earlier run\n"


@pytest.mark.slow  # a whole job
def test_beam_pipeline_options_still_pass_through(tmp_path, capsys):
    """Only flags Beam does not know are refused: its own options (here ones the in-process
    runner ignores) are accepted."""
    src = _write(tmp_path / "a.en", _sample("en", 20))
    tgt = _write(tmp_path / "a.zh", _sample("zh", 20))
    out = with_t2t_vocab(tmp_path / "out", problem="p")
    code, errors, err = _main(capsys, "--train_source", src, "--train_target", tgt,
                              "--output_dir", out, "--direct_num_workers", 1,
                              "--experiments", "x", "--job_name=nightly", *FLAGS)
    assert code == 0 and not errors, err


# -- 7. one line instead of a traceback ----------------------------------------------------

def test_directory_as_source_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "corpus").mkdir()
    tgt = _write(tmp_path / "a.zh", _sample("zh", 20))
    out = tmp_path / "out"
    _assert_one_line_error(capsys, ["--train_source", tmp_path / "corpus", "--train_target", tgt,
                                    "--output_dir", out] + FLAGS,
                           str(tmp_path / "corpus"), "is a directory")
    assert not os.path.exists(out)


@pytest.mark.parametrize("where", ["under_a_file", "proc"])
def test_unwritable_output_dir_is_a_one_line_error(tmp_path, capsys, where):
    if where == "proc" and not os.path.isdir("/proc"):
        pytest.skip("no /proc here")
    src = _write(tmp_path / "a.en", _sample("en", 20))
    tgt = _write(tmp_path / "a.zh", _sample("zh", 20))
    out = (str(tmp_path / "plain_file" / "out") if where == "under_a_file"
           else "/proc/t2t-datagen-test-%d" % os.getpid())
    _write(tmp_path / "plain_file", b"not a directory\n")
    _assert_one_line_error(capsys, ["--train_source", src, "--train_target", tgt,
                                    "--output_dir", out, "--vocab_size", 100] + FLAGS,
                           "--output_dir %s: cannot write there" % out)
    assert not os.path.exists(out)


def test_gs_path_without_the_gcp_extra_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    """As if apache-beam[gcp] were not installed: Beam then has no file system for gs://."""
    from apache_beam.io.filesystem import FileSystem
    without_gcs = [c for c in FileSystem.get_all_subclasses() if c.scheme() != "gs"]
    monkeypatch.setattr(FileSystem, "get_all_subclasses", staticmethod(lambda: without_gcs))
    tgt = _write(tmp_path / "a.zh", _sample("zh", 20))
    out = tmp_path / "out"
    _assert_one_line_error(capsys, ["--train_source", "gs://bucket/corpus/train.en",
                                    "--train_target", tgt, "--output_dir", out] + FLAGS,
                           "--train_source gs://bucket/corpus/train.en", "apache-beam[gcp]")
    assert not os.path.exists(out)


# -- 10. every runtime import is an install requirement ------------------------------------

def _normalized(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _required_distributions():
    """Names in setup.py's REQUIRED (install_requires), read without running setup.py."""
    with open(os.path.join(ROOT, "setup.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "REQUIRED"
                                                for t in node.targets):
            return {_normalized(re.match(r"[A-Za-z0-9._-]+", r).group(0))
                    for r in ast.literal_eval(node.value)}
    raise AssertionError("setup.py has no REQUIRED list")


def _imports(package):
    """(module, file) of every absolute import in a package, including ones inside functions
    (a lazy import is still a runtime import)."""
    for path in sorted(glob.glob(os.path.join(ROOT, package, "**", "*.py"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield alias.name, path
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                yield node.module, path


def _distributions_of(module, by_top):
    """Installed distributions providing `module`. A namespace package (`google`) is shared
    by many: the one holding the module's own files counts."""
    candidates = by_top.get(module.split(".")[0], [])
    if len(candidates) <= 1 or "." not in module:
        return {_normalized(c) for c in candidates}
    prefix = module.replace(".", "/")
    return {_normalized(c) for c in candidates
            if any(str(f).replace("\\", "/").startswith((prefix + "/", prefix + ".py"))
                   for f in importlib.metadata.distribution(c).files or ())}


def test_every_runtime_import_is_in_install_requires():
    """What `pip install .` (and --setup_file workers) get must cover every import of the
    two packages; `regex` once was only in the test extra."""
    required = _required_distributions()
    assert "regex" in required
    by_top = importlib.metadata.packages_distributions()
    missing = []
    for package in ("pipeline", "transforms"):
        for module, path in _imports(package):
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or top in ("pipeline", "transforms"):
                continue
            providers = _distributions_of(module, by_top)
            if not providers & required:
                missing.append("%s (%s): provided by %s" % (
                    module, os.path.relpath(path, ROOT), sorted(providers) or "nothing installed"))
    assert not missing, "imports not in setup.py REQUIRED: " + "; ".join(sorted(set(missing)))
