"""A merged shard's manifest: written after the shard file, it lets a rerun of the same key keep
the shard, and only when the key, the fragments it was merged from and the file's bytes are as
recorded (`transforms.encode.shard_manifests`)."""

import os

import google_crc32c

from transforms.encode.shard_manifests import ShardResume, kept_shard, record_shard

DATA = b"shard bytes " * 100


def _fragments(directory, records=2):
    return [{"path": os.path.join(directory, "train-00001-d0-l%d.frag" % line),
             "records": records, "by_dataset": [(0, records)]} for line in (0, 100)]


def _merged(tmp_path, key="k1"):
    """A shard written, then its manifest: (resume, shard path, fragments, report)."""
    os.makedirs(str(tmp_path / "merged"))
    shard = str(tmp_path / "p-train-00001-of-00003")
    with open(shard, "wb") as f:
        f.write(DATA)
    resume = ShardResume(key, str(tmp_path / "merged"), True)
    fragments = _fragments(str(tmp_path / "fragments"))
    report = {"split": "train", "shard": 1, "name": os.path.basename(shard), "records": 4,
              "bytes": len(DATA), "crc32c": google_crc32c.Checksum(DATA).hexdigest().decode(),
              "by_dataset": [(0, 4)]}
    record_shard(resume, shard, fragments, report, None)
    return resume, shard, fragments, report


def test_a_shard_whose_manifest_fragments_and_bytes_hold_is_kept(tmp_path):
    resume, shard, fragments, report = _merged(tmp_path)
    # the fragments as a rerun reports them: another run's directory, another order
    again = list(reversed(_fragments(str(tmp_path / "elsewhere"))))
    assert kept_shard(resume, shard, again, None) == dict(report, by_dataset=[[0, 4]])


def test_a_shard_changed_cut_or_gone_is_merged_again(tmp_path):
    resume, shard, fragments, _ = _merged(tmp_path)
    with open(shard, "r+b") as f:
        f.seek(7)
        f.write(b"X")
    assert kept_shard(resume, shard, fragments, None) is None
    with open(shard, "wb") as f:
        f.write(DATA[:-1])
    assert kept_shard(resume, shard, fragments, None) is None
    os.remove(shard)
    assert kept_shard(resume, shard, fragments, None) is None


def test_other_fragments_another_key_or_no_look_keep_nothing(tmp_path):
    resume, shard, fragments, _ = _merged(tmp_path)
    assert kept_shard(resume, shard, fragments[:1], None) is None  # a chunk more or less
    assert kept_shard(resume, shard, _fragments(str(tmp_path), records=3), None) is None
    assert kept_shard(resume._replace(key="k2"), shard, fragments, None) is None
    assert kept_shard(resume._replace(look=False), shard, fragments, None) is None
    with open(os.path.join(resume.manifest_dir, os.path.basename(shard) + ".json"), "wb") as f:
        f.write(b'{"version": 1, "ke')  # cut short
    assert kept_shard(resume, shard, fragments, None) is None


def test_a_text_shard_is_kept_by_its_two_files(tmp_path):
    """A text shard's report sums its two files (`.en`, `.zh`): a rerun checks both, so a
    whole one is kept and one with a side changed or gone is merged again."""
    resume, _, fragments, report = _merged(tmp_path)
    files = [str(tmp_path / ("p-train-00001-of-00003" + side)) for side in (".en", ".zh")]
    for path, data in zip(files, (DATA[:500], DATA[500:])):
        with open(path, "wb") as f:
            f.write(data)
    record_shard(resume, files[0], fragments, report, None)
    assert kept_shard(resume, files[0], fragments, None, files) == dict(
        report, by_dataset=[[0, 4]])
    assert kept_shard(resume, files[0], fragments, None) is None  # its source side alone
    with open(files[1], "r+b") as f:
        f.write(b"X")
    assert kept_shard(resume, files[0], fragments, None, files) is None
    os.remove(files[1])
    assert kept_shard(resume, files[0], fragments, None, files) is None
