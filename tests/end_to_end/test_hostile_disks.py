"""Issue 22, disks (README, "Bad input"): a disk that fills up while the job writes (a real
small tmpfs; in-process, on worker processes and from the command line), a full disk at the
marker, a failed atomic write, a storage error recognized in every shape, a rerun over a
complete output on a read-only disk. Each ends in exit 2 with one ERROR line and the previous
output untouched, or exit 0 where there is nothing to write."""

import glob
import os

import pytest

from bad_input_files import word_job as _word_job, write as _write
from datagen_helpers import shard_files
from datagen_helpers import main_errors as _main, one_line_error as _one_line_error
from pipeline import datagen
from repo_paths import REPO_ROOT, SAMPLE_DATA


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
    out = read_only_disk / "out"
    argv = _word_job(tmp_path / "data", out)
    code, _, err = _main(capsys, *argv)
    assert code == 0, err
    subprocess.run(["mount", "-o", "remount,ro", str(read_only_disk)], check=True)
    code, _, err = _main(capsys, *argv)
    assert code == 0, err
    _one_line_error(capsys, argv + ["--seed", "3"], "holds a complete output of other")


@pytest.mark.slow
def test_disk_full_while_writing_the_marker_leaves_a_failed_summary(tmp_path, capsys,
                                                                     monkeypatch):
    import errno
    import json
    from transforms.storage import file_io
    out = tmp_path / "out"
    real = file_io.write_bytes_atomically

    def full_at_the_marker(path, data, stores=None):
        if path.endswith(".DATAGEN_COMPLETE"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, data, stores)

    monkeypatch.setattr(file_io, "write_bytes_atomically", full_at_the_marker)
    _one_line_error(capsys, _word_job(tmp_path / "data", out), "No space left on device",
                    str(out))
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
