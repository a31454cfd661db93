"""What the Flink and Spark cluster tests share: the sample job's flags per vocabulary kind,
its DirectRunner baseline, and running the job as a command while watching its log; and the
progress tests (DirectRunner, Dask): the lines a pass says where it stands in, and stopping a
job's workers until it has said so."""

import os
import re
import signal
import subprocess
import sys
import threading
import time

from datagen_helpers import assert_books_balance, output_bytes
from pipeline import datagen
from repo_paths import REPO_ROOT as REPO, SAMPLE_DATA

SAMPLE = os.path.join(SAMPLE_DATA, "enzh-mlqe-pe")
INPUTS = ["--train_source", os.path.join(SAMPLE, "train.en"),
          "--train_target", os.path.join(SAMPLE, "train.zh"),
          "--dev_source", os.path.join(SAMPLE, "dev.en"),
          "--dev_target", os.path.join(SAMPLE, "dev.zh")]
# The bundled sample with each vocabulary kind; 40 encode chunks, so a pass's tasks are
# still running when a test kills something.
KINDS = {
    "subword": [],
    "byte_bpe": ["--vocab_type", "byte_bpe", "--vocab_size", "2000"],
    "word": ["--vocab_type", "word", "--vocab_size", "5000"],
}
COMMON = ["--problem", "p", "--encode_chunk_lines", "200"]

_baselines = {}


def baseline(kind, tmp_path_factory):
    """(output bytes, summary) of the sample job of `kind` on DirectRunner (in process)."""
    if kind not in _baselines:
        out = tmp_path_factory.mktemp("direct-" + kind) / "out"
        summary = datagen.run(INPUTS + COMMON + KINDS[kind] + [
            "--output_dir", str(out), "--runner", "DirectRunner"])
        _baselines[kind] = (output_bytes(out), summary)
    return _baselines[kind]


def books(summary):
    """Pairs read, written and rejected per split and dataset: the summary's books."""
    return {split: (s["pairs_read"], s["pairs_written"], s["pairs_rejected"],
                    sorted((name, d["pairs_read"], d["pairs_written"], d["pairs_rejected"])
                           for name, d in s["datasets"].items()))
            for split, s in summary["splits"].items()}


class Job:
    """`python -m pipeline.datagen` in a subprocess; `wait_for_line(text)` returns once its
    log has a line holding `text`."""

    def __init__(self, argv, env=None):
        env = dict(os.environ, PYTHONPATH=REPO, **(env or {}))
        self.proc = subprocess.Popen([sys.executable, "-m", "pipeline.datagen"] + argv,
                                     cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.lines = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for_line(self, text, seconds=300):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if any(text in line for line in self.lines):
                return
            if self.proc.poll() is not None:
                raise AssertionError("job ended (%s) before %r:\n%s" % (
                    self.proc.returncode, text, "\n".join(self.lines[-20:])))
            time.sleep(0.05)
        raise TimeoutError(text)

    def finish(self, seconds=600):
        self.proc.wait(seconds)
        self._reader.join(5)
        return self.proc.returncode

    def errors(self):
        return [line for line in self.lines if " ERROR " in line]


def run_like_direct_runner(kind, runner, out, tmp_path_factory):
    """Runs the sample job of `kind` with the `runner` flags into `out` and checks it against
    DirectRunner's: the same bytes, the same books (balanced), no work left. The summary."""
    expected, direct = baseline(kind, tmp_path_factory)
    summary = datagen.run(INPUTS + COMMON + KINDS[kind] + runner + ["--output_dir", str(out)])
    assert summary["runner"] == runner[runner.index("--runner") + 1]
    assert output_bytes(out) == expected
    assert books(summary) == books(direct)
    assert_books_balance(summary)
    assert work_leftovers(out) == []
    return summary


def kept_for_resume(out, problem="p"):
    """The files of `out`'s work directory, relative to it, when each is what an interrupted
    run keeps for a rerun (README, Resume): the encode chunks' manifests and fragments, the
    merged shards and their manifests, at least one chunk manifest among them; None when the
    directory holds anything else."""
    work = os.path.join(str(out), ".datagen-work")
    kept = [os.path.relpath(os.path.join(base, name), work)
            for base, _, names in os.walk(work) for name in names]
    pattern = (r"%s/encode-[0-9a-f]{16}/(chunks/.*\.json|fragments/.*\.frag|shards/%s-[^/]+"
               r"|merged/%s-[^/]+\.json)$" % ((re.escape(problem),) * 3))
    if kept and all(re.match(pattern, path) for path in kept) and any(
            "/chunks/" in path for path in kept):
        return kept
    return None


def work_leftovers(out, interrupted=False):
    """Files a finished or failed run must not leave: its work directory, Beam temp files.
    An `interrupted` run may leave its work directory when it holds only what a rerun
    resumes from (`kept_for_resume`)."""
    names = os.listdir(out)
    return [n for n in names if (n == ".datagen-work" and not (
        interrupted and kept_for_resume(out))) or n.startswith("beam-temp")]


# The vocab pass's stages in the order they come (the learner's `VocabPass.progress`).
VOCAB_LINE = re.compile(r"^\d\d:\d\d:\d\d pass 1: (sample|index|round (\d+)): "
                        r"(nothing done yet|[\d,]+ of [\d,?]+ [a-z ]+)[;,]")
ENCODE_LINE = re.compile(r"^\d\d:\d\d:\d\d pass 2: (encoded (all [\d,]+ pairs; (shuffling "
                         r"fragments into \d+ shards for .*|\d+ of \d+ shards "
                         r"written.*)|[1-9][\d,]* of [\d,]+ pairs.*then \d+ shards)|"
                         r"encode starting: [\d,]+ pairs, [\d,]+ chunks?, none done, "
                         r"then \d+ shards), [^,]* so far$")


def stopped_until_said_twice(job, processes, prefix, seconds=300):
    """Stops `processes` (SIGSTOP) until the job has logged two more lines starting with
    `prefix` (after the timestamp), then continues them."""
    for proc in processes:
        proc.send_signal(signal.SIGSTOP)
    try:
        before = len([line for line in job.lines if line[9:].startswith(prefix)])
        deadline = time.time() + seconds
        while len([line for line in job.lines if line[9:].startswith(prefix)]) < before + 2:
            assert job.proc.poll() is None, "\n".join(job.lines[-20:])
            assert time.time() < deadline, "no progress line:\n" + "\n".join(job.lines[-20:])
            time.sleep(0.05)
    finally:
        for proc in processes:
            proc.send_signal(signal.SIGCONT)


def stage_rank(match):
    """Where a VOCAB_LINE's stage comes in the pass: sampling, indexing, then the rounds."""
    stage, round_no = match.group(1), match.group(2)
    return {"sample": 0, "index": 1}.get(stage, 1 + int(round_no or 0))
