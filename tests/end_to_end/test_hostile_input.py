"""Issue 22: no input, flag or disk crashes the job, loses data silently or touches files it
does not own. One test per finding of the new-user report (README, "Bad input"): each ends in
exit 0 with balanced books, or exit 2 with one ERROR line naming the file, never a traceback.
Runs are in-process (FnApiRunner) on a few lines. Here: names that become paths, the output
directory inside the input pattern, files a run does not own, odd file names, impossible
values, reruns and the console; text encodings and compression: test_hostile_encodings.py;
disks: test_hostile_disks.py."""

import os

import pytest

from bad_input_files import FLAGS, corpus as _corpus, word_job as _word_job, write as _write
from datagen_helpers import main_errors as _main, one_line_error as _one_line_error
from pipeline import datagen


# -- 7. names that become paths ------------------------------------------------------------

@pytest.mark.parametrize("flag,value", [
    ("--problem", "../escape"), ("--problem", ""), ("--problem", "a/b"), ("--problem", ".hidden"),
    ("--source_lang", "../../x"), ("--target_lang", ""), ("--target_lang", "zh/../../x")])
def test_names_that_become_paths_are_checked(tmp_path, capsys, flag, value):
    src = _write(tmp_path / "a.en", b"one\n")
    tgt = _write(tmp_path / "a.zh", b"two\n")
    out = tmp_path / "out"
    _one_line_error(capsys, ["--train_source", src, "--train_target", tgt, "--output_dir", out,
                             flag, value] + FLAGS[2:], flag, "cannot be part of a file name")
    assert not os.path.exists(out) and sorted(os.listdir(tmp_path)) == ["a.en", "a.zh"]


def test_a_language_from_an_odd_extension_is_checked(tmp_path, capsys):
    src = _write(tmp_path / "a.en", b"one\n")
    tgt = _write(tmp_path / "a.z h", b"two\n")
    _one_line_error(capsys, ["--train_source", src, "--train_target", tgt, "--output_dir",
                             tmp_path / "out"] + FLAGS[2:], "a.z h's extension", "--target_lang")


def test_language_tags_are_names():
    from pipeline.output.names import check_name
    for name in ("en", "en-US", "zh_Hans", "sr@latin", "translate_enzh_wmt8k", "p.v2"):
        assert check_name(name, "--x") == name


def test_the_longest_names_allowed_fit_a_file_name_temporaries_included():
    """Issue 42, item 6: every name the job writes with the longest --problem and languages
    allowed and the largest --vocab_size, under its temporary name too, fits in 255 bytes
    (the limit of ext4, XFS, btrfs, APFS); the longest, a learnt vocabulary's fingerprint
    under its temporary name, is what names.py counts."""
    from pipeline.driver.fingerprint import sidecar_path
    from pipeline.output import names
    from pipeline.output.layout import OutputLayout
    from transforms.codecs.kinds import CODEC_KINDS
    from transforms.shards.record_formats import FORMATS
    from transforms.storage.file_io import temporary_name
    problem, lang = "p" * names.PROBLEM_MAX, "l" * names.LANG_MAX
    written = []
    for fmt in FORMATS:
        layout = OutputLayout("/out", problem, 2 ** 31 - 1, "0" * 32, fmt)
        written += [layout.summary_path, layout.complete_path, layout.lengths_report_path,
                    layout.rejects_path("train"), layout.path(problem + ".datagen.lock"),
                    layout.path(layout.shards.name("train", 99998, 99999))]
        for kind in CODEC_KINDS:
            written += [layout.vocab_path(kind, lang), sidecar_path(layout.vocab_path(kind, lang))]
    longest = max((temporary_name(path) for path in written), key=len)
    assert longest.startswith("/out/..vocab.%s.2147483647.subwords.%s.fingerprint.json.tmp-"
                              % (problem, lang))
    name = longest.rsplit("/", 1)[1]
    assert len(name) == names.LONGEST_REST + len(problem) + len(lang)
    assert len(name.encode()) <= names.NAME_MAX_BYTES


