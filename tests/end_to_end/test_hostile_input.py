"""Issue 22: no input, flag or disk crashes the job, loses data silently or touches files it
does not own. One test per finding of the new-user report (README, "Bad input"): each ends in
exit 0 with balanced books, or exit 2 with one ERROR line naming the file, never a traceback.
Runs are in-process (FnApiRunner) on a few lines."""

import glob
import io
import os

import pytest

from datagen_helpers import assert_books_balance, run_datagen, shard_files
from datagen_helpers import (assert_no_output as _no_output, main_errors as _main,
                             one_line_error as _one_line_error)
from pipeline import datagen
from repo_paths import REPO_ROOT, SAMPLE_DATA

FLAGS = ["--problem", "p", "--num_train_shards", "2", "--runner", "FnApiRunner"]


def _write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


# -- 1. NUL characters, UTF-16 ------------------------------------------------------------

def test_token_index_keeps_a_lone_nul_character():
    from transforms.codecs.subword_index import TokenIndex
    index = TokenIndex.build([("a\0b", 3), ("\0", 2), ("x", 1)], 200)
    buf = io.BytesIO()
    index.save(buf)
    loaded = TokenIndex.load(buf.getvalue())
    assert loaded.chars == index.chars and "\0" in loaded.chars


@pytest.mark.slow
def test_nul_in_text_learns_t2t_vocab(tmp_path):
    t2t = pytest.importorskip("t2t_reference")
    en = b"hello\0world\nfoo \0 bar\n\0\nplain line here\n" * 5
    src = _write(tmp_path / "a.en", en)
    tgt = _write(tmp_path / "a.zh", "\u4e00\n\u4e8c\n\u4e09\n\u56db\n".encode() * 5)
    summary = run_datagen(tmp_path / "out", src, tgt, "--problem", "p", "--vocab_size", 100,
                          "--num_train_shards", 1)
    assert_books_balance(summary)
    ref = t2t.t2t_build_vocab([src], 100, 200, file_byte_budget=1e8)
    assert (tmp_path / "out" / "vocab.p.100.subwords.en").read_bytes() == t2t.t2t_vocab_bytes(ref)


@pytest.mark.slow
def test_utf16_file_is_a_one_line_error(tmp_path, capsys):
    src = _write(tmp_path / "u.en", "hello world\nsecond line\n".encode("utf-16"))
    tgt = _write(tmp_path / "u.zh", "\u4e00\n\u4e8c\n".encode())
    out = tmp_path / "out"
    _one_line_error(capsys, ["--train_source", src, "--train_target", tgt, "--output_dir", out]
                    + FLAGS, "u.en")
    _no_output(out)
    from transforms.formats.text_lines import scan_stream, text_marks
    for encoding in ("utf-16", "utf-16-be", "utf-32", "utf-32-be"):
        marks = {}
        scan_stream(io.BytesIO("\ufeffhello\n".encode(encoding)), 100, marks)
        assert "UTF-16 or UTF-32 byte-order mark" in text_marks("u.en", marks)[0], encoding


# -- 2, 3. every compression Beam reads: cut or corrupt is an error, never a shorter file ----

def _compressors():
    import bz2
    import gzip
    import lzma
    import zlib
    import zstandard
    return {".gz": gzip.compress, ".bz2": bz2.compress, ".deflate": zlib.compress,
            ".zst": lambda d: zstandard.ZstdCompressor().compress(d), ".xz": lzma.compress,
            ".lzma": lambda d: lzma.compress(d, format=lzma.FORMAT_ALONE)}


