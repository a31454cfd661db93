"""Issue 33, points 3 and 7: an output marked complete is checked against its summary, and
the tools fail fast on a store they cannot reach.

- A shard cut short at a record boundary (a partial copy or sync), a shard removed, a byte
  changed without changing the size: `inspect` exits 2 with one line naming the shard, the
  reader's `complete_output_files` raises, a rerun redoes the output (byte-identical). Sizes
  come from one listing; the crc32c and record count only with `--verify_checksums` /
  `verify_checksums=True`. On local disk and on S3 (moto_server).
- An output written before sizes were recorded is read as before (names only).
- `inspect` and the reader against an endpoint where nothing listens: one line, exit 2 (the
  reader: StoreUnreachableError), well within 90 s (Beam's own retries take 8.5 minutes).
"""

import json
import os
import subprocess
import sys

import google_crc32c
import pytest

from bad_input_files import FLAGS, corpus
from object_store_servers import BUCKET, DroppingEndpoint
from pipeline import datagen
from pipeline.tools import inspect, reader
from transforms.formats.tfrecord_framing import read_records
from transforms.storage.object_stores import S3_ATTEMPTS

pytestmark = pytest.mark.slow

SHARD = "p-train-00000-of-00002"
ARGS = ["--vocab_type", "word", "--vocab_size", "50"] + FLAGS


def _first_records_end(data, keep):
    """The byte offset just after the first `keep` records of TFRecord bytes `data`."""
    import io
    return sum(16 + len(r) for r in list(read_records(io.BytesIO(data)))[:keep])


def _inspect(capsys, out, *extra):
    code = inspect.main([out, "--num_records", "1"] + list(extra))
    return code, capsys.readouterr().err.strip().splitlines()


def _one_error_naming_the_shard(code, err, what):
    assert code == 2 and len(err) == 1, err
    assert SHARD in err[0] and what in err[0], err


def _local_job(tmp_path, capsys):
    src, tgt = corpus(tmp_path / "data", lines=60)
    out = str(tmp_path / "out")
    argv = ["--train_source", src, "--train_target", tgt, "--output_dir", out] + ARGS
    assert datagen.main(argv) == 0
    capsys.readouterr()
    return out, argv


def test_a_cut_short_shard_is_refused_and_redone_on_local_disk(tmp_path, capsys):
    out, argv = _local_job(tmp_path, capsys)
    path = os.path.join(out, SHARD)
    with open(path, "rb") as f:
        whole = f.read()
    summary = json.load(open(os.path.join(out, "p.datagen_summary.json")))
    recorded = {s["name"]: s for s in summary["splits"]["train"]["shards"]}[SHARD]
    assert recorded["bytes"] == len(whole)
    assert recorded["crc32c"] == google_crc32c.Checksum(whole).hexdigest().decode()
    assert recorded["records"] >= 2
    with open(path, "wb") as f:  # a partial copy: the first record only
        f.write(whole[:_first_records_end(whole, 1)])
    _one_error_naming_the_shard(*_inspect(capsys, out), "the summary records %d" % len(whole))
    with pytest.raises(reader.IncompleteOutputError, match=SHARD):
        reader.complete_output_files(out, "train")
    assert datagen.main(argv) == 0
    assert "%s %d bytes, the summary records %d (cut short or changed since the run): " \
        "redoing it" % (SHARD, _first_records_end(whole, 1), len(whole)) in \
        capsys.readouterr().err
    with open(path, "rb") as f:
        assert f.read() == whole
    assert _inspect(capsys, out)[0] == 0
    assert len(reader.complete_output_files(out, "train", verify_checksums=True)) == 2


