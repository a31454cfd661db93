"""Helpers for tests that run the datagen job and read what it wrote."""

import glob
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np

from pipeline import datagen
from repo_paths import DATA_DIR, REPO_ROOT

MLQE = os.path.join(DATA_DIR, "enzh-mlqe-pe")  # the bundled en-zh corpus (train, dev)
ENVI = os.path.join(DATA_DIR, "envi-nmt-testdata")  # tensorflow/nmt's en-vi test data


def envi(kind, lang):
    """A file of tensorflow/nmt's en-vi test data: `kind` "tst2013" (100 lines of text) or
    "vocab" (its word vocabulary), `lang` "en" or "vi"."""
    return os.path.join(ENVI, "iwslt15.%s.100.%s" % (kind, lang))

# How long a wait for an event may take before the test calls it a hang: a guard against a
# test that would otherwise never end, never a measure of speed (a busy machine is slow).
HANG_SECONDS = 600

FNAPI = ["--runner", "FnApiRunner"]
DIRECT_1 = ["--runner", "DirectRunner", "--direct_num_workers", "1"]
# Worker processes even for the tests' small inputs (--in_process_below_mb 0).
DIRECT_MP2 = ["--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
              "--direct_num_workers", "2", "--in_process_below_mb", "0"]


def run_datagen(output_dir, source, target, *extra, runner=FNAPI):
    """Runs the job in-process; source/target None for runs with only --train_tsv/--train_tmx."""
    argv = ["--output_dir", str(output_dir)] + list(runner) + [str(a) for a in extra]
    if source is not None:
        argv += ["--train_source", str(source), "--train_target", str(target)]
    return datagen.run(argv)


def read_examples(path):
    """[(inputs, targets)] of a TFRecord file, read with TensorFlow's own reader."""
    import tensorflow as tf
    out = []
    for raw in tf.data.TFRecordDataset(path).as_numpy_iterator():
        example = tf.train.Example.FromString(raw)
        feature = example.features.feature
        out.append((tuple(feature["inputs"].int64_list.value),
                    tuple(feature["targets"].int64_list.value)))
    return out


def shard_files(output_dir, problem, split):
    return sorted(glob.glob(os.path.join(str(output_dir), "%s-%s-*" % (problem, split))))


def output_files(output_dir):
    """{relative path: bytes} of every file under `output_dir`."""
    files = {}
    for base, _, names in os.walk(str(output_dir)):
        for name in names:
            with open(os.path.join(base, name), "rb") as f:
                files[os.path.relpath(os.path.join(base, name), str(output_dir))] = f.read()
    return files


def output_bytes(output_dir):
    """{relative path: bytes} of every output file a user sees: not the summary (it holds
    timings) nor hidden files (a vocabulary's fingerprint sidecar names the inputs' paths and
    mtimes, so it differs between runs over copies of the same data)."""
    return {rel: data for rel, data in sorted(output_files(output_dir).items())
            if not rel.endswith((".datagen_summary.json", ".DATAGEN_COMPLETE"))
            and not any(part.startswith(".") for part in rel.split(os.sep))}


def t2t_pairs(source, target, source_encoder, target_encoder):
    """What T2T's text2text_generate_encoded yields for line-aligned files (empty pairs dropped)."""
    pairs = []
    with open(source, encoding="utf-8") as fs, open(target, encoding="utf-8") as ft:
        for a, b in zip(fs, ft):
            a, b = a.strip(), b.strip()
            if a and b:
                pairs.append((tuple(source_encoder.encode(a) + [1]),
                              tuple(target_encoder.encode(b) + [1])))
    return pairs


def with_t2t_vocab(output_dir, problem="p", vocab_size=8192):
    """An output dir holding real T2T en/zh vocab files, so the job skips vocab learning."""
    import shutil
    os.makedirs(output_dir, exist_ok=True)
    for lang in ("en", "zh"):
        shutil.copy(os.path.join(DATA_DIR, "t2t_vocab",
                                 "vocab.translate_enzh_wmt8k.8192.subwords." + lang),
                    os.path.join(str(output_dir), "vocab.%s.%d.subwords.%s" % (problem, vocab_size, lang)))
    return output_dir