TEXT = b"".join(b"line %d of the text\n" % i for i in range(3000))


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".deflate", ".zst", ".xz", ".lzma"])
def test_every_compression_cut_or_corrupt_is_an_error(tmp_path, suffix):
    from transforms.storage import file_io
    packed = _compressors()[suffix](TEXT)
    cases = {"whole": packed, "twice": packed + packed, "cut": packed[:len(packed) // 2],
             "last_byte_cut": packed[:-1], "empty": b"", "not_compressed": TEXT[:500],
             "corrupt": packed[:12] + b"\xff" * 16 + packed[28:]}
    for name, blob in cases.items():
        path = _write(tmp_path / ("t.en" + suffix), blob)
        if name in ("whole", "twice"):
            with file_io.open_text_source(path) as f:
                assert f.read() == TEXT * (2 if name == "twice" else 1), name
            continue
        with pytest.raises(file_io.CompressedStreamError, match=r"t\.en\%s: " % suffix):
            with file_io.open_text_source(path) as f:
                f.read()


def test_compressed_archive_member_is_checked(tmp_path):
    import tarfile
    from transforms.storage import file_io
    from transforms.materialize import open_member
    member = tmp_path / "m.en.xz"
    member.write_bytes(_compressors()[".xz"](TEXT)[:-20])
    archive = tmp_path / "c.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(member, "c/m.en.xz")
    with pytest.raises(file_io.CompressedStreamError, match="ends early"):
        with open_member("%s!c/m.en.xz" % archive) as f:
            f.read()


def test_language_of_every_compressed_name():
    from pipeline.output.layout import lang_of
    for suffix in _compressors():
        assert lang_of("/d/train.en" + suffix) == "en"
    assert lang_of("c.tgz!d/test.zh.sgm.xz") == "zh"


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".xz", ".zst"])
def test_cut_xz_and_zst_through_the_job(tmp_path, capsys, suffix):
    src = _write(tmp_path / ("t.en" + suffix), _compressors()[suffix](TEXT)[:-30])
    tgt = _write(tmp_path / "t.zh", TEXT)
    out = tmp_path / "out"
    _one_line_error(capsys, ["--train_source", src, "--train_target", tgt, "--output_dir", out,
                             "--vocab_size", 100] + FLAGS,
                    "t.en%s: compressed stream ends early" % suffix)
    _no_output(out)


# -- 2. a disk that fills up while the job writes ------------------------------------------

SAMPLE = os.path.join(SAMPLE_DATA, "enzh-mlqe-pe")


@pytest.fixture
def small_disk(tmp_path):
    """A 1.5 MB tmpfs (root only; else the test is skipped: see test_storage_error_*)."""
    import subprocess
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1536k", "tmpfs", str(mount)],
            capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _sample_files(tmp_path, lines):
    paths = []
    for lang in ("en", "zh"):
        with open(os.path.join(SAMPLE, "train." + lang), "rb") as f:
            paths.append(_write(tmp_path / ("in%d.%s" % (lines, lang)),
                                b"".join(f.readline() for _ in range(lines))))
    return paths


def _files_bytes(directory):
    found = {}
    for path in glob.glob(os.path.join(str(directory), "**"), recursive=True):
        if os.path.isfile(path):
            with open(path, "rb") as f:
                found[os.path.relpath(path, str(directory))] = f.read()
    return found


@pytest.mark.slow
def test_disk_full_fails_in_one_line_and_leaves_the_previous_output(tmp_path, capsys, small_disk):
    import json
    from datagen_helpers import with_t2t_vocab
    out = small_disk / "out"
    src, tgt = _sample_files(tmp_path, 100)
    with_t2t_vocab(out, problem="a")
    code, _, err = _main(capsys, "--train_source", src, "--train_target", tgt,
                         "--output_dir", out, "--problem", "a", "--runner", "FnApiRunner")
    assert code == 0, err
    before = _files_bytes(out)
    big_src, big_tgt = _sample_files(tmp_path, 7000)
    with_t2t_vocab(out, problem="b")
    line = _one_line_error(capsys, ["--train_source", big_src, "--train_target", big_tgt,
                                    "--output_dir", out, "--problem", "b", "--runner",
                                    "FnApiRunner"], str(out), "No space left on device")
    assert len(line) < 400
    after = _files_bytes(out)
    assert {k: v for k, v in after.items() if k in before} == before  # problem a untouched
    assert os.path.exists(out / "a.DATAGEN_COMPLETE")
    assert not os.path.exists(out / "b.DATAGEN_COMPLETE")
    assert not shard_files(out, "b", "train")
    assert not [k for k in after if ".tmp" in k or ".datagen-work" in k], sorted(after)
    with open(out / "b.datagen_summary.json") as f:
        summary = json.load(f)
    assert summary["status"] == "failed" and "No space left" in summary["error"]


def test_storage_error_found_in_every_shape():
    import errno
    from pipeline.runtime.storage_errors import storage_error
    assert storage_error(OSError(errno.ENOSPC, "No space left on device")).startswith("[Errno 28]")
    try:
        try:
            raise OSError(errno.EDQUOT, "quota")
        except OSError as inner:
            raise RuntimeError("writing failed") from inner
    except RuntimeError as e:
        assert storage_error(e) == "[Errno %d] %s" % (errno.EDQUOT, os.strerror(errno.EDQUOT))
    beam = RuntimeError("OSError: [Errno 28] No space left on device [while running 'Encode']")
    assert storage_error(beam) == "[Errno 28] No space left on device"
    assert storage_error(ValueError("no")) is None
    assert storage_error(OSError(errno.ENOENT, "missing")) is None


