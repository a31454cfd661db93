"""Many language pairs on a dask.distributed cluster with everything on S3: the corpora file,
its inputs (relative paths resolved against the file's own s3:// directory) and the output
on a real S3 server (moto, `s3` fixture), the passes on a local Dask cluster of 2 workers
(tests/dask_cluster.py). One job, compared byte for byte with the same corpora run locally
on FnApiRunner; then the mixture reader reads the pairs back from the bucket."""

import collections
import json
import os

import pytest

from dask_cluster import running_cluster
from object_store_servers import BUCKET
from pipeline import datagen
from many_pairs_corpora import CORPORA, corpora_file

pytestmark = pytest.mark.slow

FLAGS = ["--problem", "p", "--vocab_size", "300", "--num_train_shards", "4"]


def test_three_pairs_on_dask_from_and_to_s3_match_local_disk(s3, tmp_path):
    local_dir = tmp_path / "data"
    corpora = corpora_file(str(local_dir), [c[:5] + (min(c[5], 40),) + c[6:] for c in CORPORA])
    local_out = tmp_path / "out"
    expected = datagen.run(["--corpora", corpora, "--output_dir", str(local_out),
                            "--runner", "FnApiRunner"] + FLAGS)
    client = s3.client()
    for base, _, names in os.walk(local_dir):
        for name in names:
            path = os.path.join(base, name)
            with open(path, "rb") as f:
                client.put_object(Bucket=BUCKET, Key="many/" + os.path.relpath(path, local_dir),
                                  Body=f.read())
    out = "s3://%s/many-out" % BUCKET
    (tmp_path / "dask").mkdir()
    with running_cluster(tmp_path / "dask") as cluster:
        before = cluster.executed()
        summary = datagen.run(["--corpora", "s3://%s/many/corpora.yaml" % BUCKET,
                               "--output_dir", out, "--runner", "DaskRunner",
                               "--dask_client_address", cluster.address]
                              + FLAGS + s3.beam_flags())
        after = cluster.executed()
    assert len(after) == 2 and all(after[w] > before.get(w, 0) for w in after)
    assert summary["runner"] == "DaskRunner"
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix="many-out/")["Contents"]
    objects = {o["Key"][len("many-out/"):]: client.get_object(Bucket=BUCKET, Key=o["Key"])[
        "Body"].read() for o in listed}
    local = {}
    for base, _, names in os.walk(local_out):
        for name in names:
            with open(os.path.join(base, name), "rb") as f:
                local[os.path.relpath(os.path.join(base, name), local_out)] = f.read()
    assert sorted(objects) == sorted(local)
    for name, data in local.items():
        if name.endswith((".datagen_summary.json", ".DATAGEN_COMPLETE", ".fingerprint.json")):
            continue
        got = objects[name]
        if name.startswith("rejects/"):  # the rejects name their input files
            got = got.replace(b"s3://%s/many/" % BUCKET.encode(), str(local_dir).encode() + b"/")
        assert got == data, name
    for key in ("splits", "lang_tags"):
        assert json.dumps(summary[key]).replace("s3://%s/many-out" % BUCKET, "OUT").replace(
            "s3://%s/many" % BUCKET, "IN") == json.dumps(expected[key]).replace(
                str(local_out), "OUT").replace(str(local_dir), "IN")
    assert summary["vocab"]["shared"]["mix"]["languages"] == expected["vocab"]["shared"][
        "mix"]["languages"]

    from pipeline.tools.mixture import Mixture
    from pipeline.tools import reader
    reader.file_system_options(s3.beam_flags())
    mixed = Mixture(out, temperature=1.0, seed=4, num_records=400, flags=s3.beam_flags())
    counts = collections.Counter(pair for pair, _ in mixed.records())
    assert set(counts) == {"en-de", "en-vi", "en-zh"} and sum(counts.values()) == 400
