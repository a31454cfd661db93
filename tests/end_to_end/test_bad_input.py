"""Bad input through the whole job: misaligned files, invalid UTF-8, over-long lines, control
characters. Each case ends in a clear error before anything is written, or in rejects whose
count balances the books: pairs read = pairs written + pairs rejected."""

import json
import os

import pytest

from datagen_helpers import (assert_books_balance, read_examples, run_datagen,
                             shard_files, with_t2t_vocab)
from pipeline import datagen
from repo_paths import SAMPLE_DATA

FLAGS = ["--problem", "p", "--vocab_size", 8192, "--num_train_shards", 2]



def _files(tmp_path, source_bytes, target_bytes):
    src, tgt = tmp_path / "in.en", tmp_path / "in.zh"
    src.write_bytes(source_bytes)
    tgt.write_bytes(target_bytes)
    return str(src), str(tgt)


def _rejects(out, split="train"):
    path = os.path.join(out, "rejects", "p-%s.jsonl" % split)
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]



@pytest.mark.slow
def test_misaligned_lines_rejected_on_request(tmp_path):
    src, tgt = _files(tmp_path, b"one\ntwo\nthree\nfour\n", "一\n二\n".encode())
    out = with_t2t_vocab(tmp_path / "out")
    with pytest.raises(datagen.DatagenError, match="in.en has 4 lines, .*in.zh has 2 lines"):
        run_datagen(out, src, tgt, *FLAGS)
    summary = run_datagen(out, src, tgt, *FLAGS, "--on_misaligned", "reject")
    assert_books_balance(summary)
    train = summary["splits"]["train"]
    assert (train["pairs_read"], train["pairs_written"], train["pairs_rejected"]) == (4, 2, 2)
    assert [(r["where"], r["reason"], r["source"]) for r in _rejects(out)] == [
        ("line 3", "unmatched_source_line", "three"), ("line 4", "unmatched_source_line", "four")]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["error", "reject", "replace"])
def test_invalid_utf8_modes(tmp_path, mode):
    src, tgt = _files(tmp_path, b"good one\nbad \xc3\x28 one\nlast\n", "好\n坏\n最后\n".encode())
    out = with_t2t_vocab(tmp_path / "out")
    if mode == "error":
        with pytest.raises(datagen.DatagenError, match=r"in\.en:2: invalid UTF-8"):
            run_datagen(out, src, tgt, *FLAGS)
        assert sorted(os.listdir(out)) == ["vocab.p.8192.subwords.en", "vocab.p.8192.subwords.zh"]
        return
    summary = run_datagen(out, src, tgt, *FLAGS, "--on_invalid_utf8", mode)
    assert_books_balance(summary)
    train = summary["splits"]["train"]
    if mode == "reject":
        assert (train["pairs_written"], train["pairs_rejected"]) == (2, 1)
        (reject,) = _rejects(out)
        assert (reject["where"], reject["reason"]) == ("line 2", "invalid_utf8")
        assert reject["source"] == "bad \ufffd( one"
    else:
        assert (train["pairs_written"], train["pairs_rejected"]) == (3, 0)


@pytest.mark.slow
def test_max_line_chars_rejects_long_pairs(tmp_path):
    src, tgt = _files(tmp_path, ("short\n" + "long " * 30 + "\n").encode(), "短\n长\n".encode())
    out = with_t2t_vocab(tmp_path / "out")
    summary = run_datagen(out, src, tgt, *FLAGS, "--max_line_chars", 100)
    assert_books_balance(summary)
    assert summary["splits"]["train"]["rejected_by_reason"] == {"line_too_long": 1}


JUNK = " ".join(["abcdefghij"] * 45455)  # one 500k-character line