def test_failed_atomic_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    import errno
    from transforms.storage import file_io

    class Full:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    # a local file is written with the built-in open, under a temporary name
    monkeypatch.setattr(file_io, "open", lambda *a, **k: Full(open(*a, **k)), raising=False)
    with pytest.raises(OSError):
        file_io.write_json(str(tmp_path / "s.json"), {"status": "failed"})
    assert os.listdir(tmp_path) == []


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


# -- 4. the output directory inside the input pattern --------------------------------------

def _corpus(directory, lines=40):
    directory.mkdir(exist_ok=True)
    en = "".join("the cat number %d sat on mat %d\n" % (i, i % 7) for i in range(lines))
    zh = "".join("\u732b %d \u5750\u5728 %d\n" % (i, i % 7) for i in range(lines))
    return _write(directory / "a.en", en.encode()), _write(directory / "a.zh", zh.encode())


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
           "/d/out/p.datagen_summary.json.tmp-" + "0" * 32]
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
    src, tgt = _corpus(tmp_path / "data")
    out = tmp_path / "out"
    argv = ["--train_source", src, "--train_target", tgt, "--output_dir", out,
            "--vocab_type", "word", "--vocab_size", 50] + FLAGS
    code, _, err = _main(capsys, *argv)
    assert code == 0, err
    shard = out / "p-train-00001-of-00002"
    data = shard.read_bytes()
    shard.unlink()
    code, _, err = _main(capsys, *argv)
    assert code == 0, err
    assert "p-train-00001-of-00002 is missing: redoing it" in err
    assert shard.read_bytes() == data
    (out / "p.datagen_summary.json").write_text("{not json")
    code, _, err = _main(capsys, *argv)
    assert code == 0 and "cannot be read: redoing it" in err, err
    assert shard.read_bytes() == data


# -- 5. old Mac line ends, a byte-order mark: T2T's reading kept, and said -----------------

@pytest.mark.parametrize("chunk", [2, 3, 1 << 22])
def test_scan_counts_lone_carriage_returns_nul_and_bom(monkeypatch, chunk):
    from transforms.formats import text_lines
    monkeypatch.setattr(text_lines, "_CHUNK", chunk)
    marks = {}
    data = b"\xef\xbb\xbfa\r\nb\rc\r\r\nd\0\n\re\r"
    n_bytes, n_lines, _, _ = text_lines.scan_stream(io.BytesIO(data), 100, marks)
    assert (n_bytes, n_lines) == (len(data), 4)
    assert marks == {"bom": True, "lone_cr": 4, "nul": 1}
    assert text_lines.scan_stream(io.BytesIO(b"x\r\ny\n"), 100, marks) and marks == {
        "bom": False, "lone_cr": 0, "nul": 0}


@pytest.mark.slow
def test_cr_only_file_and_bom_are_warned_in_console_and_summary(tmp_path, capsys):
    import json
    src = _write(tmp_path / "mac.en", b"one two\rthree four\rfive\r")
    tgt = _write(tmp_path / "bom.zh", b"\xef\xbb\xbf\xe4\xb8\x80\n")
    out = tmp_path / "out"
    code, _, err = _main(capsys, "--train_source", src, "--train_target", tgt, "--output_dir",
                         out, "--vocab_type", "word", "--vocab_size", 20, *FLAGS)
    assert code == 0, err
    assert "mac.en: 3 carriage returns" in err and "bom.zh: starts with a UTF-8 byte-order" in err
    summary = json.loads((out / "p.datagen_summary.json").read_text())
    assert_books_balance(summary)
    (dataset,) = summary["splits"]["train"]["datasets"].values()
    assert len(dataset["warnings"]) == 2 and dataset["pairs_written"] == 1  # T2T reads 1 line


# -- 8. impossible values; error lines of a readable length --------------------------------

def test_negative_max_subtoken_length_is_refused(tmp_path, capsys):
    src, tgt = _write(tmp_path / "a.en", b"x\n"), _write(tmp_path / "a.zh", b"y\n")
    _one_line_error(capsys, ["--train_source", src, "--train_target", tgt, "--output_dir",
                             tmp_path / "out", "--max_subtoken_length", "-1"] + FLAGS[2:],
                    "--max_subtoken_length must be positive")


