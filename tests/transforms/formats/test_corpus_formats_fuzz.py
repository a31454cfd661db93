"""Fuzz of transforms.formats.corpus_formats: any input (bytes, text, fragments of each format)
yields Pair/Reject objects or raises FormatError, nothing else, from every reader and archive.
"""

import io

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from format_readers import PipeStream, sgm
from transforms.formats.corpus_formats import (FormatError, Pair, Reject, open_archive_member,
                                               read_iwslt_xml_pair, read_sgm_pair, read_tmx,
                                               read_tsv)


# --------------------------------------------------------------------------------------------
# Fuzz: any input yields Pair/Reject objects or raises FormatError, nothing else


FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_TMX_FRAGMENTS = [
    '<?xml version="1.0"?>', '<?xml version="1.0" encoding="latin-1"?>', "<!DOCTYPE tmx SYSTEM 'x'>",
    "<tmx>", "</tmx>", "<body>", "</body>", "<tu>", "</tu>", '<tuv xml:lang="en">', '<tuv lang="ES-mx">',
    '<tuv xml:lang="en-GB">', "</tuv>", "<seg>", "</seg>", '<bpt i="1">', "</bpt>", "<ph>", "</ph>",
    "<sub>", "</sub>", "<hi>", "</hi>", "&amp;", "&#x3000;", "&#0;", "&nbsp;", "<", ">", "&", " ",
    "\n", "text", "é", "<x:y>", "]]>", "<![CDATA[", "<!--", "-->",
]
_SGM_FRAGMENTS = [
    "<srcset>", "<refset>", '<doc docid="a">', "<doc docid=b>", "<doc>", "</doc>", '<seg id="1">',
    "<seg id=2>", "<SEG ID='1'>", "<seg>", '<seg id="3"/>', "</seg>", "<url>", "</url>", "<title>",
    "&amp;", "&lt;", "&#x4E2D;", "&#xD800;", "&", "<", ">", " ", "\n", "\r\n", "text", "中文", "\ufeff",
]
_TSV_FRAGMENTS = ["\t", "\n", "\r", "\r\n", "a", "中", "\ufeff", " ", ""]


def _fragments(pieces):
    return st.lists(st.sampled_from(pieces) | st.text(max_size=5), max_size=40).map("".join)


def _encoded(text_strategy):
    return text_strategy.map(lambda s: s.encode("utf-8", "surrogatepass"))


_ANY_BYTES = st.binary(max_size=400)
_TMX_INPUT = _ANY_BYTES | _encoded(st.text(max_size=200)) | _encoded(_fragments(_TMX_FRAGMENTS))
_SGM_INPUT = _ANY_BYTES | _encoded(st.text(max_size=200)) | _encoded(_fragments(_SGM_FRAGMENTS))
_TSV_INPUT = _ANY_BYTES | _encoded(st.text(max_size=200)) | _encoded(_fragments(_TSV_FRAGMENTS))
_UNIT = (Pair, Reject)


def _exhaust(units):
    try:
        out = list(units)
    except FormatError as error:
        assert str(error).startswith("fuzz")
        return None
    for unit in out:
        assert isinstance(unit, _UNIT)
        assert all(isinstance(field, str) for field in unit)
    return out


@FUZZ
@given(_TSV_INPUT, st.integers(0, 3), st.integers(0, 3), st.integers(1, 64))
def test_fuzz_tsv(data, source_column, target_column, chunk):
    if source_column == target_column:
        return
    out = _exhaust(read_tsv(PipeStream(data, chunk), "fuzz.tsv", source_column, target_column))
    # Every line is accounted for, except empty lines after the last non-empty one.
    lines = data.split(b"\n")
    if lines and lines[0].startswith(b"\xef\xbb\xbf"):
        lines[0] = lines[0][3:]
    while lines and lines[-1] in (b"", b"\r"):
        lines.pop()
    assert [u.where for u in out] == ["line %d" % i for i in range(1, len(lines) + 1)]


@FUZZ
@given(_TMX_INPUT, st.sampled_from(["en", "en-us", "EN_gb"]), st.sampled_from(["es", "ES-mx", "ja"]))
def test_fuzz_tmx(data, source, target):
    _exhaust(read_tmx(io.BytesIO(data), "fuzz.tmx", source, target))


@FUZZ
@given(_SGM_INPUT, _SGM_INPUT, st.booleans())
def test_fuzz_sgm_and_iwslt(source, target, iwslt):
    reader = read_iwslt_xml_pair if iwslt else read_sgm_pair
    out = _exhaust(reader(PipeStream(source, 17), "fuzz.src", PipeStream(target, 5), "fuzz.ref"))
    if out is not None:
        wheres = [u.where for u in out]
        assert len(wheres) == len(set(wheres))


@FUZZ
@given(_ANY_BYTES, st.sampled_from(["fuzz.tgz", "fuzz.zip", "fuzz.tar", "fuzz.tar.bz2"]), st.booleans())
def test_fuzz_archive(data, name, seekable):
    stream = io.BytesIO(data) if seekable else PipeStream(data)
    try:
        open_archive_member(stream, name, "m.txt").read()
    except FormatError as error:
        assert str(error).startswith(name + ":member m.txt: ")


@FUZZ
@given(st.dictionaries(st.tuples(st.sampled_from(["d1", "d2", "x&y"]), st.integers(1, 30)),
                       st.tuples(st.text("ab &<>中\t", max_size=8), st.text("cd &中", max_size=8)),
                       max_size=30),
       st.randoms(use_true_random=False), st.floats(0, 1))
def test_fuzz_sgm_pairs_by_id(segments, rng, keep):
    """Random docs/segments, target shuffled and partly dropped: pairs and rejects are exact."""
    from xml.sax.saxutils import escape

    def doc_file(items):
        out = []
        for (doc, seg), text in items:
            out.append('<doc docid="%s">\n<seg id="%d"> %s </seg>\n</doc>\n'
                       % (escape(doc, {'"': "&quot;"}), seg, escape(text)))
        return "".join(out).encode()

    source_items = [(k, v[0]) for k, v in segments.items()]
    target_items = [(k, v[1]) for k, v in segments.items() if rng.random() < keep]
    rng.shuffle(target_items)
    units = sgm(doc_file(source_items), doc_file(target_items))
    kept = {k for k, _ in target_items}
    expected = []
    for key, (s, t) in segments.items():
        where = "doc %s seg %d" % key
        if key in kept:
            expected.append(Pair(s.strip(), t.strip(), where))
        else:
            expected.append(Reject(where, "unmatched_source_segment", s.strip(), ""))
    assert units == expected
