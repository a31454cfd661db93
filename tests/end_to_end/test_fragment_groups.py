"""Issue 49, item 2 and its temporary-disk check: an encode worker gathers its chunks' runs into
one fragment file per shard (`transforms/shards/fragment_groups.py`), so the objects a job writes
grow with workers x shards, not with chunks x shards; a shard's fragment files go once the shard
is written, so the work files never hold the output twice. Both against the real thing: moto's
own request recorder counts the objects, and the work directory is measured on events (each
shard written, before its fragments go), never on a timer. The shards stay byte-identical to a
run that writes a fragment file per chunk, the old layout's.
"""

import os

import pytest

from datagen_helpers import FNAPI, output_bytes, small_corpus
from object_store_servers import BUCKET
from pipeline import datagen
from transforms.encode import encode_pairs
from transforms.shards import fragment_groups
from transforms.shards.record_formats import DEFAULT_FORMAT, record_format

pytestmark = pytest.mark.slow

LINES, CHUNK_LINES = 2000, 50
CHUNKS = LINES // CHUNK_LINES  # 40
SHARDS = 10
WORKERS = 1  # FnApiRunner in the test's process: one encode bundle
FLAGS = ["--problem", "p", "--vocab_size", "1000", "--num_train_shards", str(SHARDS),
         "--encode_chunk_lines", str(CHUNK_LINES)]
PER_CHUNK = ["--fragment_group_mb", "0.0001"]  # each chunk's runs a file of their own


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return small_corpus(tmp_path_factory.mktemp("in"), LINES)


def _argv(out, corpus, *extra):
    return (["--train_source", corpus[0], "--train_target", corpus[1], "--output_dir",
             str(out)] + FLAGS + FNAPI + list(extra))


def _written_keys(requests):
    """The keys of the objects the requests wrote: whole PUTs (not the multipart parts) and
    completed multipart uploads."""
    keys = []
    for method, url, headers in requests:
        path, _, query = url.partition("?")
        key = path.split("/%s/" % BUCKET, 1)[-1]
        if method == "PUT" and "partNumber" not in query:
            keys.append(key)
        elif method == "POST" and "uploadId" in query:
            keys.append(key)
    return keys


def test_objects_written_grow_with_workers_x_shards_not_with_chunks(s3, corpus, tmp_path):
    out = "s3://%s/groups/out" % BUCKET
    with s3.record() as requests:
        assert datagen.main(_argv(out, corpus, *s3.beam_flags())) == 0
    written = _written_keys(requests)
    fragments = [k for k in written if "/fragments/" in k]
    # one file per shard the bundle's records reach; with a file per chunk (main) 400
    assert 0 < len(fragments) <= WORKERS * SHARDS, fragments
    manifests = [k for k in written if "/chunks/" in k]
    assert len(manifests) <= WORKERS, manifests  # a manifest per group, not per chunk
    # the rest (88 here): the vocab pass's work files and marks, the encode pass's results,
    # the shards and their copies into place, the markers: a constant of the job, not of
    # its chunks (main wrote 400 fragments and 40 manifests besides)
    assert len(written) <= WORKERS * SHARDS + 100, sorted(written)

    client = s3.client()
    got = {k[len("groups/out/"):]: client.get_object(Bucket=BUCKET, Key=k)["Body"].read()
           for k in (o["Key"] for o in client.list_objects_v2(
               Bucket=BUCKET, Prefix="groups/out/p-train-")["Contents"])}
    per_chunk = tmp_path / "per-chunk"
    assert datagen.main(_argv(per_chunk, corpus, *PER_CHUNK)) == 0
    expected = {k: v for k, v in output_bytes(per_chunk).items() if k.startswith("p-train-")}
    assert len(expected) == SHARDS and got == expected


def _bytes_under(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path)
               for f in files if os.path.exists(os.path.join(d, f)))


def test_work_files_peak_below_the_output_plus_one_shard(corpus, tmp_path, monkeypatch):
    """Sampled as each shard is written, before its fragments go: the fragments of the shards
    still to write plus the shards written. On main every fragment stayed to the end: twice
    the output at the last shard."""
    out = tmp_path / "out"
    work = out / ".datagen-work"
    samples = []
    shard_format = type(record_format(DEFAULT_FORMAT))
    write_shard = shard_format.write_shard

    def sampled(self, path, *args, **kwargs):
        written = write_shard(self, path, *args, **kwargs)
        fragments = sum(_bytes_under(d) for d, _, _ in os.walk(work)
                        if os.path.basename(d) == "fragments")
        samples.append(fragments + _bytes_under(os.path.dirname(path)))
        return written
    monkeypatch.setattr(shard_format, "write_shard", sampled)
    assert datagen.main(_argv(out, corpus)) == 0
    shards = [v for k, v in output_bytes(out).items() if k.startswith("p-train-")]
    assert len(samples) >= SHARDS  # the dev split's shard too
    output, largest = sum(len(v) for v in shards), max(len(v) for v in shards)
    assert max(samples) <= output + 2 * largest, (max(samples), output, largest)


def test_a_group_is_written_at_a_share_of_the_pass_so_a_kill_loses_little(
        corpus, tmp_path, monkeypatch):
    """A worker writes its group (and the manifest of its chunks) once the group holds a
    GROUPS_PER_PASS-th of the pass's input bytes, not only at --fragment_group_mb or the
    bundle's end: the manifests, recorded as they are written, follow the chunks one or two
    at a time here (each chunk is a 40th of this input, its records about a 64th; the floor
    for small jobs lowered so this small one shows it). On main the one bundle wrote one manifest of all 40
    chunks at its end: a kill before then kept nothing. The shards are the same bytes."""
    monkeypatch.setattr(fragment_groups, "MIN_FLUSH_BYTES", 1)
    written = []
    write = encode_pairs.write_manifest

    def recorded(finished, *args):
        written.append([chunk["first_line"] for chunk, _, _ in finished])
        return write(finished, *args)
    monkeypatch.setattr(encode_pairs, "write_manifest", recorded)
    out = tmp_path / "out"
    assert datagen.main(_argv(out, corpus)) == 0
    train = [first for manifest in written for first in manifest if first is not None]
    assert sorted(train) == sorted(set(train)) and len(train) == CHUNKS, written
    assert max(len(manifest) for manifest in written) <= 2, written

    monkeypatch.undo()
    grouped = tmp_path / "one-group"
    assert datagen.main(_argv(grouped, corpus)) == 0
    assert output_bytes(out) == output_bytes(grouped)
