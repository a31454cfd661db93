"""Behaviour of the datagen job as a user runs it: deterministic output on any number of
workers, seeds, reruns, compressed input, and bad input that is reported, never lost."""

import collections
import gzip
import json
import os
import shutil

import pytest

from pipeline import datagen
from datagen_helpers import (DATA_DIR, DIRECT_1, output_bytes, read_examples,
                                   run_datagen, shard_files)

# Every test runs the whole job (or its first passes): the full suite only.
pytestmark = pytest.mark.slow

FLAGS = ["--problem", "p", "--vocab_size", 400, "--num_train_shards", 4, "--seed", 3,
         "--dev_source", None, "--dev_target", None]


def _write_lines(path, lines, opener=open):
    with opener(path, "wt", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    return str(path)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """500 real en-zh pairs (train) and 60 (dev), plain files."""
    d = tmp_path_factory.mktemp("corpus")
    files = {}
    for split, name, n in (("train", "train", 500), ("dev", "dev", 60)):
        for lang in ("en", "zh"):
            with open(os.path.join(DATA_DIR, "enzh-mlqe-pe", "%s.%s" % (name, lang)), encoding="utf-8") as f:
                lines = [next(f).rstrip("\n") for _ in range(n)]
            files[(split, lang)] = _write_lines(d / ("%s.%s" % (split, lang)), lines)
    return files


def _flags(corpus, seed=3):
    flags = list(FLAGS)
    flags[flags.index("--seed") + 1] = seed
    flags[flags.index("--dev_source") + 1] = corpus[("dev", "en")]
    flags[flags.index("--dev_target") + 1] = corpus[("dev", "zh")]
    return flags


@pytest.fixture(scope="module")
def baseline(tmp_path_factory, corpus):
    out = tmp_path_factory.mktemp("baseline") / "out"
    summary = run_datagen(out, corpus[("train", "en")], corpus[("train", "zh")], *_flags(corpus),
                          runner=DIRECT_1)
    return out, summary


def test_outputs_and_summary(baseline):
    out, summary = baseline
    names = sorted(os.listdir(out))
    assert names == [".vocab.p.400.subwords.en.fingerprint.json",
                     ".vocab.p.400.subwords.zh.fingerprint.json", "README.md",
                     "p-dev-00000-of-00001"] + [
        "p-train-%05d-of-00004" % i for i in range(4)] + [
        "p.DATAGEN_COMPLETE", "p.datagen_summary.json", "p.lengths.html"] + [
        "vocab.p.400.subwords.en", "vocab.p.400.subwords.zh"]
    with open(out / "p.datagen_summary.json") as f:
        on_disk = json.load(f)
    assert on_disk["status"] == "complete"
    train = on_disk["splits"]["train"]
    assert train["pairs_read"] == 500 and train["pairs_written"] == 500
    assert sum(s["records"] for s in train["shards"]) == 500
    assert on_disk["splits"]["dev"]["pairs_written"] == 60
    assert on_disk["vocab"]["source"]["sampled_lines"] == 500
    assert on_disk["vocab"]["source"]["distinct_tokens"] > 100
    assert set(on_disk["stages"]) == {"prepare", "vocab", "encode", "finish"}
    assert on_disk["lengths"]["splits"]["train"]["pairs"] == 500
    assert on_disk["splits"]["train"]["datasets"]["train.en"]["pairs_read"] == 500
    assert on_disk["flags"]["seed"] == 3
    # every record ends in EOS; shard 0 holds the lowest quarter of the shuffle keys, in key
    # order (not input order)
    from transforms.codecs.subword import SubwordEncoder
    from transforms.pairs.pair_encoding import shard_of, shuffle_key
    examples = read_examples(shard_files(out, "p", "train")[0])
    assert examples and all(i[-1] == 1 and t[-1] == 1 for i, t in examples)
    en = SubwordEncoder.from_file(str(out / "vocab.p.400.subwords.en"))
    with open(os.path.join(DATA_DIR, "enzh-mlqe-pe", "train.en"), encoding="utf-8") as f:
        lines = [next(f).strip() for _ in range(500)]
    keys = sorted((shuffle_key(3, "train", 0, n), n) for n in range(1, 501))
    first_shard = [n for key, n in keys if shard_of(key, 4) == 0]
    assert [i for i, _ in examples] == [tuple(en.encode(lines[n - 1]) + [1]) for n in first_shard]
    assert first_shard != sorted(first_shard)
    assert not os.path.exists(out / ".datagen-work")


def _reuse_vocab(src_out, dst_out):
    os.makedirs(dst_out)
    for name in os.listdir(src_out):
        if name.startswith("vocab."):
            shutil.copy(src_out / name, dst_out / name)


def test_seed_changes_order_not_content(tmp_path, baseline, corpus):
    out, _ = baseline
    other = tmp_path / "seed4"
    _reuse_vocab(out, other)
    summary = run_datagen(other, corpus[("train", "en")], corpus[("train", "zh")],
                          *_flags(corpus, seed=4), runner=DIRECT_1)
    assert summary["vocab"]["source"]["reused"] is True

    def records(d):
        return [read_examples(p) for p in shard_files(d, "p", "train")]

    a, b = records(out), records(other)
    assert a != b
    assert collections.Counter(sum(a, [])) == collections.Counter(sum(b, []))


def test_rerun_is_a_noop_and_overwrite_redoes(tmp_path, corpus):
    out = tmp_path / "out"
    args = (out, corpus[("train", "en")], corpus[("train", "zh")], *_flags(corpus))
    first = run_datagen(*args)
    before = output_bytes(out)
    mtimes = {n: os.path.getmtime(out / n) for n in os.listdir(out)}
    again = run_datagen(*args)
    assert again.get("noop") is True
    assert {n: os.path.getmtime(out / n) for n in os.listdir(out)} == mtimes
    redo = run_datagen(*args, "--overwrite")
    assert not redo.get("noop")
    assert output_bytes(out) == before
    assert redo["started_at"] >= first["started_at"]


def test_gzip_input_gives_the_same_files(tmp_path, baseline, corpus):
    out, _ = baseline
    gz = {}
    for key, path in corpus.items():
        with open(path, encoding="utf-8") as f:
            gz[key] = _write_lines(tmp_path / (os.path.basename(path) + ".gz"),
                                   f.read().splitlines(), opener=gzip.open)
    other = tmp_path / "gz"
    run_datagen(other, gz[("train", "en")], gz[("train", "zh")], *_flags(gz), runner=DIRECT_1)
    assert output_bytes(other) == output_bytes(out)


def test_misaligned_files_are_an_error_before_anything_is_written(tmp_path):
    src = _write_lines(tmp_path / "a.en", ["one", "two", "three"])
    tgt = _write_lines(tmp_path / "a.de", ["eins", "zwei"])
    out = tmp_path / "out"
    with pytest.raises(datagen.DatagenError) as err:
        run_datagen(out, src, tgt)
    message = str(err.value)
    assert "a.en has 3 lines" in message and "a.de has 2 lines" in message
    assert not os.path.exists(out) or os.listdir(out) == []
    assert datagen.main(["--train_source", src, "--train_target", tgt, "--output_dir", str(out),
                         "--runner", "FnApiRunner"]) == 2


def test_invalid_utf8_names_file_and_line(tmp_path):
    src = tmp_path / "b.en"
    src.write_bytes(b"fine\nbad \xff byte\nfine\n")
    tgt = _write_lines(tmp_path / "b.de", ["gut", "schlecht", "gut"])
    with pytest.raises(datagen.DatagenError, match=r"b\.en:2: invalid UTF-8"):
        run_datagen(tmp_path / "out", str(src), tgt)


def test_empty_pairs_are_rejected_and_counted(tmp_path):
    src = _write_lines(tmp_path / "c.en", ["Hello world", "", "  ", "Good morning", "Bye", "x"])
    tgt = _write_lines(tmp_path / "c.de", ["Hallo Welt", "Leer", "", "   ", "Tschüss", "y"])
    out = tmp_path / "out"
    summary = run_datagen(out, src, tgt, "--vocab_size", 50, "--num_train_shards", 2,
                          "--problem", "p")
    train = summary["splits"]["train"]
    assert (train["pairs_read"], train["pairs_written"], train["pairs_rejected"]) == (6, 3, 3)
    assert train["rejected_by_reason"] == {"empty_source": 1, "empty_pair": 1, "empty_target": 1}
    with open(out / "rejects" / "p-train.jsonl", encoding="utf-8") as f:
        rejects = [json.loads(line) for line in f]
    assert [(r["where"], r["reason"]) for r in rejects] == [
        ("line 2", "empty_source"), ("line 3", "empty_pair"), ("line 4", "empty_target")]
    assert rejects[0]["target"] == "Leer" and rejects[0]["file"] == "%s + %s" % (src, tgt)
    assert rejects[0]["dataset"] == "c.en"
    assert sum(len(read_examples(p)) for p in shard_files(out, "p", "train")) == 3


def test_carriage_returns_are_dropped_as_t2t_reads_them(tmp_path):
    """tf.gfile's line reader drops every '\\r' in a line; T2T's vocab and examples see that."""
    import t2t_reference as t2t
    src = tmp_path / "r.en"
    src.write_bytes(b"Hello\r world\r\nbad\rly split\r\n\rcarriage\rreturns\r\nplain line\n")
    tgt = tmp_path / "r.de"
    tgt.write_bytes(b"Hallo Welt\r\nschlecht\r\nWagen\r\nZeile\n")
    out = tmp_path / "out"
    run_datagen(out, str(src), str(tgt), "--vocab_size", 60, "--problem", "p",
                "--num_train_shards", 1)
    for path, lang in ((src, "en"), (tgt, "de")):
        ref = t2t.t2t_build_vocab([str(path)], 60, 200, file_byte_budget=1e8)
        with open(out / ("vocab.p.60.subwords.%s" % lang), "rb") as f:
            assert f.read() == t2t.t2t_vocab_bytes(ref)
    assert b"\r" not in (out / "vocab.p.60.subwords.en").read_bytes()
    en = t2t.t2t_encoder_from_file(str(out / "vocab.p.60.subwords.en"))
    inputs = sorted(i for i, _ in read_examples(shard_files(out, "p", "train")[0]))
    assert inputs == sorted(tuple(en.encode(line) + [1]) for line in
                            ("Hello world", "badly split", "carriagereturns", "plain line"))
