"""Issue 49's temporary-disk check: the vocab learner's work files are gone before the encode
pass starts. The subword token indexes alone were 1.5x the output at the bench's size (176 MB
for 116 MB), and they stayed in the work directory through the encode pass and its merge, the
temporary disk's peak (`benchmarks/bench_scale.py` breaks it down by directory): 1.30x the
output at 10x. Observed on events, the end of each vocab pass and the start of the encode
step, on a real job: never on a timer.
"""

import os

import pytest

from datagen_helpers import FNAPI, small_corpus
from pipeline import datagen
from pipeline.driver.encode import EncodeStep
from pipeline.driver.vocab_passes import VocabPassDriver

pytestmark = pytest.mark.slow

WORK = ".datagen-work"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return small_corpus(tmp_path_factory.mktemp("in"), 400)


def _work_files(out):
    """{path under the run's work directory ({problem}/{run id} left out): bytes}."""
    found = {}
    root = os.path.join(str(out), WORK)
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            parts = os.path.relpath(path, root).split(os.sep)
            if not parts[1].startswith("encode-"):  # the resume directory: the encode pass's
                found["/".join(parts[2:])] = os.path.getsize(path)
    return found


@pytest.mark.parametrize("kind", ["subword", "word"])
def test_vocab_work_files_are_gone_before_the_encode_pass(corpus, tmp_path, monkeypatch, kind):
    out = tmp_path / "out"
    after_vocab, at_encode = [], []
    read, run = VocabPassDriver.read, EncodeStep.run

    def read_pass(self, vocab_pass, seconds):  # a vocab pass has ended: its files are there
        after_vocab.append(_work_files(out))
        return read(self, vocab_pass, seconds)

    def encode(self, *args, **kwargs):
        at_encode.append(_work_files(out))
        return run(self, *args, **kwargs)
    monkeypatch.setattr(VocabPassDriver, "read", read_pass)
    monkeypatch.setattr(EncodeStep, "run", encode)
    argv = ["--train_source", corpus[0], "--train_target", corpus[1], "--output_dir",
            str(out), "--problem", "p", "--vocab_size", "1000", "--vocab_type", kind] + FNAPI
    assert datagen.main(argv) == 0
    assert after_vocab and len(at_encode) == 1
    written = set().union(*after_vocab)
    # what the vocab passes wrote: their results (and the subword token indexes)
    vocab_files = {p for p in written if "vocab_pass_" in p or ".npz" in p}
    assert any("vocab_pass_" in p for p in vocab_files), sorted(written)
    if kind == "subword":
        assert any(p.endswith(".npz") for p in vocab_files), sorted(written)
    left = set(at_encode[0]) & vocab_files
    assert not left, sorted(left)
    # nothing of the learner's directory either (its progress marks)
    assert not [p for p in at_encode[0] if p.startswith("vocab/")], sorted(at_encode[0])