@pytest.mark.slow
def test_the_longest_names_allowed_run_end_to_end_and_longer_ones_are_refused(
        tmp_path, capsys):
    """--problem and both languages at their limits, the largest --vocab_size: the job
    completes (a learnt vocabulary's fingerprint sidecar, under its temporary name, went
    over 255 bytes with names of 100 letters: a traceback after pass 1); one letter more
    is one line before anything runs."""
    from pipeline.output.names import LANG_MAX, PROBLEM_MAX
    src, tgt = _corpus(tmp_path / "in")
    out = tmp_path / "out"
    problem, source, target = "p" * PROBLEM_MAX, "e" * LANG_MAX, "z" * LANG_MAX
    argv = ["--train_source", src, "--train_target", tgt, "--dev_source", src,
            "--dev_target", tgt, "--output_dir", out, "--problem", problem,
            "--source_lang", source, "--target_lang", target, "--vocab_size", 2 ** 31 - 1,
            "--num_train_shards", 2, "--runner", "FnApiRunner"]
    code, _, err = _main(capsys, *argv)
    assert code == 0 and "Traceback" not in err, err
    assert os.path.exists(out / ("%s.DATAGEN_COMPLETE" % problem))
    assert os.path.exists(out / (".vocab.%s.2147483647.subwords.%s.fingerprint.json"
                                 % (problem, target)))
    for flag, value in (("--problem", "p" * (PROBLEM_MAX + 1)),
                        ("--source_lang", "e" * (LANG_MAX + 1))):
        _one_line_error(capsys, argv + [flag, value, "--output_dir", tmp_path / "out2"], flag,
                        "at most %d characters" % (PROBLEM_MAX if flag == "--problem"
                                                   else LANG_MAX))
        assert not os.path.exists(tmp_path / "out2")


@pytest.mark.slow
def test_output_dir_inside_the_input_pattern_is_never_read(tmp_path, capsys):
    data = tmp_path / "data"
    _corpus(data)
    argv = ["--train_source", data / "*.en", "--train_target", data / "*.zh",
            "--output_dir", data, "--vocab_type", "word", "--vocab_size", 50] + FLAGS
    code, _, err = _main(capsys, *argv)
    assert code == 0, err
    first = (data / "vocab.p.50.words.en").read_bytes()
    code, _, err = _main(capsys, *argv, "--overwrite")
    assert code == 0, err
    assert "left out" in err and "vocab.p.50.words.en" in err
    assert (data / "vocab.p.50.words.en").read_bytes() == first
    import json
    summary = json.loads((data / "p.datagen_summary.json").read_text())
    assert summary["splits"]["train"]["pairs_read"] == 40
    assert list(summary["splits"]["train"]["datasets"]) == ["a.en"]


@pytest.mark.slow
def test_given_word_vocab_copied_into_the_pattern_is_not_trained_on(tmp_path, capsys):
    data = tmp_path / "data"
    _corpus(data)
    vocabs = tmp_path / "v"
    vocabs.mkdir()
    v_en = _write(vocabs / "v.en", b"<unk>\n<s>\n</s>\nthe\ncat\n")
    v_zh = _write(vocabs / "v.zh", "<unk>\n<s>\n</s>\n\u732b\n".encode())
    argv = ["--train_source", data / "*.en", "--train_target", data / "*.zh",
            "--output_dir", data, "--vocab_type", "word", "--word_vocab",
            "%s,%s" % (v_en, v_zh)] + FLAGS
    for extra in ([], ["--overwrite"]):
        code, _, err = _main(capsys, *argv, *extra)
        assert code == 0, err
    import json
    summary = json.loads((data / "p.datagen_summary.json").read_text())
    assert summary["splits"]["train"]["pairs_read"] == 40


def test_own_outputs_are_recognized():
    from pipeline.output.own_outputs import exclude_own, is_shard_name
    out = "/d/out"
    own = ["/d/out/vocab.p.8192.subwords.en", "/d/out/vocab.p.100.bpe.en/vocab.json",
           "/d/out/.vocab.p.8192.subwords.en.fingerprint.json", "/d/out/p-train-00001-of-00010",
           "/d/out/p.datagen_summary.json", "/d/out/rejects/p-train.jsonl",
           "/d/out/.datagen-work/p/x.en", "/d/out/p.DATAGEN_COMPLETE",
           "/d/out/p.datagen_summary.json.tmp-" + "0" * 32,
           # every kind's vocabulary, SentencePiece's directories included (named by the
           # kinds' declared suffixes, not a list kept here)
           "/d/out/vocab.p.8000.spm.en/sentencepiece.model", "/d/out/vocab.p.5000.words.zh"]
    theirs = ["/d/out/train.en", "/d/out/sub/vocab.p.8192.subwords.en", "/d/outer/p.lengths.html",
              "/d/out/p-train-notes.txt"]
    assert exclude_own(own + theirs, out) == (theirs, own)
    assert is_shard_name("p-x-train-00000-of-00002", "p-x", "train")
    assert not is_shard_name("p-train-notes.txt", "p", "train")
    assert not is_shard_name("q-train-00000-of-00002", "p", "train")


# -- 6. the same file twice; files a run does not own -------------------------------------

def test_a_file_matched_twice_is_read_once(tmp_path, caplog):
    from pipeline.driver.datasets import expand_listing as _expand
    a = _write(tmp_path / "a.en", b"x\n")
    _write(tmp_path / "b.en", b"y\n")
    (tmp_path / "link.en").symlink_to(a)
    got = _expand("%s,%s,%s" % (tmp_path / "*.en", a, tmp_path / "link.en"), "train_source")
    assert got == [a, str(tmp_path / "b.en")]
    assert "matched more than once, read once" in caplog.text


