"""Property: whatever bytes arrive, in whatever encoding and compression, cut anywhere, the
whole job (in-process runner) ends in one of two ways (issue 22):

- exit 0, with pairs read = written + rejected for every dataset, as many pairs read as
  T2T's reader sees lines in the longer file, and every shard the summary lists on disk;
- exit 2, with one ERROR line naming one of the input files, no shard and no marker.

Never a traceback, never exit 1, never a complete marker over missing pairs, never a cut
compressed file read as a shorter one. Examples are bounded (about a minute in all).
"""

import bz2
import gzip
import json
import lzma
import os
import shutil
import struct
import tempfile
import zlib

import pytest
import zstandard
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pipeline import datagen

pytestmark = pytest.mark.slow

COMPRESS = {
    "": None, ".gz": gzip.compress, ".bz2": bz2.compress, ".deflate": zlib.compress,
    ".zst": lambda d: zstandard.ZstdCompressor().compress(d), ".xz": lzma.compress,
    ".lzma": lambda d: lzma.compress(d, format=lzma.FORMAT_ALONE)}

line_text = st.one_of(
    st.text(max_size=30),
    st.text(alphabet=st.sampled_from("ab \t\u3000\ufeff\0\u00e9\u4e2d_\\"), max_size=30),
    st.just(""),
    st.builds(lambda n: "long " * n, st.integers(200, 2000)))
ENDINGS = ["\n", "\r\n", "\r", ""]
ENCODINGS = ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32", "latin-1"]


@st.composite
def side(draw):
    """(file name suffix, raw bytes on disk, decompressed bytes or None when cut)."""
    lines = draw(st.lists(line_text, min_size=0, max_size=12))
    endings = draw(st.lists(st.sampled_from(ENDINGS), min_size=len(lines),
                            max_size=len(lines)))
    text = "".join(l + e for l, e in zip(lines, endings))
    encoding = draw(st.sampled_from(ENCODINGS)) if draw(st.booleans()) else "utf-8"
    data = text.encode(encoding, "replace")
    if draw(st.booleans()) and draw(st.booleans()):  # a lone surrogate, as some tools write
        at = draw(st.integers(0, len(data)))
        data = data[:at] + b"\xed\xa0\x80" + data[at:]
    suffix = draw(st.sampled_from(sorted(COMPRESS)))
    if not suffix:
        return suffix, data, data
    packed = COMPRESS[suffix](data)
    if draw(st.integers(0, 3)) == 0:
        cut = draw(st.integers(0, len(packed) - 1))
        return suffix, packed[:cut], None
    return suffix, packed, data


def _lines(data):
    """Lines T2T's reader yields: split at \\n; a last line without one counts."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _shard_records(path):
    with open(path, "rb") as f:
        data = f.read()
    at = n = 0
    while at < len(data):
        (length,) = struct.unpack("<Q", data[at:at + 8])
        at += 12 + length + 4
        n += 1
    return n


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(source=side(), target=side(),
       vocab_type=st.sampled_from(["subword", "subword", "word", "byte_bpe"]),
       on_invalid=st.sampled_from(["error", "reject", "replace", "replace"]),
       on_misaligned=st.sampled_from(["error", "reject", "reject", "reject"]))
def test_any_input_ends_in_exit_0_with_books_or_exit_2_naming_the_file(
        capsys, source, target, vocab_type, on_invalid, on_misaligned):
    work = tempfile.mkdtemp(prefix="hostile-")
    try:
        paths = []
        for lang, (suffix, raw, _) in (("en", source), ("zh", target)):
            path = os.path.join(work, "in." + lang + suffix)
            with open(path, "wb") as f:
                f.write(raw)
            paths.append(path)
        out = os.path.join(work, "out")
        argv = ["--train_source", paths[0], "--train_target", paths[1], "--output_dir", out,
                "--problem", "p", "--num_train_shards", "2", "--runner", "FnApiRunner",
                "--vocab_type", vocab_type,
                "--vocab_size", {"word": "60", "subword": "100", "byte_bpe": "300"}[vocab_type],
                "--on_invalid_utf8", on_invalid, "--on_misaligned", on_misaligned,
                "--allow_empty"]
        code = datagen.main(argv)
        err = capsys.readouterr().err
        event("exit %d" % code)
        assert "Traceback" not in err, err
        assert code in (0, 2), err
        marker = os.path.join(out, "p.DATAGEN_COMPLETE")
        if code == 2:
            errors = [line for line in err.splitlines() if " ERROR " in line]
            assert len(errors) == 1, err
            assert any(p in errors[0] for p in paths), errors[0]
            assert not os.path.exists(marker)
            assert not [n for n in os.listdir(out) if n.startswith("p-train")] \
                if os.path.isdir(out) else True
            return
        # exit 0: nothing cut was read as a shorter file, and the books hold
        assert source[2] is not None and target[2] is not None, err
        assert os.path.exists(marker)
        with open(os.path.join(out, "p.datagen_summary.json")) as f:
            summary = json.load(f)
        train = summary["splits"]["train"]
        for d in train["datasets"].values():
            assert d["pairs_read"] == d["pairs_written"] + d["pairs_rejected"], d
        assert train["pairs_read"] == max(_lines(source[2]), _lines(target[2]))
        written = 0
        for shard in train["shards"]:
            path = os.path.join(out, shard["name"])
            assert os.path.exists(path)
            assert _shard_records(path) == shard["records"]
            written += shard["records"]
        assert written == train["pairs_written"]
    finally:
        shutil.rmtree(work, ignore_errors=True)
