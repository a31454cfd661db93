"""TrainSentencePiece: the byte-budget sample's lines, in order, trained on one worker; the
model is SentencePiece's own for the same sentences and the options the model records."""

import os
import pickle
import shutil
import tempfile

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from beam_unit import test_pipeline
from repo_paths import DATA_DIR
from transforms.codecs import sentencepiece_model as sm
from transforms.contracts.elements import SampleFile
from transforms.formats.text_lines import iter_raw_lines, sample_lines_for_vocab
from transforms.vocab.sentencepiece_learning import TrainSentencePiece



def _copy(tmp_path, name):
    return str(shutil.copy(os.path.join(DATA_DIR, name), tmp_path / os.path.basename(name)))


def _sample(path, budget):
    with open(path, "rb") as f:
        return list(sample_lines_for_vocab(iter_raw_lines(f), os.path.getsize(path), budget,
                                           path))


def _keep(result, directory):
    with open(os.path.join(directory, result["vocab"] + ".pickle"), "wb") as f:
        pickle.dump(result, f)


def _run(files, options, budget=1e8):
    """{vocab name: result} of the stage over `files` ({name: [path, ...]})."""
    items = [SampleFile(name, path, os.path.getsize(path)) for name in sorted(files)
             for path in files[name]]
    directory = tempfile.mkdtemp()
    with test_pipeline() as p:
        _ = (p | beam.Create(items)
             | TrainSentencePiece(files, options, budget)
             | beam.Map(_keep, directory))
    results = {}
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as f:
            results[name[:-len(".pickle")]] = pickle.load(f)
    shutil.rmtree(directory)
    return results


def _retrained(lines, model):
    """SentencePiece's trainer on `lines` with only the options `model` records."""
    return sm.train(lines, sm.recorded_options(model))


def _summary(result):
    """(vocab, error, sampled lines, the model's vocab size) of one result."""
    [stats] = result["files"]
    return (result["vocab"], result["error"], stats["sampled_lines"],
            sm.recorded_options(result["model"])["vocab_size"])


def test_one_result_per_vocabulary_with_its_sample(tmp_path):
    """The stage's output as a PCollection: one result per vocabulary, its file's whole sample
    (a file under the budget) and a model of the requested size."""
    en = tmp_path / "small.en"
    with open(os.path.join(DATA_DIR, "enzh-mlqe-pe", "train.en"), encoding="utf-8") as f:
        en.write_text("".join(next(f) for _ in range(300)), encoding="utf-8")
    options = {"source": sm.trainer_options("unigram", 300, 1.0)}
    with test_pipeline() as p:
        results = (p | beam.Create([SampleFile("source", str(en), os.path.getsize(en))])
                   | TrainSentencePiece({"source": [str(en)]}, options, 1e8))
        assert_that(results | beam.Map(_summary), equal_to([("source", None, 300, 300)]))


@pytest.mark.slow
@pytest.mark.parametrize("model_type", sm.MODEL_TYPES)
def test_per_side_models_are_the_trainers_own(tmp_path, model_type):
    en = _copy(tmp_path, "enzh-mlqe-pe/train.en")
    zh = _copy(tmp_path, "enzh-mlqe-pe/train.zh")
    options = {"source": sm.trainer_options(model_type, 2000, 0.9995),
               "target": sm.trainer_options(model_type, 4000, 0.9995)}
    results = _run({"source": [en], "target": [zh]}, options)
    for name, path in (("source", en), ("target", zh)):
        r = results[name]
        assert r["error"] is None
        lines = _sample(path, 1e8)
        assert _retrained(lines, r["model"]) == r["model"]
        assert sm.recorded_options(r["model"])["num_threads"] == sm.NUM_THREADS
        [stats] = r["files"]
        assert (stats["sampled_lines"], stats["sampled_chars"], stats["sampled_bytes"]) == (
            len(lines), sum(map(len, lines)), sum(len(x.encode("utf-8")) for x in lines))


@pytest.mark.slow
def test_shared_model_reads_source_then_target(tmp_path):
    de = _copy(tmp_path, "ende-opennmt/train.de")
    en = _copy(tmp_path, "ende-opennmt/train.en")
    options = {"shared": sm.trainer_options("bpe", 3000, 1.0)}
    # the files in the order given, not sorted
    r = _run({"shared": [en, de]}, options)["shared"]
    assert r["error"] is None
    lines = _sample(en, 1e8) + _sample(de, 1e8)
    assert _retrained(lines, r["model"]) == r["model"]
    assert [s["path"] for s in r["files"]] == sorted([en, de])


@pytest.mark.slow
def test_sample_larger_than_the_budget(tmp_path):
    zh = _copy(tmp_path, "enzh-mlqe-pe/train.zh")
    budget = 40000  # characters; the file holds about 110k
    options = {"target": sm.trainer_options("unigram", 2500, 0.9995)}
    first = _run({"target": [zh]}, options, budget)["target"]
    lines = _sample(zh, budget)
    [stats] = first["files"]
    stride = int(os.path.getsize(zh) / budget / 2)  # T2T's: lines skipped between samples
    with open(zh, encoding="utf-8") as f:
        assert lines == [line.strip() for line in f][stride::stride + 1]
    assert stride == 4 and stats["sampled_lines"] == len(lines) == 600
    assert stats["sampled_chars"] == sum(map(len, lines))
    assert stats["sampled_bytes"] == sum(len(x.encode("utf-8")) for x in lines)
    assert first["model"] == _retrained(lines, first["model"])


def test_errors_are_reported_not_raised(tmp_path):
    empty = tmp_path / "empty.en"
    empty.write_bytes(b"")
    few = tmp_path / "few.en"
    few.write_text("a few words\nand a line\n", encoding="utf-8")
    bad = tmp_path / "bad.en"
    bad.write_bytes(b"ok\n\xff\xfe\n")
    options = {name: sm.trainer_options("bpe", 5000, 1.0)
               for name in ("empty", "few", "bad", "unused")}
    results = _run({"empty": [str(empty)], "few": [str(few)], "bad": [str(bad)]}, options)
    assert "nothing was sampled" in results["empty"]["error"]
    assert "nothing was sampled" in results["unused"]["error"]
    assert "Vocabulary size too high" in results["few"]["error"]
    assert "UTF-8" in results["bad"]["error"] and results["bad"]["model"] is None
    [bad_stats] = results["bad"]["files"]
    assert bad_stats["sampled_lines"] == 1 and "UTF-8" in bad_stats["error"]


def test_a_read_error_in_the_first_file_stops_a_shared_sample(tmp_path):
    """The trainer stops at the error: the shared vocabulary's second file is not read."""
    bad = tmp_path / "bad.en"
    bad.write_bytes(b"ok\n\xff\xfe\n")
    good = tmp_path / "good.de"
    good.write_text("ein paar Worte\n" * 50, encoding="utf-8")
    options = {"shared": sm.trainer_options("bpe", 50, 1.0)}
    r = _run({"shared": [str(bad), str(good)]}, options)["shared"]
    assert "UTF-8" in r["error"] and str(bad) in r["error"] and r["model"] is None
    assert [(s["path"], s["sampled_lines"]) for s in r["files"]] == sorted(
        [(str(bad), 1), (str(good), 0)])