def test_a_changed_byte_is_found_by_the_checksum_check_only(tmp_path, capsys):
    out, argv = _local_job(tmp_path, capsys)
    path = os.path.join(out, SHARD)
    with open(path, "r+b") as f:
        f.seek(20)  # inside the first record's data: same size, other bytes
        byte = f.read(1)
        f.seek(20)
        f.write(bytes([byte[0] ^ 0x01]))
    assert _inspect(capsys, out, "--num_records", "0")[0] == 0  # one listing: sizes agree
    _one_error_naming_the_shard(*_inspect(capsys, out, "--verify_checksums"), "crc32c")
    assert reader.complete_output_files(out, "train")  # sizes agree
    with pytest.raises(reader.IncompleteOutputError, match="crc32c"):
        reader.complete_output_files(out, "train", verify_checksums=True)


def test_a_removed_shard_is_named(tmp_path, capsys):
    out, _ = _local_job(tmp_path, capsys)
    os.unlink(os.path.join(out, SHARD))
    _one_error_naming_the_shard(*_inspect(capsys, out), "shard missing")
    with pytest.raises(reader.IncompleteOutputError, match="shard missing"):
        reader.complete_output_files(out, "train")


def test_an_output_moved_as_a_whole_is_complete_where_it_lands(tmp_path, capsys):
    """Issue 45, item 5: moving a complete output directory and rerunning it into the new
    place does nothing (it used to warn that the vocab files were missing, then redo the
    output reusing those very files); the tools read it there; a file really gone is named
    with what is wrong, and the output redone."""
    out, argv = _local_job(tmp_path, capsys)
    moved = str(tmp_path / "moved")
    os.rename(out, moved)
    argv = argv[:argv.index("--output_dir") + 1] + [moved] + argv[argv.index(
        "--output_dir") + 2:]
    assert datagen.main(argv) == 0
    captured = capsys.readouterr()
    assert "WARNING" not in captured.err and "pass 1" not in captured.err, captured.err
    assert "nothing to do (written in %s: moved or copied here as a whole)" % out \
        in captured.err, captured.err
    assert "output: %s" % moved in captured.out
    assert _inspect(capsys, moved)[0] == 0
    assert len(reader.complete_output_files(moved, "train")) == 2
    vocab = [n for n in os.listdir(moved) if n.startswith("vocab.")][0]
    os.remove(os.path.join(moved, vocab))
    assert datagen.main(argv) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "WARNING" in line]
    assert len(warnings) == 1 and "%s missing (the summary lists %s)" % (
        vocab, os.path.join(moved, vocab)) in warnings[0], warnings
    assert os.path.exists(os.path.join(moved, vocab))


def test_an_output_without_recorded_sizes_reads_as_before(tmp_path, capsys):
    out, argv = _local_job(tmp_path, capsys)
    summary_path = os.path.join(out, "p.datagen_summary.json")
    summary = json.load(open(summary_path))
    for split in summary["splits"].values():
        for shard in split["shards"]:
            del shard["bytes"], shard["crc32c"]
    with open(summary_path, "w") as f:
        json.dump(summary, f)
    path = os.path.join(out, SHARD)
    with open(path, "rb") as f:
        whole = f.read()
    with open(path, "wb") as f:
        f.write(whole[:_first_records_end(whole, 1)])
    assert _inspect(capsys, out, "--verify_checksums")[0] == 0  # names only, as before
    assert len(reader.complete_output_files(out, "train", verify_checksums=True)) == 2
    assert datagen.main(argv) == 0
    assert "nothing to do" in capsys.readouterr().err


