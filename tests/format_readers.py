"""Helpers for the corpus format readers' tests (tests/transforms/formats/): the real fixture
files in tests/data/formats (provenance in its README.md), the readers run on bytes, a stream
that cannot seek, and a reader's units split into pairs and rejects; and a fairseq data-bin
read by its documented layout (tests/end_to_end/test_fairseq_output.py)."""

import io
import os

import numpy as np

from repo_paths import DATA_DIR
from transforms.formats import fairseq_bin
from transforms.formats.corpus_formats import Pair, Reject, read_sgm_pair, read_tmx, read_tsv

FORMATS = os.path.join(DATA_DIR, "formats")

CMN_HEAD = os.path.join(FORMATS, "cmn.head3000.txt")
CMN_TAIL = os.path.join(FORMATS, "cmn.tail100.txt")
TMX_I = os.path.join(FORMATS, "ImportTest1I.tmx")
TMX_J = os.path.join(FORMATS, "ImportTest1J_many.tmx")
TMX_ENES = os.path.join(FORMATS, "en-es.head800.tmx")
SGM_EN = os.path.join(FORMATS, "valid.en-zh.head3000.en.sgm")
SGM_ZH = os.path.join(FORMATS, "valid.en-zh.head3000.zh.sgm")
IWSLT_EN = os.path.join(FORMATS, "IWSLT17.TED.tst2017.en-zh.head5docs.en.xml")
IWSLT_ZH = os.path.join(FORMATS, "IWSLT17.TED.tst2017.zh-en.head5docs.zh.xml")


def file_bytes(path):
    with open(path, "rb") as f:
        return f.read()


class PipeStream:
    """A non-seekable stream with only read(), like a pipe or a remote object stream."""

    def __init__(self, data, chunk=None):
        self._data = io.BytesIO(data)
        self._chunk = chunk

    def read(self, n=-1):
        if self._chunk is not None and (n is None or n < 0 or n > self._chunk):
            n = self._chunk
        return self._data.read(n)


def tsv(data, **kw):
    return list(read_tsv(io.BytesIO(data), "mem.tsv", **kw))


def tmx(data, source="en", target="es", path="mem.tmx"):
    return list(read_tmx(io.BytesIO(data), path, source, target))


def sgm(source, target):
    return list(read_sgm_pair(io.BytesIO(source), "src.sgm", io.BytesIO(target), "ref.sgm"))


def file_units(reader, *paths, **kw):
    files = [open(p, "rb") for p in paths]
    try:
        args = []
        for f, p in zip(files, paths):
            args += [f, p]
        return list(reader(*args, **kw))
    finally:
        for f in files:
            f.close()


def pairs_of(units):
    return [u for u in units if isinstance(u, Pair)]


def rejects_of(units):
    return [u for u in units if isinstance(u, Reject)]


def read_fairseq_side(data_bin, prefix):
    """[[ids]] of `{prefix}.bin/.idx`, read by the documented layout."""
    with open(os.path.join(data_bin, prefix + ".idx"), "rb") as f:
        dtype, sizes, pointers = fairseq_bin.read_index(f.read())
    data = np.fromfile(os.path.join(data_bin, prefix + ".bin"), dtype=dtype)
    assert len(data) * dtype.itemsize == (pointers[-1] + sizes[-1] * dtype.itemsize
                                          if len(sizes) else 0)
    return [data[p // dtype.itemsize:p // dtype.itemsize + n].tolist()
            for p, n in zip(pointers, sizes)]
