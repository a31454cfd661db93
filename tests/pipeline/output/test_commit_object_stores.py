"""pipeline/output/commit on the real stores the tests start (moto_server, fake-gcs-server):
a shard over S3's single-copy limit is moved with a multipart copy (UploadPartCopy), as the
server's own request log shows, and every shard arrives byte-identical (issue 49, item 3).

S3 refuses a CopyObject of more than 5 GB; moto enforces no such limit, so the test lowers
ours (`StoreSettings.copy_limit`, `copy_part_bytes`) and reads what was sent in moto's
recorder. A 12 MiB shard then goes in three parts of 5 MiB (S3's smallest), a small one in
one CopyObject."""

import hashlib
import os

import pytest

from object_store_servers import BUCKET
from pipeline.output.commit import promote_outputs
from pipeline.output.layout import OutputLayout
from transforms.storage.object_stores import ObjectStores, StoreSettings

pytestmark = pytest.mark.slow  # a store server per module

MiB = 1024 * 1024
BIG = 12 * MiB + 12345  # three parts of 5 MiB: the last one short
SIZES = [BIG, 1000, 0, MiB // 2, 77]  # the rest under the lowered limit


def _shards(layout, put):
    """Puts a shard of each size of SIZES into the run's work directory with `put(path,
    bytes)`; returns their reports and {name: bytes}."""
    contents = {}
    for i, size in enumerate(SIZES):
        name = layout.shards.name("train", i, len(SIZES))
        contents[name] = hashlib.shake_256(name.encode()).digest(size) if size else b""
        put(layout.work("shards", name), contents[name])
    return [{"split": "train", "shard": i, "name": name} for i, name in
            enumerate(contents)], contents


def _key(path):
    return path.split("/", 3)[3]


def test_s3_commit_copies_a_shard_over_the_single_copy_limit_in_parts(s3):
    settings = StoreSettings(s3_endpoint_url=s3.endpoint, s3_access_key_id="test-key",
                             s3_secret_access_key="test-secret", s3_region_name="us-east-1",
                             copy_limit=MiB, copy_part_bytes=5 * MiB)
    stores = ObjectStores(settings)
    layout = OutputLayout("s3://%s/commit-out" % BUCKET, "p", 100, run_id="r1")
    client = s3.client()
    shards, contents = _shards(layout, lambda path, data: client.put_object(
        Bucket=BUCKET, Key=_key(path), Body=data))
    with s3.record() as requests:
        promote_outputs(layout, shards, [], stores)

    import boto3
    from botocore.config import Config
    reader = boto3.session.Session().client(  # moto's CRC32 of a multipart object is wrong
        "s3", endpoint_url=s3.endpoint, aws_access_key_id="test-key",
        aws_secret_access_key="test-secret", region_name="us-east-1",
        config=Config(response_checksum_validation="when_required"))
    for name, data in contents.items():
        got = reader.get_object(Bucket=BUCKET, Key="commit-out/" + name)["Body"].read()
        assert got == data, name
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix="commit-out/.datagen-work/")
    assert listed.get("KeyCount", 0) == 0  # moved: the sources are gone

    big = "/%s/commit-out/%s" % (BUCKET, list(contents)[0])
    to_big = [(method, url.split("?", 1)[-1] if "?" in url else "", headers)
              for method, url, headers in requests if url.split("?", 1)[0].endswith(big)]
    parts = [h for m, q, h in to_big if m == "PUT" and "partNumber=" in q]
    assert [m for m, q, _ in to_big if q.startswith("uploads")] == ["POST"]
    assert len(parts) == 3 and all("x-amz-copy-source" in {k.lower() for k in h}
                                   for h in parts)
    ranges = sorted(h.get("x-amz-copy-source-range") or h.get("X-Amz-Copy-Source-Range")
                    for h in parts)
    assert ranges == sorted(["bytes=0-%d" % (5 * MiB - 1),
                             "bytes=%d-%d" % (5 * MiB, 10 * MiB - 1),
                             "bytes=%d-%d" % (10 * MiB, BIG - 1)])
    assert [m for m, q, _ in to_big if "uploadId=" in q and m == "POST"] == ["POST"]
    # the small shards: one CopyObject each, no multipart upload
    for name in list(contents)[1:]:
        path = "/%s/commit-out/%s" % (BUCKET, name)
        sent = [(m, url, h) for m, url, h in requests if url.split("?", 1)[0].endswith(path)
                and m in ("PUT", "POST")]
        assert [(m, "?" in url, "x-amz-copy-source" in {k.lower() for k in h})
                for m, url, h in sent] == [("PUT", False, True)], name


def test_gcs_commit_moves_every_shard_byte_identical(gcs, monkeypatch):
    for name, value in gcs.env.items():
        monkeypatch.setenv(name, value)
    stores = ObjectStores(StoreSettings(gcs_project="emulator"))
    layout = OutputLayout("gs://%s/commit-out" % BUCKET, "p", 100, run_id="r1")
    bucket = gcs.client().bucket(BUCKET)
    shards, contents = _shards(layout, lambda path, data: bucket.blob(
        _key(path)).upload_from_string(data))
    promote_outputs(layout, shards, [], stores)
    for name, data in contents.items():
        assert bucket.blob("commit-out/" + name).download_as_bytes() == data, name
    assert list(bucket.list_blobs(prefix="commit-out/.datagen-work/")) == []
    assert os.environ["STORAGE_EMULATOR_HOST"] == gcs.endpoint


def test_the_commit_sends_copy_threads_copies_at_once(s3):
    """Seen by the event: a proxy holds each copy request until COPY_THREADS of them are held
    at once; copies made one after another would never get there (its hang guard then lets
    them through and `gathered` stays False)."""
    from object_store_servers import GatheringProxy
    from transforms.storage.object_stores import COPY_THREADS
    proxy = GatheringProxy(s3.port, "x-amz-copy-source", COPY_THREADS)
    try:
        stores = ObjectStores(StoreSettings(
            s3_endpoint_url=proxy.endpoint, s3_access_key_id="test-key",
            s3_secret_access_key="test-secret", s3_region_name="us-east-1"))
        layout = OutputLayout("s3://%s/parallel-out" % BUCKET, "p", 100, run_id="r1")
        client = s3.client()
        names = [layout.shards.name("train", i, 2 * COPY_THREADS) for i in range(2 * COPY_THREADS)]
        for name in names:
            client.put_object(Bucket=BUCKET, Key=_key(layout.work("shards", name)),
                              Body=name.encode())
        promote_outputs(layout, [{"split": "train", "shard": i, "name": name}
                                 for i, name in enumerate(names)], [], stores)
    finally:
        proxy.stop()
    assert proxy.gathered and proxy.most == COPY_THREADS
    for name in names:
        got = client.get_object(Bucket=BUCKET, Key="parallel-out/" + name)["Body"].read()
        assert got == name.encode()
