"""--output_format text / text.gz: the cleaned pairs as line-aligned text, a shard's sides in
`.src` and `.tgt`. With --keep_order the files are OpusFilter 3.3.1's own output for the same
filters, byte for byte (tests/opusfilter_reference runs the real OpusFilter); shuffled, they
hold the same pairs, in an order the seed decides; text.gz is the same text gzipped with mtime
0 (a rerun is byte-identical); no vocabulary is learnt; the readers refuse a text output in
one line, inspect shows it.
"""

import gzip
import os

import pytest
import yaml

from datagen_helpers import run_datagen
from opusfilter_reference import FILTER_CHAIN, opusfilter_drops
from pipeline.tools import inspect, reader
from repo_paths import DATA_DIR

pytestmark = pytest.mark.slow

NOISY = os.path.join(DATA_DIR, "noisy-enzh", "train-a")
FLAGS = ["--problem", "p", "--vocab_size", "1000", "--num_train_shards", "1"]
SHARD = "p-train-00000-of-00001"


def _filters(tmp_path):
    path = tmp_path / "filters.yaml"
    path.write_text(yaml.safe_dump({"filters": FILTER_CHAIN}))
    return str(path)


def _job(out, tmp_path, *extra):
    run_datagen(out, NOISY + ".en", NOISY + ".zh", "--filters", _filters(tmp_path), *FLAGS,
                *extra)


def _bytes(path):
    with open(path, "rb") as f:
        return f.read()


@pytest.fixture(scope="module")
def opusfilter_output(tmp_path_factory):
    """OpusFilter's own filtered files of the noisy corpus (source, target)."""
    work = tmp_path_factory.mktemp("opus")
    opusfilter_drops(work, NOISY + ".en", NOISY + ".zh", {"f": FILTER_CHAIN})
    return str(work / "f.0"), str(work / "f.1")


def test_keep_order_writes_opusfilters_own_files(opusfilter_output, tmp_path):
    out = tmp_path / "out"
    _job(out, tmp_path, "--output_format", "text", "--keep_order")
    theirs = [_bytes(p) for p in opusfilter_output]
    assert theirs[0].count(b"\n") > 100  # OpusFilter kept lines, and dropped some
    assert _bytes(out / (SHARD + ".src")) == theirs[0]
    assert _bytes(out / (SHARD + ".tgt")) == theirs[1]
    assert not [name for name in os.listdir(out) if "vocab." in name]  # no vocabulary pass
    report = inspect.inspect(str(out), num_records=1)
    first = theirs[0].split(b"\n")[0].decode("utf-8")
    assert report["records"][0]["source"] == first
    with pytest.raises(ValueError, match="line-aligned text"):
        reader.make_dataset(str(out / "p-train*"), 4, mode="t2t")


def test_shuffled_text_holds_opusfilters_pairs_in_the_seeds_order(opusfilter_output,
                                                                   tmp_path):
    theirs = list(zip(*(_bytes(p).splitlines() for p in opusfilter_output)))
    orders = []
    for name, seed in (("a", "1"), ("b", "1"), ("c", "2")):
        out = tmp_path / name
        _job(out, tmp_path, "--output_format", "text", "--seed", seed)
        ours = list(zip(*(_bytes(out / (SHARD + side)).splitlines()
                          for side in (".src", ".tgt"))))
        assert sorted(ours) == sorted(theirs)
        orders.append(ours)
    assert orders[0] == orders[1] and orders[0] != orders[2] and orders[0] != theirs


def test_text_gz_is_the_text_gzipped_and_reruns_byte_identical(tmp_path):
    plain, packed = tmp_path / "plain", tmp_path / "gz"
    _job(plain, tmp_path, "--output_format", "text")
    _job(packed, tmp_path, "--output_format", "text.gz")
    first = [_bytes(packed / (SHARD + side + ".gz")) for side in (".src", ".tgt")]
    for side, data in zip((".src", ".tgt"), first):
        assert gzip.decompress(data) == _bytes(plain / (SHARD + side))
        assert data[4:8] == b"\0\0\0\0"  # mtime 0
    _job(packed, tmp_path, "--output_format", "text.gz", "--overwrite")
    assert [_bytes(packed / (SHARD + side + ".gz")) for side in (".src", ".tgt")] == first
