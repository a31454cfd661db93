"""Issue 33, point 4: classes of input that ended in a traceback or a silently wrong output.
Each ends in one ERROR line naming the file with exit 2, or in the right result (README,
"Bad input"): inputs changed, truncated or deleted while the job runs, file names that are
not UTF-8, inputs that are not regular files (a pipe, a FIFO, a device), an --output_dir with
glob characters, an archive holding a member twice, a corrupt vocab fingerprint file."""

import io
import json
import os
import subprocess
import sys
import tarfile
import threading

import pytest

from bad_input_files import FLAGS, corpus as _corpus, write as _write
from datagen_helpers import main_errors as _main, one_line_error as _one_line_error
from pipeline.driver import fingerprint
from repo_paths import REPO_ROOT

WORD = ["--vocab_type", "word", "--vocab_size", "50"]


def _argv(src, tgt, out, *extra):
    return ["--train_source", src, "--train_target", tgt, "--output_dir", out] + WORD + \
        FLAGS + list(extra)


def _pairs_read(out):
    with open(os.path.join(out, "p.datagen_summary.json")) as f:
        return json.load(f)["splits"]["train"]["pairs_read"]


# -- inputs changed while the job runs -------------------------------------------------------
# The job reads its inputs more than once (pass 1 samples them, the encode pass reads them
# again). A change between the two, made here the moment the vocabularies are written (after
# pass 1, before the encode pass), must stop the job, naming the file.