def test_an_error_line_is_capped(tmp_path, capsys):
    names = []
    for i in range(300):
        names.append(_write(tmp_path / ("%s%03d.en" % ("long-name-" * 8, i)), b"x\n"))
    tgt = _write(tmp_path / "a.zh", b"y\n")
    line = _one_line_error(capsys, ["--train_source", ",".join(names), "--train_target", tgt,
                                    "--output_dir", tmp_path / "out"] + FLAGS[2:],
                           "300 source files but 1 target files")
    assert len(line) < 1200
    from pipeline.runtime.runners import one_line
    capped = one_line("x" * 24000)
    assert len(capped) < 1100 and capped.endswith("[23000 more characters]")


# -- 9. reruns: a flag that changes no vocabulary; a read-only output ----------------------

@pytest.mark.slow
def test_rerun_after_a_failed_run_with_another_max_line_chars(tmp_path, capsys):
    src, tgt = _corpus(tmp_path / "data")
    out = tmp_path / "out"
    argv = ["--train_source", src, "--train_target", tgt, "--output_dir", out,
            "--vocab_type", "word", "--vocab_size", 50] + FLAGS
    code, errors, err = _main(capsys, *argv, "--max_line_chars", 1)  # every pair rejected
    assert code == 2 and "no pairs to write" in errors[0], err
    assert os.path.exists(out / "vocab.p.50.words.en")
    code, _, err = _main(capsys, *argv)
    assert code == 0, err


@pytest.fixture
def read_only_disk(tmp_path):
    import subprocess
    mount = tmp_path / "ro"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs",
                                            str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


@pytest.mark.slow
def test_rerun_over_a_complete_read_only_output_exits_0(tmp_path, capsys, read_only_disk):
    import subprocess
    src, tgt = _corpus(tmp_path / "data")
    out = read_only_disk / "out"
    argv = ["--train_source", src, "--train_target", tgt, "--output_dir", out,
            "--vocab_type", "word", "--vocab_size", 50] + FLAGS
    code, _, err = _main(capsys, *argv)
    assert code == 0, err
    subprocess.run(["mount", "-o", "remount,ro", str(read_only_disk)], check=True)
    code, _, err = _main(capsys, *argv)
    assert code == 0, err
    _one_line_error(capsys, argv + ["--seed", "3"], "holds a complete output of other")


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
               "lengths": {"splits": {"train": {"inputs": {
                   "p50": 1, "p90": 1, "p99": 1, "max": 1, "chars_per_token": 1.0}}}}}
    table = format_summary(summary)
    assert "(ids, no EOS)" in table and "(ids with EOS)" not in table
    assert "input warnings: 1" in table
    summary["flags"]["vocab_type"] = "subword"
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


@pytest.mark.parametrize("chunk", [1, 2, 5, 1 << 20])
def test_mark_counter_counts_as_the_scan(chunk):
    from transforms.formats import text_lines
    data = b"\xef\xbb\xbfa\r\nb\rc\r\r\nd\0\n\re\r"

    class Chunked(io.BytesIO):
        def read(self, size=-1):
            return super().read(chunk)

    counter = text_lines.MarkCounter(Chunked(data))
    assert b"".join(iter(lambda: counter.read(chunk), b"")) == data
    assert counter.marks == {"bom": True, "lone_cr": 4, "nul": 1}


@pytest.mark.slow
def test_cr_only_member_of_an_archive_is_warned(tmp_path, capsys):
    import json
    import tarfile
    src = _write(tmp_path / "mac.en", b"one two\rthree four\r")
    tgt = _write(tmp_path / "u.zh", "\u4e00\n".encode())
    archive = tmp_path / "c.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(src, "c/mac.en")
        tar.add(tgt, "c/u.zh")
    out = tmp_path / "out"
    code, _, err = _main(capsys, "--train_source", "%s!c/mac.en" % archive, "--train_target",
                         "%s!c/u.zh" % archive, "--output_dir", out, "--vocab_type", "word",
                         "--vocab_size", 20, *FLAGS)
    assert code == 0, err
    assert "c/mac.en: 2 carriage returns" in err
    summary = json.loads((out / "p.datagen_summary.json").read_text())
    (dataset,) = summary["splits"]["train"]["datasets"].values()
    assert len(dataset["warnings"]) == 1


@pytest.mark.slow
def test_disk_full_while_writing_the_marker_leaves_a_failed_summary(tmp_path, capsys,
                                                                     monkeypatch):
    import errno
    import json
    from transforms.storage import file_io
    src, tgt = _corpus(tmp_path / "data")
    out = tmp_path / "out"
    real = file_io.write_bytes_atomically

    def full_at_the_marker(path, data, stores=None):
        if path.endswith(".DATAGEN_COMPLETE"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, data, stores)

    monkeypatch.setattr(file_io, "write_bytes_atomically", full_at_the_marker)
    _one_line_error(capsys, ["--train_source", src, "--train_target", tgt, "--output_dir", out,
                             "--vocab_type", "word", "--vocab_size", 50] + FLAGS,
                    "No space left on device", str(out))
    assert not os.path.exists(out / "p.DATAGEN_COMPLETE")
    summary = json.loads((out / "p.datagen_summary.json").read_text())
    assert summary["status"] == "failed" and "No space left" in summary["error"]