@pytest.mark.slow
@pytest.mark.parametrize("flags", [
    ["--max_line_chars", 1000],
    ["--max_line_chars", 1000, "--file_byte_budget", 20000],  # a stride of 14 lines
    ["--file_byte_budget", 20000],                              # the defaults' rejects only
], ids=["max_line_chars", "max_line_chars-stride", "defaults-stride"])
def test_rejected_pairs_train_the_vocab_alike_in_every_format(tmp_path, flags):
    # One rule for every format (README, "Vocabulary sample"): the vocabulary is sampled from
    # the input as read, rejected pairs included, as T2T samples every line of each file.
    # The same pairs as line-aligned files and as TSV give the same vocab files, with a
    # 500k-character line rejected by --max_line_chars and pairs with an empty side
    # (rejected under the defaults too) among them.
    data = os.path.join(SAMPLE_DATA, "enzh-mlqe-pe")
    with open(os.path.join(data, "train.en"), encoding="utf-8") as f:
        en = [next(f).strip() for _ in range(400)]
    with open(os.path.join(data, "train.zh"), encoding="utf-8") as f:
        zh = [next(f).strip() for _ in range(400)]
    en[100], en[150], zh[200] = JUNK, "", ""
    src, tgt = _files(tmp_path, "".join(l + "\n" for l in en).encode(),
                      "".join(l + "\n" for l in zh).encode())
    tsv = tmp_path / "in.tsv"
    tsv.write_text("".join("%s\t%s\n" % pair for pair in zip(en, zh)), encoding="utf-8")
    assert tsv.stat().st_size == os.path.getsize(src) + os.path.getsize(tgt)
    common = ["--vocab_size", 300, "--num_train_shards", 1, *flags]
    lines = run_datagen(tmp_path / "lines", src, tgt, *common)
    as_tsv = run_datagen(tmp_path / "tsv", None, None, "--train_tsv", tsv, "--source_lang", "en",
                         "--target_lang", "zh", *common)
    for summary in (lines, as_tsv):
        assert_books_balance(summary)
        assert summary["splits"]["train"]["pairs_rejected"] == (3 if "--max_line_chars" in flags
                                                                else 2)
    for lang in ("en", "zh"):
        name = "vocab.translate_enzh_wmt8k.300.subwords." + lang
        assert (tmp_path / "lines" / name).read_bytes() == (tmp_path / "tsv" / name).read_bytes()
    vocab_en = (tmp_path / "lines" / "vocab.translate_enzh_wmt8k.300.subwords.en").read_text()
    if "--file_byte_budget" not in flags:  # every line sampled: the junk line trains the vocab
        assert "'abcdefghij_'" in vocab_en.splitlines()
    for name in ("source", "target"):
        a, b = lines["vocab"][name], as_tsv["vocab"][name]
        assert (a["sampled_lines"], a["sampled_chars"]) == (b["sampled_lines"], b["sampled_chars"])


@pytest.mark.slow
def test_misaligned_rejects_train_the_vocab_alike_read_in_place_or_converted(tmp_path):
    # Line files read in place, and the same files as members of a tar (converted first):
    # the source's 3 extra lines (unmatched, rejected), a 500k-character line and an empty
    # side are all in the vocabulary sample either way, at the same stride.
    import tarfile
    data = os.path.join(SAMPLE_DATA, "enzh-mlqe-pe")
    with open(os.path.join(data, "train.en"), encoding="utf-8") as f:
        en = [next(f).strip() for _ in range(303)]
    with open(os.path.join(data, "train.zh"), encoding="utf-8") as f:
        zh = [next(f).strip() for _ in range(300)]
    en[50], zh[60], en[302] = JUNK, "", JUNK
    src, tgt = _files(tmp_path, "".join(l + "\n" for l in en).encode(),
                      "".join(l + "\n" for l in zh).encode())
    archive = tmp_path / "c.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(src, "c/train.en")
        tar.add(tgt, "c/train.zh")
    common = ["--vocab_size", 300, "--num_train_shards", 1, "--max_line_chars", 1000,
              "--on_misaligned", "reject", "--file_byte_budget", 20000]
    in_place = run_datagen(tmp_path / "lines", src, tgt, *common)
    converted = run_datagen(tmp_path / "tar", "%s!c/train.en" % archive,
                            "%s!c/train.zh" % archive, *common)
    for summary in (in_place, converted):
        assert_books_balance(summary)
        assert summary["splits"]["train"]["rejected_by_reason"] == {
            "line_too_long": 1, "empty_target": 1, "unmatched_source_line": 3}
    for lang in ("en", "zh"):
        name = "vocab.translate_enzh_wmt8k.300.subwords." + lang
        assert (tmp_path / "lines" / name).read_bytes() == (tmp_path / "tar" / name).read_bytes()
    for name in ("source", "target"):
        a, b = in_place["vocab"][name], converted["vocab"][name]
        assert (a["sampled_lines"], a["sampled_chars"]) == (b["sampled_lines"], b["sampled_chars"])