@pytest.mark.slow
@pytest.mark.parametrize("change", ["appended", "truncated", "deleted", "rewritten"])
def test_an_input_changed_between_the_passes_stops_the_job_naming_it(
        tmp_path, capsys, monkeypatch, change):
    src, tgt = _corpus(tmp_path / "data")
    out = tmp_path / "out"
    written = fingerprint.write_sidecar

    def then_change(vocab_path, *args, **kwargs):
        written(vocab_path, *args, **kwargs)
        if not vocab_path.endswith(".en"):
            return
        if change == "appended":
            with open(src, "ab") as f:
                f.write(b"one more line\n")
        elif change == "truncated":
            os.truncate(src, os.path.getsize(src) // 2)
        elif change == "deleted":
            os.remove(src)
        else:  # same size, new bytes
            data = open(src, "rb").read()
            _write(src, data.replace(b"cat", b"dog"))
            os.utime(src, ns=(0, os.stat(src).st_mtime_ns + 10**9))

    monkeypatch.setattr(fingerprint, "write_sidecar", then_change)
    line = _one_line_error(capsys, _argv(src, tgt, out), "a.en")
    assert "changed while the job ran" in line or "deleted while the job ran" in line, line
    assert not os.path.exists(out / "p.DATAGEN_COMPLETE")
    assert not [n for n in os.listdir(out) if n.startswith("p-train")]


# -- file names that are not UTF-8 -----------------------------------------------------------
def test_a_file_name_that_is_not_utf8_is_refused_naming_it(tmp_path, capsys):
    """Names travel through Beam's string coder, the summary and the rejects file (UTF-8
    only): such a file is refused up front, named with its bytes escaped."""
    data = tmp_path / "data"
    _corpus(data)
    odd = os.fsdecode(os.path.join(os.fsencode(str(data)), b"caf\xe9"))
    os.rename(data / "a.en", odd + ".en")
    os.rename(data / "a.zh", odd + ".zh")
    out = tmp_path / "out"
    line = _one_line_error(capsys, _argv(data / "*.en", data / "*.zh", out), "caf\\xe9.en",
                           "not valid UTF-8")
    assert "\udce9" not in line
    assert not os.path.exists(out)


@pytest.mark.parametrize("lost", [("b.en",), ("b.zh", "c.en")], ids=["one", "one-each-side"])
def test_a_pattern_matching_a_dangling_link_is_one_line_never_fewer_pairs(
        tmp_path, capsys, lost):
    """Issue 42, item 2: `d/*.en` where d/b.en points at an unmounted disk ran to exit 0
    with the pairs of the other files only; with b.zh and c.en both dangling it paired b.en
    with c.zh. A link named in full said "no file matches"."""
    data = tmp_path / "d"
    data.mkdir()
    for stem in "abc":
        _write(data / (stem + ".en"), b"the cat %s\n" % stem.encode())
        _write(data / (stem + ".zh"), b"\xe7\x8c\xab %s\n" % stem.encode())
    for name in lost:
        os.remove(data / name)
        os.symlink("/mnt/unmounted/" + name, str(data / name))
    out = tmp_path / "out"
    first = sorted(lost, key=lambda n: n.endswith(".zh"))[0]  # sources are listed first
    line = _one_line_error(capsys, _argv(data / "*.en", data / "*.zh", out),
                           str(data / first), "dangling symbolic link", "/mnt/unmounted/")
    assert not os.path.exists(out)
    named = _argv(data / first, data / "a.zh", out)
    if first.endswith(".zh"):
        named = _argv(data / "a.en", data / first, out)
    line = _one_line_error(capsys, named, str(data / first), "dangling symbolic link")
    assert "no file matches" not in line and not os.path.exists(out)


# -- inputs that are not regular files -------------------------------------------------------
def _job(argv, **kwargs):
    """The job in its own process (a hang is a failure here, not a stuck test run)."""
    return subprocess.run([sys.executable, "-m", "pipeline.datagen"] + [str(a) for a in argv],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, **kwargs)


def _assert_refused(done, name, out):
    errors = [line for line in done.stderr.splitlines() if " ERROR " in line]
    assert done.returncode == 2, done.stderr[-3000:]
    assert len(errors) == 1 and name in errors[0] and "not a regular file" in errors[0], \
        done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert not os.path.exists(out)  # nothing stray: no directory, no vocab named after it


def _feed(path_or_fd, data):
    """Writes `data` into a pipe or FIFO from a thread, as a producer would."""
    def run():
        try:
            with open(path_or_fd, "wb") as f:
                f.write(data)
        except OSError:
            pass
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.slow
def test_a_fifo_input_is_refused_up_front(tmp_path):
    src, tgt = _corpus(tmp_path / "data")
    fifo = str(tmp_path / "data" / "fifo.en")
    os.mkfifo(fifo)
    _feed(fifo, open(src, "rb").read())
    out = tmp_path / "out"
    _assert_refused(_job(_argv(fifo, tgt, out)), "fifo.en", out)
    with open(fifo, "rb"):  # the job did not open it: the producer still waits
        pass


@pytest.mark.slow
def test_a_pipe_from_process_substitution_is_refused_up_front(tmp_path):
    src, tgt = _corpus(tmp_path / "data")
    read_end, write_end = os.pipe()
    try:
        _feed(write_end, open(src, "rb").read())
        out = tmp_path / "out"
        name = "/dev/fd/%d" % read_end
        _assert_refused(_job(_argv(name, tgt, out), pass_fds=(read_end,)), name, out)
    finally:
        os.close(read_end)


@pytest.mark.slow
def test_a_device_input_is_refused_up_front(tmp_path):
    _, tgt = _corpus(tmp_path / "data")
    out = tmp_path / "out"
    _assert_refused(_job(_argv("/dev/null", tgt, out)), "/dev/null", out)


# -- an --output_dir with glob characters ----------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", ["out[1]", "out*", "o?t"])
def test_an_output_dir_with_glob_characters_is_taken_literally(tmp_path, capsys, name):
    src, tgt = _corpus(tmp_path / "data")
    (tmp_path / "out1").mkdir()  # what `out[1]` would match as a glob
    out = tmp_path / name
    code, _, err = _main(capsys, *_argv(src, tgt, out))
    assert code == 0 and "Traceback" not in err, err
    assert _pairs_read(out) == 40
    assert (out / "p.DATAGEN_COMPLETE").exists()
    assert sorted(os.listdir(tmp_path / "out1")) == []
    code, _, err = _main(capsys, *_argv(src, tgt, out))
    assert code == 0 and "nothing to do" in err, err
    code, _, err = _main(capsys, *_argv(src, tgt, out, "--overwrite"))
    assert code == 0 and "Traceback" not in err, err
    assert _pairs_read(out) == 40 and not os.path.exists(out / ".datagen-work")


# -- an archive holding the same member twice ------------------------------------------------
def _tar(path, members):
    with tarfile.open(path, "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return str(path)


@pytest.mark.slow
def test_an_archive_member_named_twice_is_read_as_tar_extracts_it_the_last_copy(
        tmp_path, capsys):
    src, tgt = _corpus(tmp_path / "data")
    old = b"".join(b"stale line %d\n" % i for i in range(7))
    archive = _tar(tmp_path / "c.tar", [("c/a.en", old), ("c/a.zh", old),
                                        ("c/a.en", open(src, "rb").read()),
                                        ("c/a.zh", open(tgt, "rb").read())])
    out = tmp_path / "out"
    code, _, err = _main(capsys, *_argv(archive + "!c/a.en", archive + "!c/a.zh", out))
    assert code == 0 and "Traceback" not in err, err
    assert _pairs_read(out) == 40
    vocab = (out / "vocab.p.50.words.en").read_text()
    assert "stale" not in vocab and "cat" in vocab


# -- a corrupt vocab fingerprint file --------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", b"[]", b'{"flags": 3}', b""])
def test_a_corrupt_vocab_fingerprint_file_is_one_line(tmp_path, capsys, content):
    src, tgt = _corpus(tmp_path / "data")
    out = tmp_path / "out"
    code, _, err = _main(capsys, *_argv(src, tgt, out))
    assert code == 0, err
    os.remove(out / "p.DATAGEN_COMPLETE")
    sidecar = fingerprint.sidecar_path(str(out / "vocab.p.50.words.en"))
    _write(sidecar, content)
    line = _one_line_error(capsys, _argv(src, tgt, out), ".vocab.p.50.words.en.fingerprint.json")
    assert "--overwrite" in line
    code, _, err = _main(capsys, *_argv(src, tgt, out, "--overwrite"))
    assert code == 0, err
