"""Issue 22, text that is not what it seems (README, "Bad input"): NUL characters, UTF-16 and
UTF-32, every compression Beam reads cut or corrupt (also inside archives), old Mac line ends
and byte-order marks. Each ends in exit 0 with balanced books and T2T's reading (warned), or
exit 2 with one ERROR line naming the file, never a traceback or a shorter file. Runs are
in-process (FnApiRunner) on a few lines."""

import io

import pytest

from bad_input_files import FLAGS, corpus as _corpus, write as _write
from datagen_helpers import assert_books_balance, run_datagen
from datagen_helpers import (assert_no_output as _no_output, main_errors as _main,
                             one_line_error as _one_line_error)


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
    from transforms.prepare.materialize import open_member
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