@pytest.mark.slow
def test_crlf_nul_and_control_characters_are_kept_as_text(tmp_path):
    """CRLF line ends lose the \\r (as T2T's reader); NUL and other control characters are
    ordinary non-alphanumeric characters: encoded (escaped if outside the vocab), not dropped."""
    src, tgt = _files(tmp_path, b"a\x00b\r\nbell\x07 here\r\n", "甲\r\n乙\x1b丙\r\n".encode())
    out = with_t2t_vocab(tmp_path / "out")
    summary = run_datagen(out, src, tgt, *FLAGS)
    assert_books_balance(summary)
    assert summary["splits"]["train"]["pairs_written"] == 2
    from transforms.codecs.subword import SubwordEncoder
    en = SubwordEncoder.from_file(os.path.join(out, "vocab.p.8192.subwords.en"))
    inputs = sorted(i for p in shard_files(out, "p", "train") for i, _ in read_examples(p))
    assert inputs == sorted([tuple(en.encode("a\x00b") + [1]), tuple(en.encode("bell\x07 here") + [1])])
    assert sorted(en.decode(list(i[:-1])) for i in inputs) == ["a\x00b", "bell\x07 here"]


@pytest.mark.slow
def test_tsv_invalid_utf8_replace_decodes_instead_of_rejecting(tmp_path):
    tsv = tmp_path / "c.tsv"
    tsv.write_bytes("good\t好\n".encode() + b"bad \xff byte\t" + "坏\n".encode())
    out = with_t2t_vocab(tmp_path / "out")
    summary = run_datagen(out, None, None, *FLAGS, "--source_lang", "en", "--target_lang", "zh",
                          "--train_tsv", str(tsv), "--on_invalid_utf8", "replace")
    assert_books_balance(summary)
    assert summary["splits"]["train"]["pairs_written"] == 2


@pytest.mark.slow
def test_input_with_no_text_at_all_balances(tmp_path):
    """With --allow_empty (without it: exit 2, tests/end_to_end/test_fault_injection.py)."""
    src, tgt = _files(tmp_path, b"\n  \n\n", b"\n\n \n")
    summary = run_datagen(tmp_path / "out", src, tgt, "--problem", "p", "--vocab_size", 100,
                          "--num_train_shards", 1, "--allow_empty")
    assert_books_balance(summary)
    train = summary["splits"]["train"]
    assert (train["pairs_read"], train["pairs_written"], train["pairs_rejected"]) == (3, 0, 3)


@pytest.mark.parametrize("flags,message", [
    (["--num_train_shards", 0], "--num_train_shards: must be an integer from 1 to 99999"),
    (["--encode_chunk_lines", 0], "--encode_chunk_lines: must be an integer from 1"),
    (["--vocab_type", "word", "--vocab_size", 2], "at least 3"),
    (["--vocab_type", "byte_bpe", "--vocab_size", 100], "at least 258"),
])
def test_bad_flags_are_refused_before_any_work(tmp_path, flags, message, capsys):
    src, tgt = _files(tmp_path, b"a\n", b"b\n")
    argv = ["--train_source", src, "--train_target", tgt, "--output_dir", str(tmp_path / "out"),
            "--runner", "FnApiRunner"] + [str(f) for f in flags]
    assert datagen.main(argv) == 2
    assert message in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "out")


def test_missing_input_is_a_clear_error(tmp_path, capsys):
    argv = ["--train_source", str(tmp_path / "nope.en"), "--train_target", str(tmp_path / "nope.zh"),
            "--output_dir", str(tmp_path / "out"), "--runner", "FnApiRunner"]
    assert datagen.main(argv) == 2
    assert "no file matches" in capsys.readouterr().err