@pytest.mark.slow
def test_user_files_named_like_shards_are_left_alone(tmp_path, capsys):
    src, tgt = _corpus(tmp_path / "data")
    out = tmp_path / "out"
    out.mkdir()
    notes = _write(out / "p-train-notes.txt", b"mine\n")
    argv = ["--train_source", src, "--train_target", tgt, "--output_dir", out,
            "--vocab_type", "word", "--vocab_size", 50] + FLAGS
    for extra in ([], ["--overwrite", "--num_train_shards", "3"]):
        code, _, err = _main(capsys, *argv, *extra)
        assert code == 0, err
    assert open(notes, "rb").read() == b"mine\n"
    assert "p-train-notes.txt" in err
    assert sorted(p for p in os.listdir(out) if p.startswith("p-train-0")) == [
        "p-train-00000-of-00003", "p-train-00001-of-00003", "p-train-00002-of-00003"], \
        os.listdir(out)


# -- 8. file names with commas and brackets ------------------------------------------------

def test_a_file_name_with_commas_or_brackets_is_taken_literally(tmp_path):
    from pipeline.driver.datasets import expand_listing as _expand
    comma = _write(tmp_path / "a,b.en", b"x\n")
    bracket = _write(tmp_path / "c[1].en", b"y\n")
    _write(tmp_path / "c1.en", b"z\n")
    assert _expand(comma, "train_source") == [comma]
    assert _expand(bracket, "train_source") == [bracket]
    assert _expand("%s,%s" % (bracket, tmp_path / "c1.en"), "train_source") == [
        bracket, str(tmp_path / "c1.en")]


@pytest.mark.slow
def test_rerun_after_a_shard_was_deleted_redoes_it(tmp_path, capsys):
    out = tmp_path / "out"
    argv = _word_job(tmp_path / "data", out)
    code, _, err = _main(capsys, *argv)
    assert code == 0, err
    shard = out / "p-train-00001-of-00002"
    data = shard.read_bytes()
    shard.unlink()
    code, _, err = _main(capsys, *argv)
    assert code == 0, err
    assert "p-train-00001-of-00002 shard missing (the summary lists it): redoing it" in err
    assert shard.read_bytes() == data
    (out / "p.datagen_summary.json").write_text("{not json")
    code, _, err = _main(capsys, *argv)
    assert code == 0 and "cannot be read: redoing it" in err, err
    assert shard.read_bytes() == data


# -- 8. impossible values; error lines of a readable length --------------------------------

def test_negative_max_subtoken_length_is_refused(tmp_path, capsys):
    src, tgt = _write(tmp_path / "a.en", b"x\n"), _write(tmp_path / "a.zh", b"y\n")
    _one_line_error(capsys, ["--train_source", src, "--train_target", tgt, "--output_dir",
                             tmp_path / "out", "--max_subtoken_length", "-1"] + FLAGS[2:],
                    "--max_subtoken_length: must be an integer from 0")


def test_an_error_line_is_capped(tmp_path, capsys):
    names = []
    for i in range(300):
        names.append(_write(tmp_path / ("%s%03d.en" % ("long-name-" * 8, i)), b"x\n"))
    tgt = _write(tmp_path / "a.zh", b"y\n")
    line = _one_line_error(capsys, ["--train_source", ",".join(names), "--train_target", tgt,
                                    "--output_dir", tmp_path / "out"] + FLAGS[2:],
                           "300 source files but 1 target files")
    assert len(line) < 1200
    from pipeline.runtime.errors import one_line
    capped = one_line("x" * 24000)
    assert len(capped) < 1100 and capped.endswith("[23000 more characters]")


# -- 9. reruns: a flag that changes no vocabulary; a read-only output ----------------------

@pytest.mark.slow
def test_rerun_after_a_failed_run_with_another_max_line_chars(tmp_path, capsys):
    out = tmp_path / "out"
    argv = _word_job(tmp_path / "data", out)
    code, errors, err = _main(capsys, *argv, "--max_line_chars", 1)  # every pair rejected
    assert code == 2 and "no pairs to write" in errors[0], err
    assert os.path.exists(out / "vocab.p.50.words.en")
    code, _, err = _main(capsys, *argv)
    assert code == 0, err


# -- 10. console --------------------------------------------------------------------------

def test_help_shows_defaults_of_0_and_none(capsys):
    assert datagen.main(["--help"]) == 0
    squashed = " ".join(capsys.readouterr().out.split())
    assert "characters (0: no limit). (default: 0)" in squashed          # --max_line_chars
    assert "(0-based). (default: 0)" in squashed                         # --source_column
    assert "dev source text (optional). (default: none)" in squashed     # --dev_source
    assert "(vocab.{problem}.{size}.subwords). (default: off)" in squashed  # --shared_vocab