def test_shards_not_as_recorded_on_s3(s3, tmp_path, capsys):
    client = s3.client()
    src, tgt = corpus(tmp_path / "data", lines=60)
    for name in (src, tgt):
        with open(name, "rb") as f:
            client.put_object(Bucket=BUCKET, Key="cmp/in/" + os.path.basename(name),
                              Body=f.read())
    out = "s3://%s/cmp/out" % BUCKET
    argv = ["--train_source", "s3://%s/cmp/in/a.en" % BUCKET, "--train_target",
            "s3://%s/cmp/in/a.zh" % BUCKET, "--output_dir", out] + ARGS + s3.beam_flags()
    assert datagen.main(argv) == 0
    capsys.readouterr()
    key = "cmp/out/" + SHARD
    whole = client.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    flags = s3.beam_flags()

    client.put_object(Bucket=BUCKET, Key=key, Body=whole[:_first_records_end(whole, 1)])
    _one_error_naming_the_shard(*_inspect(capsys, out, *flags), "the summary records")
    with pytest.raises(reader.IncompleteOutputError, match=SHARD):
        reader.complete_output_files(out, "train", flags=flags)
    assert datagen.main(argv) == 0
    assert "%s %d bytes, the summary records %d (cut short or changed since the run): " \
        "redoing it" % (SHARD, _first_records_end(whole, 1), len(whole)) in \
        capsys.readouterr().err
    assert client.get_object(Bucket=BUCKET, Key=key)["Body"].read() == whole

    changed = whole[:20] + bytes([whole[20] ^ 0x01]) + whole[21:]
    client.put_object(Bucket=BUCKET, Key=key, Body=changed)
    assert _inspect(capsys, out, "--num_records", "0", *flags)[0] == 0
    _one_error_naming_the_shard(*_inspect(capsys, out, "--verify_checksums", *flags),
                                "crc32c")
    with pytest.raises(reader.IncompleteOutputError, match="crc32c"):
        reader.complete_output_files(out, "train", verify_checksums=True, flags=flags)

    client.delete_object(Bucket=BUCKET, Key=key)
    _one_error_naming_the_shard(*_inspect(capsys, out, *flags), "shard missing")
    with pytest.raises(reader.IncompleteOutputError, match="shard missing"):
        reader.complete_output_files(out, "train", flags=flags)


# -- point 7: a store nobody answers -----------------------------------------------------------

def _inspect_process(args, env=None):
    """(exit status, stderr lines) of `python -m pipeline.tools.inspect ARGS`."""
    proc = subprocess.run([sys.executable, "-m", "pipeline.tools.inspect"] + args,
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, **(env or {})))
    return proc.returncode, proc.stderr.strip().splitlines()


def test_inspect_against_an_s3_endpoint_nobody_answers_is_one_line_soon():
    """`inspect` and the reader ask the store with a probe of short timeouts and few
    attempts (`ObjectStores.probe`), not with the job's client, which tries S3_ATTEMPTS
    times over a minute or two: judged by the connections the endpoint saw."""
    with DroppingEndpoint() as store:
        flags = ["--s3_endpoint_url", store.endpoint, "--s3_access_key_id", "k",
                 "--s3_secret_access_key", "s", "--s3_region_name", "us-east-1"]
        code, err = _inspect_process(["s3://bucket/out"] + flags)
        assert code == 2 and len(err) == 1, err
        assert "cannot reach s3://bucket/out" in err[0] and store.endpoint in err[0], err
        assert 0 < store.connections < S3_ATTEMPTS
        seen = store.connections
        with pytest.raises(reader.StoreUnreachableError, match="cannot reach s3://bucket/out"):
            reader.complete_output_files("s3://bucket/out", flags=flags)
        assert 0 < store.connections - seen < S3_ATTEMPTS


def test_inspect_against_a_gcs_endpoint_nobody_answers_is_one_line_soon(monkeypatch):
    """The probe retries for 15 s (its retry's deadline, which the line names), not for
    google-cloud-storage's default 120 s."""
    with DroppingEndpoint() as store:
        code, err = _inspect_process(["gs://bucket/out"], {"STORAGE_EMULATOR_HOST":
                                                           store.endpoint})
        assert code == 2 and len(err) == 1, err
        assert "cannot reach gs://bucket/out: Timeout of 15.0s exceeded" in err[0], err
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", store.endpoint)
        with pytest.raises(reader.StoreUnreachableError,
                           match="cannot reach gs://bucket/out: Timeout of 15.0s exceeded"):
            reader.complete_output_files("gs://bucket/out")