def assert_books_balance(summary):
    """pairs read = written + rejected, for every split and every dataset."""
    for split in summary["splits"].values():
        assert split["pairs_read"] == split["pairs_written"] + split["pairs_rejected"]
        for d in split["datasets"].values():
            assert d["pairs_read"] == d["pairs_written"] + d["pairs_rejected"], d


def main_errors(capsys, *argv):
    """Runs the job in-process: (exit status, the run's ERROR lines, its whole stderr)."""
    from pipeline import datagen
    code = datagen.main([str(a) for a in argv])
    err = capsys.readouterr().err
    return code, [line for line in err.splitlines() if " ERROR " in line], err


def one_line_error(capsys, argv, *names):
    """Runs the job and checks: exit 2, exactly one ERROR line naming every one of `names`,
    no traceback; returns that line."""
    code, errors, err = main_errors(capsys, *argv)
    assert code == 2, err
    assert len(errors) == 1, err
    for name in names:
        assert name in errors[0], errors[0]
    assert "Traceback" not in err
    return errors[0]


def assert_no_output(out, problem="p"):
    """Nothing a reader's glob or marker check would take for output."""
    out = str(out)
    for split in ("train", "dev"):
        assert not shard_files(out, problem, split)
    assert not os.path.exists(os.path.join(out, problem + ".DATAGEN_COMPLETE"))


def small_corpus(directory, lines=400):
    """[source, target]: the first `lines` pairs of the bundled mlqe-pe train files, copied
    into `directory` (a pathlib.Path) as train.en and train.zh."""
    files = []
    for lang in ("en", "zh"):
        with open(os.path.join(MLQE, "train." + lang), encoding="utf-8") as f:
            head = [next(f) for _ in range(lines)]
        path = directory / ("train." + lang)
        path.write_text("".join(head), encoding="utf-8")
        files.append(str(path))
    return files


def assert_same_batches(expected, got):
    """Two readers' batches are the same: as many (more than one), each with the same
    features and equal arrays."""
    got = list(got)
    assert len(got) == len(expected) > 1
    for a, b in zip(expected, got):
        assert sorted(a) == sorted(b)
        for key in a:
            assert np.array_equal(a[key], b[key]), key


def start_job(argv, **popen):
    """`python -m pipeline.datagen ARGV` in a session of its own (a signal or a kill -9 then
    reaches its whole process group, as a terminal's or a scheduler's does), its stderr a
    text pipe for `wait_for_line`."""
    popen.setdefault("stdout", subprocess.DEVNULL)
    return subprocess.Popen([sys.executable, "-m", "pipeline.datagen"] + [str(a) for a in argv],
                            cwd=REPO_ROOT, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **popen)


def pass_started(number=1):
    """The pattern of the log line that starts pass `number` ("pass 1 of ~3: ...")."""
    return r" pass %d( of ~?\d+)?: " % number


def wait_for_line(proc, pattern):
    """Reads `proc`'s stderr until a line matches `pattern` (a regular expression); returns
    the lines read. The event a test acts on: fails, naming it, if the process ends first."""
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if re.search(pattern, line):
            return lines
    raise AssertionError("the job ended (status %s) before a line matched %r: %s" % (
        proc.wait(), pattern, "".join(lines[-20:])))


def wait_for(condition, what, proc=None, seconds=HANG_SECONDS):
    """Polls `condition()` until it is true (returns its value). Fails naming `what` if `proc`
    ends first or after `seconds`, a guard against a hang and not a time window."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError("the process ended (status %s) before %s" % (proc.returncode,
                                                                           what))
        if time.monotonic() > deadline:
            raise AssertionError("%s: not after %d s, taken for a hang" % (what, seconds))
        time.sleep(0.02)


def end_group(proc):
    """SIGKILLs `proc`'s process group if it still runs (a test's `finally`), and reaps it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # the group ended in between
            pass
    proc.wait()