def test_no_arguments_prints_the_usage(capsys):
    assert datagen.main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m pipeline.datagen --output_dir DIR")


def test_word_summary_table_says_no_eos():
    from pipeline.output.summary import format_summary
    summary = {"status": "complete", "problem": "p", "seed": 0, "passes": 2, "seconds": 1.0,
               "stages": {},
               "output_dir": "/o", "vocab": {}, "flags": {"vocab_type": "word"},
               "splits": {"train": {"pairs_read": 1, "pairs_written": 1, "pairs_rejected": 0,
                                    "shards": [], "rejected_by_reason": {}, "datasets": {
                                        "a": {"warnings": ["a: starts with a BOM"]}}}},
               "lengths": {"ids_end_in_eos": False, "splits": {"train": {"inputs": {
                   "p50": 1, "p90": 1, "p99": 1, "max": 1, "chars_per_token": 1.0}}}}}
    table = format_summary(summary)
    assert "(ids, no EOS)" in table and "(ids with EOS)" not in table
    assert "input warnings: 1" in table
    summary["lengths"]["ids_end_in_eos"] = True  # what the job records for a subword run
    assert "(ids with EOS)" in format_summary(summary)


@pytest.mark.slow
def test_vocab_size_with_a_given_word_vocab_is_said(tmp_path, capsys):
    src, tgt = _corpus(tmp_path / "data")
    vocab = _write(tmp_path / "v.txt", b"<unk>\n<s>\n</s>\nthe\n")
    code, _, err = _main(capsys, "--train_source", src, "--train_target", tgt, "--output_dir",
                         tmp_path / "out", "--vocab_type", "word", "--word_vocab", vocab,
                         "--vocab_size", 77, *FLAGS)
    assert code == 0, err
    assert "--vocab_size 77 with --word_vocab: the given vocabulary is used as it is" in err


@pytest.mark.slow
def test_reader_refuses_the_other_mode(tmp_path, capsys):
    from pipeline.tools.reader import make_dataset
    src, tgt = _corpus(tmp_path / "data")
    out = tmp_path / "out"
    code, _, err = _main(capsys, "--train_source", src, "--train_target", tgt, "--output_dir",
                         out, "--vocab_type", "word", "--vocab_size", 50, *FLAGS)
    assert code == 0, err
    with pytest.raises(ValueError, match="--vocab_type word, written for mode='nmt', not mode='t2t'"):
        make_dataset(str(out / "p-train-*"), 64, mode="t2t")
    make_dataset(str(out / "p-train-*"), 8, mode="nmt")


def test_a_pattern_matching_only_own_outputs_is_an_error(tmp_path):
    from pipeline.driver.datasets import expand_listing as _expand
    from pipeline.runtime.errors import DatagenError
    _write(tmp_path / "vocab.p.8192.subwords.en", b"'a_'\n")
    with pytest.raises(DatagenError, match="matches only files this job writes"):
        _expand(str(tmp_path / "*.en"), "train_source", str(tmp_path))


@pytest.mark.slow
def test_odd_file_names_through_the_job_and_its_fingerprint(tmp_path, capsys):
    import json
    data = tmp_path / "data"
    src, tgt = _corpus(data)
    odd_src, odd_tgt = str(data / "a,b[1].en"), str(data / "a,b[1].zh")
    os.rename(src, odd_src)
    os.rename(tgt, odd_tgt)
    _write(data / "a1.en", b"decoy\n")  # what the brackets would glob
    out = tmp_path / "out"
    argv = ["--train_source", odd_src, "--train_target", odd_tgt, "--output_dir", out,
            "--vocab_type", "word", "--vocab_size", 50] + FLAGS
    code, _, err = _main(capsys, *argv)
    assert code == 0, err
    summary = json.loads((out / "p.datagen_summary.json").read_text())
    assert list(summary["fingerprint"]["inputs"]["train_source"]) == [odd_src]
    assert summary["splits"]["train"]["pairs_read"] == 40
    code, _, err = _main(capsys, *argv)
    assert code == 0 and "nothing to do" in err, err
    with open(odd_src, "ab") as f:
        f.write(b"one more\n")
    _one_line_error(capsys, argv, "a,b[1].en changed")


def test_an_input_gone_since_it_was_listed_is_an_error_fact(tmp_path):
    from transforms.prepare.file_scan import _ScanFileFn
    from transforms.storage.object_stores import StoreSettings
    scan = _ScanFileFn(100, StoreSettings())
    scan.setup()
    ((path, facts),) = list(scan.process(str(tmp_path / "gone.en")))
    assert facts["error"] == "%s: cannot be read (No such file or directory)" % path
