"""--output_format text / text.gz: the cleaned pairs as line-aligned text, a shard's sides in
files ending with the languages (`.en` and `.zh`, `.en.gz` and `.zh.gz`: fairseq-preprocess's
`--trainpref {shard} --source-lang en --target-lang zh`, with several pairs each pair's own
shards). With --keep_order the files are OpusFilter 3.3.1's own output for the same
filters, byte for byte (tests/opusfilter_reference runs the real OpusFilter); shuffled, they
hold the same pairs, in an order the seed decides; text.gz is the same text gzipped with mtime
0 (a rerun is byte-identical); no vocabulary is learnt; the readers refuse a text output in
one line, inspect shows it (--verify_checksums too); a later run in another format or with
other languages replaces the files, and leaves a user's own files alone.
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
SIDES = (".en", ".zh")  # the languages, from the input files' extensions


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
    assert _bytes(out / (SHARD + ".en")) == theirs[0]
    assert _bytes(out / (SHARD + ".zh")) == theirs[1]
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
                          for side in SIDES)))
        assert sorted(ours) == sorted(theirs)
        orders.append(ours)
    assert orders[0] == orders[1] and orders[0] != orders[2] and orders[0] != theirs


def test_text_gz_is_the_text_gzipped_and_reruns_byte_identical(tmp_path):
    plain, packed = tmp_path / "plain", tmp_path / "gz"
    _job(plain, tmp_path, "--output_format", "text")
    _job(packed, tmp_path, "--output_format", "text.gz")
    first = [_bytes(packed / (SHARD + side + ".gz")) for side in SIDES]
    for side, data in zip(SIDES, first):
        assert gzip.decompress(data) == _bytes(plain / (SHARD + side))
        assert data[4:8] == b"\0\0\0\0"  # mtime 0
    _job(packed, tmp_path, "--output_format", "text.gz", "--overwrite")
    assert [_bytes(packed / (SHARD + side + ".gz")) for side in SIDES] == first
    assert sorted(n for n in os.listdir(packed) if n.startswith(SHARD)) == [
        SHARD + ".en.gz", SHARD + ".zh.gz"]
    report = inspect.inspect(str(packed), num_records=2, verify_checksums=True)
    assert [r["shard"] for r in report["records"]] == [SHARD + ".en.gz"] * 2


def _names(out):
    return sorted(os.listdir(out))


def test_a_rerun_with_other_languages_or_format_replaces_the_files_not_a_users(tmp_path):
    """The files end with the languages, which the summary records (`languages`): a rerun
    that names them otherwise, or writes another format, still finds the old ones to
    replace; a user's `{shard}.bak` and `train.en` are not the job's."""
    out = tmp_path / "out"
    _job(out, tmp_path, "--output_format", "text")
    assert [SHARD + side for side in SIDES] == [n for n in _names(out) if n.startswith(SHARD)]
    for mine in (SHARD + ".bak", "train.en"):
        (out / mine).write_bytes(b"mine\n")
    _job(out, tmp_path, "--output_format", "text", "--source_lang", "de", "--target_lang",
         "fr", "--overwrite")
    assert [n for n in _names(out) if n.startswith(SHARD)] == [
        SHARD + ".bak", SHARD + ".de", SHARD + ".fr"]
    assert inspect.inspect(str(out), num_records=1)["records"][0]["shard"] == SHARD + ".de"
    _job(out, tmp_path, "--overwrite")  # tfrecord
    assert [n for n in _names(out) if n.startswith(SHARD)] == [SHARD, SHARD + ".bak"]
    assert _bytes(out / "train.en") == _bytes(out / (SHARD + ".bak")) == b"mine\n"


def test_a_pattern_over_the_output_dir_never_reads_the_text_shards_back(tmp_path):
    """`--train_source 'out/*.en'` matches the run's own `{shard}.en` on a rerun: it is left
    out as the job's (a user's `train.en` there is read)."""
    out = tmp_path / "out"
    out.mkdir()
    for side in SIDES:
        (out / ("train" + side)).write_bytes(_bytes(NOISY + side))
    runs = [run_datagen(out, out / "*.en", out / "*.zh", *FLAGS, "--output_format", "text",
                        *extra) for extra in ([], ["--overwrite"])]
    assert os.path.exists(out / (SHARD + ".en"))
    assert [r["splits"]["train"]["pairs_read"] for r in runs] == [700, 700]


def test_many_pairs_name_each_pairs_files_with_its_languages(tmp_path):
    """With a corpora file, a pair's own shards `{problem}~{src}-{tgt}-...` end with its
    languages (gzipped: `.en.gz`, `.de.gz`); each pair's two files are line-aligned, hold
    its pairs, and inspect reads every shard."""
    from many_pairs_corpora import CORPORA, corpora_file
    out = tmp_path / "out"
    summary = run_datagen(out, None, None, "--corpora",
                          corpora_file(str(tmp_path / "data"), CORPORA[:2]), "--problem", "p",
                          "--output_format", "text.gz")
    pairs = summary["splits"]["train"]["language_pairs"]
    assert sorted(pairs) == ["en-de", "en-zh"]
    for pair, entry in pairs.items():
        src, tgt = pair.split("-")
        lines = {src: 0, tgt: 0}
        for name in entry["shards"]:
            assert name.startswith("p~%s-train-" % pair) and name.endswith("." + src + ".gz")
            for lang in lines:
                data = gzip.decompress(_bytes(out / (name[:-len(src) - 3] + lang + ".gz")))
                lines[lang] += data.count(b"\n")
        assert lines == {src: entry["pairs_written"], tgt: entry["pairs_written"]}
    shards = [n for n in _names(out) if n.startswith("p~")]
    assert {n.rsplit(".", 2)[1] for n in shards} == {"en", "de", "zh"}
    total = sum(entry["pairs_written"] for entry in pairs.values())
    report = inspect.inspect(str(out), num_records=total, verify_checksums=True)
    assert len(report["records"]) == total
