"""Issue 22: no input, flag or disk crashes the job, loses data silently or touches files it
does not own. One test per finding of the new-user report (README, "Bad input"): each ends in
exit 0 with balanced books, or exit 2 with one ERROR line naming the file, never a traceback.
Runs are in-process (FnApiRunner) on a few lines."""

import glob
import io
import os

import pytest

from datagen_helpers import assert_books_balance, run_datagen, shard_files
from pipeline import datagen

FLAGS = ["--problem", "p", "--num_train_shards", "2", "--runner", "FnApiRunner"]


def _write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def _main(capsys, *argv):
    """(exit status, the run's ERROR lines, its whole stderr)."""
    code = datagen.main([str(a) for a in argv])
    err = capsys.readouterr().err
    return code, [line for line in err.splitlines() if " ERROR " in line], err


def _one_line_error(capsys, argv, *names):
    code, errors, err = _main(capsys, *argv)
    assert code == 2, err
    assert len(errors) == 1, err
    for name in names:
        assert name in errors[0], errors[0]
    assert "Traceback" not in err
    return errors[0]


def _no_output(out, problem="p"):
    out = str(out)
    for split in ("train", "dev"):
        assert not shard_files(out, problem, split)
    assert not os.path.exists(os.path.join(out, problem + ".DATAGEN_COMPLETE"))


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