@pytest.mark.slow
def test_disk_full_with_worker_processes_prints_one_line(tmp_path, capfd, small_disk):
    from datagen_helpers import DIRECT_MP2, with_t2t_vocab
    out = small_disk / "out"
    src, tgt = _sample_files(tmp_path, 7000)
    with_t2t_vocab(out, problem="b")
    code = datagen.main([str(a) for a in ["--train_source", src, "--train_target", tgt,
                                          "--output_dir", out, "--problem", "b"] + DIRECT_MP2])
    err = capfd.readouterr().err
    assert code == 2, err
    errors = [line for line in err.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and "No space left on device" in errors[0], err
    assert "Traceback" not in err, err


def test_a_pattern_matching_only_own_outputs_is_an_error(tmp_path):
    from pipeline.driver.datasets import expand_listing as _expand
    from pipeline.runtime.runners import DatagenError
    _write(tmp_path / "vocab.p.8192.subwords.en", b"'a_'\n")
    with pytest.raises(DatagenError, match="matches only files this job writes"):
        _expand(str(tmp_path / "*.en"), "train_source", str(tmp_path))


@pytest.mark.slow
def test_disk_full_on_the_command_line_prints_one_line(tmp_path, small_disk):
    """As a user runs it: a process of its own, whose logging is not pytest's (Beam's DoFn
    error log with its traceback would reach the console there)."""
    import subprocess
    import sys
    from datagen_helpers import with_t2t_vocab
    root = REPO_ROOT
    out = small_disk / "out"
    src, tgt = _sample_files(tmp_path, 7000)
    with_t2t_vocab(out, problem="b")
    run = subprocess.run(
        [sys.executable, "-m", "pipeline.datagen", "--train_source", src, "--train_target",
         tgt, "--output_dir", str(out), "--problem", "b", "--runner", "FnApiRunner"],
        cwd=root, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=root))
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    errors = [line for line in run.stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and "No space left on device" in errors[0], run.stderr


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
    from transforms.file_scan import _ScanFileFn
    from transforms.storage.object_stores import StoreSettings
    scan = _ScanFileFn(100, StoreSettings())
    scan.setup()
    ((path, facts),) = list(scan.process(str(tmp_path / "gone.en")))
    assert facts["error"] == "%s: cannot be read (No such file or directory)" % path


@pytest.mark.slow
def test_utf16_without_bom_is_read_as_t2t_reads_it_with_a_warning(tmp_path, capsys):
    import json
    src = _write(tmp_path / "u.en", "hello world\nsecond line\n".encode("utf-16-le"))
    tgt = _write(tmp_path / "u.zh", "\u4e00\n\u4e8c\n\u4e09\n".encode())
    out = tmp_path / "out"
    code, _, err = _main(capsys, "--train_source", src, "--train_target", tgt, "--output_dir",
                         out, "--vocab_size", 100, *FLAGS)
    assert code == 0, err
    assert "u.en: 24 NUL bytes" in err and "UTF-16 or UTF-32 text?" in err
    summary = json.loads((out / "p.datagen_summary.json").read_text())
    assert_books_balance(summary)
    assert summary["splits"]["train"]["pairs_read"] == 3  # T2T's reader: 3 lines


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".tgz", ".tar.xz", ".zip"])
def test_cut_archive_through_the_job(tmp_path, capsys, suffix):
    import tarfile
    import zipfile
    src, tgt = _corpus(tmp_path / "data", lines=400)
    archive = tmp_path / ("c" + suffix)
    if suffix == ".zip":
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
            z.write(src, "a.en")
            z.write(tgt, "a.zh")
    else:
        with tarfile.open(archive, "w:gz" if suffix == ".tgz" else "w:xz") as tar:
            tar.add(src, "a.en")
            tar.add(tgt, "a.zh")
    data = archive.read_bytes()
    archive.write_bytes(data[:len(data) * 2 // 3])
    out = tmp_path / "out"
    _one_line_error(capsys, ["--train_source", "%s!a.en" % archive, "--train_target",
                             "%s!a.zh" % archive, "--output_dir", out, "--vocab_type", "word",
                             "--vocab_size", 50] + FLAGS, "c" + suffix)
    _no_output(out)
