"""transforms.formats.corpus_formats: archive members (`data.tgz!corpus/train.tsv`) of every
archive kind, read from seekable files and from streams that cannot seek; cut or corrupt
archives; archive paths. The archives are built at run time in tmp_path.
"""

import io
import os
import tarfile
import zipfile

import pytest

from format_readers import CMN_TAIL, PipeStream, SGM_EN, file_bytes as _bytes, file_units
from transforms.formats.corpus_formats import (FormatError, open_archive_member, read_tsv,
                                               split_archive_path)


# --------------------------------------------------------------------------------------------
# Archives and format detection


def _members():
    return {"corpus/train.tsv": _bytes(CMN_TAIL), "corpus/test.en.sgm": _bytes(SGM_EN)[:2000],
            "top.txt": b"top level\n"}


def _make_archive(path, kind):
    members = _members()
    if kind == "zip":
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
            z.writestr("corpus/", b"")
            for name, data in members.items():
                z.writestr(name, data)
        return
    mode = {"tar": "w", "tar.gz": "w:gz", "tgz": "w:gz", "tar.bz2": "w:bz2", "tar.xz": "w:xz"}[kind]
    with tarfile.open(path, mode) as t:
        info = tarfile.TarInfo("./corpus")
        info.type = tarfile.DIRTYPE
        t.addfile(info)
        for name, data in members.items():
            info = tarfile.TarInfo("./" + name if name.startswith("corpus") else name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("link.txt")
        link.type = tarfile.SYMTYPE
        link.linkname = "top.txt"
        t.addfile(link)


@pytest.mark.parametrize("kind", ["tar", "tar.gz", "tgz", "zip", "tar.bz2", "tar.xz"])
def test_archive_members(tmp_path, kind):
    archive = str(tmp_path / ("data." + kind))
    _make_archive(archive, kind)
    for name, data in _members().items():
        for member in (name, "./" + name):
            with open(archive, "rb") as f:
                assert open_archive_member(f, archive, member).read() == data
            # Non-seekable stream: tar streams through the members, zip is read into memory.
            with open(archive, "rb") as f:
                assert open_archive_member(PipeStream(f.read()), archive, member).read() == data
    # A reader on a member, as the pipeline does for "data.tgz!corpus/train.tsv".
    outer, member = split_archive_path(archive + "!corpus/train.tsv")
    assert (outer, member) == (archive, "corpus/train.tsv")
    with open(outer, "rb") as f:
        units = list(read_tsv(open_archive_member(f, outer, member), archive + "!" + member))
    assert units == file_units(read_tsv, CMN_TAIL)
    with open(archive, "rb") as f:
        with pytest.raises(FormatError) as info:
            open_archive_member(f, archive, "corpus/missing.en")
    assert str(info.value).startswith(archive + ":member corpus/missing.en: no such member")
    for stream_of in (lambda f: f, lambda f: PipeStream(f.read())):
        with open(archive, "rb") as f:
            with pytest.raises(FormatError) as info:
                open_archive_member(stream_of(f), archive, "corpus")
        assert "corpus" in str(info.value) and archive in str(info.value)
    # The member file owns the archive stream: closing it, or a failure, closes the stream.
    for make in (lambda: open(archive, "rb"), lambda: io.BytesIO(open(archive, "rb").read())):
        stream = make()
        member_file = open_archive_member(stream, archive, "top.txt")
        assert not stream.closed
        member_file.close()
        assert stream.closed and member_file.closed
        stream = make()
        with pytest.raises(FormatError):
            open_archive_member(stream, archive, "nope")
        assert stream.closed
    if kind != "zip":
        with open(archive, "rb") as f:  # seekable tar follows the symlink
            assert open_archive_member(f, archive, "link.txt").read() == b"top level\n"
        with open(archive, "rb") as f:
            with pytest.raises(FormatError, match="link"):
                open_archive_member(PipeStream(f.read()), archive, "link.txt")


def test_archive_corrupt_or_not_an_archive(tmp_path):
    tgz = tmp_path / "c.tgz"
    _make_archive(str(tgz), "tgz")
    data = tgz.read_bytes()
    zpath = tmp_path / "c.zip"
    _make_archive(str(zpath), "zip")
    cases = [("c.tgz", data[:len(data) // 2]), ("c.tgz", b"not an archive at all" * 50),
             ("c.zip", b"PK\x03\x04 garbage"), ("c.zip", zpath.read_bytes()[:-30]),
             ("c.tar", b""), ("c.zip", b"")]
    for name, blob in cases:
        for stream in (io.BytesIO(blob), PipeStream(blob)):
            with pytest.raises(FormatError) as info:
                open_archive_member(stream, name, "corpus/train.tsv").read()
            assert str(info.value).startswith(name + ":member corpus/train.tsv: ")
    # A member whose compressed data is cut: the error surfaces while reading, as FormatError.
    big = tmp_path / "big.tgz"
    with tarfile.open(big, "w:gz") as t:
        payload = os.urandom(300_000)
        info = tarfile.TarInfo("x.bin")
        info.size = len(payload)
        t.addfile(info, io.BytesIO(payload))
    cut = big.read_bytes()[:150_000]
    with pytest.raises(FormatError, match="big.tgz:member x.bin: "):
        open_archive_member(PipeStream(cut), "big.tgz", "x.bin").read()


def test_split_archive_path():
    assert split_archive_path("a/b.tgz!x/y.en") == ("a/b.tgz", "x/y.en")
    assert split_archive_path("gs://bucket/c.TAR.GZ!train.tsv") == ("gs://bucket/c.TAR.GZ", "train.tsv")
    assert split_archive_path("d.zip!in/e.tmx") == ("d.zip", "in/e.tmx")
    assert split_archive_path("d.tar!a!b") == ("d.tar", "a!b")
    assert split_archive_path("plain/train.en") == ("plain/train.en", None)
    assert split_archive_path("odd!dir/train.en") == ("odd!dir/train.en", None)
    assert split_archive_path("odd!dir/x.zip!m.txt") == ("odd!dir/x.zip", "m.txt")
    with pytest.raises(FormatError):
        split_archive_path("d.zip!")
