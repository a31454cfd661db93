"""transforms.formats.corpus_formats: the TSV and TMX readers on real files, format detection
and the shape of a FormatError. The SGM and IWSLT readers: test_sgm_xml.py; archive
members: test_archives.py; fuzz of every reader: test_corpus_formats_fuzz.py.

Fixtures are slices of real public files in tests/data/formats (provenance in its README.md).
"""

import io
import pickle
import tracemalloc

import pytest

from format_readers import (CMN_HEAD, CMN_TAIL, IWSLT_EN, PipeStream, TMX_ENES, TMX_I, TMX_J,
                            file_bytes as _bytes, file_units, pairs_of, rejects_of, tmx, tsv)
from transforms.formats.corpus_formats import (FormatError, Pair, Reject, detect_format, read_tmx,
                                               read_tsv)


# --------------------------------------------------------------------------------------------
# TSV


def test_tsv_cmn_head_real_rows_bom_removed_extra_column_ignored():
    units = file_units(read_tsv, CMN_HEAD)
    assert len(units) == 3000 and all(isinstance(u, Pair) for u in units)
    assert _bytes(CMN_HEAD).startswith(b"\xef\xbb\xbfHi.\t")
    assert units[0] == Pair("Hi.", "嗨。", "line 1")  # no U+FEFF on the first source
    assert units[1] == Pair("Hi.", "你好。", "line 2")
    assert units[1499] == Pair("Tom is a rabbi.", "汤姆是个拉比。", "line 1500")
    assert units[2999] == Pair("I'll feed the dog.", "我要喂狗。", "line 3000")
    assert not any("tatoeba" in u.target or "\t" in u.target for u in units)


def test_tsv_other_columns():
    units = file_units(read_tsv, CMN_HEAD, source_column=1, target_column=2)
    assert units[0] == Pair("嗨。", "CC-BY 2.0 (France) Attribution: tatoeba.org #538123 (CM) & "
                            "#891077 (Martha)", "line 1")
    units = tsv(b"a\tb\tc\n", source_column=2, target_column=0)
    assert units == [Pair("c", "a", "line 1")]


def test_tsv_trailing_empty_line_is_no_row():
    # cmn.tail100.txt is the real end of cmn.txt: its last row, then an empty line ("\n\n").
    data = _bytes(CMN_TAIL)
    assert data.endswith(b"(cienias)\n\n")
    units = file_units(read_tsv, CMN_TAIL)
    assert len(units) == 100 and all(isinstance(u, Pair) for u in units)
    assert units[-1].where == "line 100"
    assert units[-1].target == "如果一个人在成人前没有机会习得目标语言，他对该语言的认识达到母语者程度的机会是相当小的。"
    assert units[0] == Pair("Tom did the best he could, but he wasn't able to get a higher grade "
                            "than Mary.", "汤姆尽了全力，但他还是不能获得比玛丽更高的等级。", "line 1")
    # The same rows ending in one "\n", in none, or in several empty lines (also "\r\n").
    for ending in (b"\n", b"", b"\n\n\n", b"\r\n\r\n"):
        assert tsv(data.rstrip(b"\n") + ending) == units


def test_tsv_empty_line_in_the_middle_is_rejected():
    lines = _bytes(CMN_HEAD).split(b"\n")
    data = b"\n".join(lines[:10] + [b"", b"\r"] + lines[10:])
    units = tsv(data)
    assert len(units) == 3002
    assert units[10] == Reject("line 11", "empty_line", "", "")
    assert units[11] == Reject("line 12", "empty_line", "", "")
    assert units[12] == file_units(read_tsv, CMN_HEAD)[10]._replace(where="line 13")


def test_tsv_too_few_columns_rejected_with_raw_line():
    data = b"one\tuno\n" + b"lonely field\n" + b"two\tdos\textra\tmore\n"
    assert tsv(data) == [
        Pair("one", "uno", "line 1"),
        Reject("line 2", "too_few_columns", "lonely field", ""),
        Pair("two", "dos", "line 3"),
    ]
    # Asking for column 3 needs 4 columns.
    units = tsv(b"a\tb\tc\n", source_column=0, target_column=3)
    assert units == [Reject("line 1", "too_few_columns", "a\tb\tc", "")]
    # A reject keeps its whole text (the vocabulary sample reads it); the rejects file
    # truncates it (transforms.formats.rejects.reject_record).
    long_line = ("x" * 800).encode()
    assert tsv(long_line)[0].source == "x" * 800


def test_tsv_invalid_utf8_rejected_with_line_number():
    lines = _bytes(CMN_HEAD).split(b"\n")
    assert lines[4].startswith("Wait!\t等等！".encode())
    lines[4] = lines[4].replace("！".encode(), "！".encode()[:2], 1)  # cut a character in line 5
    units = tsv(b"\n".join(lines))
    assert len(units) == 3000
    assert units[4].where == "line 5" and units[4].reason == "invalid_utf8"
    assert units[4].source.startswith("Wait!\t") and "\ufffd" in units[4].source
    assert all(isinstance(u, Pair) for i, u in enumerate(units) if i != 4)


def test_tsv_cr_and_tab_semantics():
    # One trailing \r removed; an inner \r kept; a BOM not at the very start is kept.
    assert tsv(b"a\tb\r\nc\rd\te\r\r\n\xef\xbb\xbff\tg\n") == [
        Pair("a", "b", "line 1"), Pair("c\rd", "e\r", "line 2"), Pair("\ufefff", "g", "line 3")]
    # No quoting: a tab inside the source shifts the columns (documented behaviour).
    assert tsv(b"tab\there\ttarget\n") == [Pair("tab", "here", "line 1")]
    # Fields are not stripped; an all-space line is a one-column row.
    assert tsv(b" a \t b \n   \n") == [Pair(" a ", " b ", "line 1"),
                                       Reject("line 2", "too_few_columns", "   ", "")]


def test_tsv_bad_arguments():
    with pytest.raises(ValueError):
        read_tsv(io.BytesIO(b""), "x", source_column=-1)
    with pytest.raises(ValueError):
        read_tsv(io.BytesIO(b""), "x", source_column=1, target_column=1)


def test_tsv_streams_in_small_chunks():
    data = _bytes(CMN_HEAD)
    assert list(read_tsv(PipeStream(data, chunk=7), "pipe")) == file_units(read_tsv, CMN_HEAD)


# --------------------------------------------------------------------------------------------
# TMX


def test_tmx_import_test_1i_numeric_character_references():
    assert b"[&#x20; &#x20; ]" in _bytes(TMX_I) and b"[&#x3000;&#x3000;]" in _bytes(TMX_I)
    expected = [Pair("English segment with [    ]", "Japanese segment with [\u3000\u3000]", "tu 1")]
    # Base-language requests match the tuvs' en-us / ja-jp; exact ones in any case or with "_".
    for source, target in (("en", "ja"), ("en-us", "ja-jp"), ("EN_US", "JA-jp"), ("En", "jA")):
        assert file_units(read_tmx, TMX_I, source_lang=source, target_lang=target) == expected
    # A region that is not there does not match.
    assert file_units(read_tmx, TMX_I, source_lang="en-gb", target_lang="ja") == [
        Reject("tu 1", "missing_source", "", "Japanese segment with [\u3000\u3000]")]


def test_tmx_import_test_1j_many_reordered_tuv_and_regions():
    units = file_units(read_tmx, TMX_J, source_lang="en-us", target_lang="en-gb")
    # The kit's comment: "only first and second entries should be imported".
    assert units == [
        Pair("First entry in US English", "First entry in UK English", "tu 1"),
        Pair("Second entry in US English", "Second entry in UK English", "tu 2"),  # tuvs reordered
        Reject("tu 3", "missing_target", "[not to import] Third entry in US English", ""),
    ]
    swapped = file_units(read_tmx, TMX_J, source_lang="EN-GB", target_lang="en_US")
    assert [(u.source, u.target) for u in pairs_of(swapped)] == [
        ("First entry in UK English", "First entry in US English"),
        ("Second entry in UK English", "Second entry in US English")]
    # "en" matches both en-us and en-gb (first tuv wins); "es" matches es-es only in tu 3.
    units = file_units(read_tmx, TMX_J, source_lang="es", target_lang="en")
    assert units == [
        Reject("tu 1", "missing_source", "", "First entry in US English"),
        Reject("tu 2", "missing_source", "", "Second entry in UK English"),
        Pair("[not to import] Third entry in Spanish", "[not to import] Third entry in US English",
             "tu 3"),
    ]
    # en vs en-gb: en-gb is an exact target match; the source takes the other English tuv.
    units = file_units(read_tmx, TMX_J, source_lang="en", target_lang="en-gb")
    assert pairs_of(units) == [
        Pair("First entry in US English", "First entry in UK English", "tu 1"),
        Pair("Second entry in US English", "Second entry in UK English", "tu 2")]
    assert rejects_of(units) == [
        Reject("tu 3", "missing_target", "[not to import] Third entry in US English", "")]


def test_tmx_en_es_real_slice():
    units = file_units(read_tmx, TMX_ENES, source_lang="en", target_lang="es")
    assert len(units) == 800 and all(isinstance(u, Pair) for u in units)
    assert units[0] == Pair(
        "This article looks at the anatomy and workflow of the average video game from a "
        "technical point of view, in terms of how the main loop should run. ",
        "Este artículo examina la anatomía y el flujo de trabajo de un videojuego promedio desde "
        "un punto de vista técnico, en términos de cómo debe ejecutarse el bucle principal. ",
        "tu 1")
    assert units[36] == Pair("window.main = () => { ", "window.main = () => { ", "tu 37")  # &gt;
    assert units[798] == Pair("", "", "tu 799")  # <seg></seg> on both sides: an empty pair
    assert units[799] == Pair("{{GamesSidebar}} ", "{{GamesSidebar}} ", "tu 800")
    reverse = file_units(read_tmx, TMX_ENES, source_lang="es", target_lang="en")
    assert [(u.target, u.source) for u in reverse] == [(u.source, u.target) for u in units]
    # Read through a non-seekable stream in odd chunks: the same units.
    assert list(read_tmx(PipeStream(_bytes(TMX_ENES), chunk=1000), TMX_ENES, "en", "es")) == units


TMX_HEAD = b'<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4"><header srclang="en"/><body>\n'
TMX_TAIL = b"</body></tmx>\n"


def _tmx_doc(*tus):
    return TMX_HEAD + b"\n".join(tus) + b"\n" + TMX_TAIL


def test_tmx_lang_priority_exact_over_base_and_first_wins():
    doc = _tmx_doc(
        b'<tu><tuv xml:lang="en-GB"><seg>gb</seg></tuv><tuv xml:lang="EN"><seg>plain</seg></tuv>'
        b'<tuv xml:lang="es"><seg>es</seg></tuv></tu>',
        b'<tu><tuv xml:lang="en-GB"><seg>gb</seg></tuv><tuv xml:lang="en-US"><seg>us</seg></tuv>'
        b'<tuv xml:lang="es-MX"><seg>mx</seg></tuv><tuv xml:lang="es"><seg>es</seg></tuv></tu>',
        b'<tu><tuv lang="en"><seg>tmx 1.1 lang</seg></tuv><tuv lang="es"><seg>uno</seg></tuv></tu>',
        b'<tu><tuv xml:lang="en"><seg>no seg on es</seg></tuv><tuv xml:lang="es"><note>x</note></tuv></tu>',
        b'<tu><tuv xml:lang="fr"><seg>fr</seg></tuv></tu>',
        b'<tu></tu>',
    )
    assert tmx(doc) == [
        Pair("plain", "es", "tu 1"),
        Pair("gb", "es", "tu 2"),
        Pair("tmx 1.1 lang", "uno", "tu 3"),
        Reject("tu 4", "missing_target", "no seg on es", ""),
        Reject("tu 5", "missing_source_and_target", "", ""),
        Reject("tu 6", "missing_source_and_target", "", ""),
    ]
    # en-US requested: en-GB and bare en do not match it.
    assert tmx(doc, source="en-us")[:2] == [
        Reject("tu 1", "missing_source", "", "es"), Pair("us", "es", "tu 2")]
    with pytest.raises(ValueError):
        read_tmx(io.BytesIO(doc), "x", "en", "EN")


def test_tmx_inline_elements():
    seg = (b'<seg>a <bpt i="1" x="1">{\\b </bpt>bold<ept i="1">}</ept> <ph x="2">&lt;br/&gt;</ph>c '
           b'<hi type="x">high<it pos="begin">{\\i</it>light</hi> <ph type="fnote">{\\footnote '
           b'<sub>Note text</sub> more code}</ph>end <ut>{\\ut}</ut>&amp; &#x4E2D;&#25991;</seg>')
    doc = _tmx_doc(b'<tu><tuv xml:lang="en">' + seg + b'</tuv><tuv xml:lang="es"><seg>x</seg></tuv></tu>')
    assert tmx(doc) == [Pair("a bold c highlight Note textend & 中文", "x", "tu 1")]


def test_tmx_missing_side_rejected_in_real_file():
    lines = _bytes(TMX_ENES).split(b"\n")
    tuv = {lang: [i for i, l in enumerate(lines) if b'<tuv xml:lang="%s">' % lang in l]
           for lang in (b"en", b"es")}
    drop = {tuv[b"es"][2], tuv[b"en"][4]}  # the Spanish side of tu 3, the English side of tu 5
    units = tmx(b"\n".join(l for i, l in enumerate(lines) if i not in drop))
    assert len(units) == 800
    assert units[2] == Reject("tu 3", "missing_target", "Experienced game programmers who are new to "
                              "web development could also benefit, too. ", "")
    assert units[4].where == "tu 5" and units[4].reason == "missing_source"
    assert units[4].source == "" and units[4].target.startswith("El objetivo de todo videojuego")
    assert sum(isinstance(u, Pair) for u in units) == 798


def test_tmx_malformed_xml_names_file_and_line():
    lines = _bytes(TMX_J).split(b"\n")
    assert lines[13].strip() == b'<tuv xml:lang="en-gb"><seg>Second entry in UK English</seg></tuv>'
    lines[13] = lines[13].replace(b"</seg>", b"</sgm>")
    units = []
    with pytest.raises(FormatError) as info:
        for unit in read_tmx(io.BytesIO(b"\n".join(lines)), "dir/ImportTest1J_many.tmx", "en-us", "en-gb"):
            units.append(unit)
    assert str(info.value).startswith("dir/ImportTest1J_many.tmx:line 14: malformed XML: mismatched tag")
    assert info.value.path == "dir/ImportTest1J_many.tmx" and info.value.where == "line 14"
    assert units == [Pair("First entry in US English", "First entry in UK English", "tu 1")]
    # Unescaped "&" (fine in SGM, not in XML), truncated files, not-TMX roots, odd encodings.
    bad = {
        _tmx_doc(b'<tu><tuv xml:lang="en"><seg>A & B</seg></tuv></tu>'): "line 3: malformed XML",
        _bytes(TMX_ENES)[:5000]: "line 66: malformed XML: unclosed token",
        _bytes(TMX_ENES).rsplit(b"</body>", 1)[0]: "line 3212: malformed XML: no element found",
        _bytes(IWSLT_EN): "root element: not a TMX file: root element <mteval>",
        b'<?xml version="1.0" encoding="bogus"?><tmx/>': "line 1: unsupported XML encoding",
        b'<?xml version="1.0" encoding="big5"?><tmx/>': "line 1: unsupported XML encoding",
        b"": "line 1: malformed XML: no element found",
    }
    for data, message in bad.items():
        with pytest.raises(FormatError) as info:
            tmx(data, path="f.tmx")
        assert str(info.value).startswith("f.tmx:") and message in str(info.value), str(info.value)


def test_tmx_utf16_file():
    data = _bytes(TMX_I).replace(b'<?xml version="1.0" ?>', b'<?xml version="1.0" encoding="UTF-16"?>')
    units = list(read_tmx(io.BytesIO(data.decode("utf-8").encode("utf-16")), "u16.tmx", "en", "ja"))
    assert units == [Pair("English segment with [    ]", "Japanese segment with [\u3000\u3000]", "tu 1")]


class _GeneratedTmx:
    """A large TMX produced on the fly, so the test measures the reader, not the input."""

    def __init__(self, tus):
        self._parts = self._gen(tus)
        self._buf = b""

    @staticmethod
    def _gen(tus):
        yield TMX_HEAD
        for i in range(tus):
            yield (b'<tu><tuv xml:lang="en"><seg>sentence number %d with some words</seg></tuv>'
                   b'<tuv xml:lang="es"><seg>frase n\xc3\xbamero %d con palabras</seg></tuv></tu>\n' % (i, i))
        yield TMX_TAIL

    def read(self, n=-1):
        while len(self._buf) < n:
            try:
                self._buf += next(self._parts)
            except StopIteration:
                break
        out, self._buf = self._buf[:n], self._buf[n:]
        return out


@pytest.mark.slow
def test_tmx_memory_stays_flat():
    tus = 30000  # about 4 MB of TMX
    tracemalloc.start()
    try:
        count = 0
        for unit in read_tmx(_GeneratedTmx(tus), "big.tmx", "en", "es"):
            count += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == tus and unit == Pair("sentence number %d with some words" % (tus - 1),
                                         "frase número %d con palabras" % (tus - 1), "tu %d" % tus)
    assert peak < 2_000_000, peak  # keeping every <tu> would take tens of MB


def test_detect_format():
    cases = {
        "train.tsv": "tsv", "train.TAB": "tsv", "x/cmn.tsv.gz": "tsv", "en-es.tmx": "tmx",
        "en-es.tmx.bz2": "tmx", "newstest2017-enzh-src.en.sgm": "sgm",
        "IWSLT17.TED.tst2017.en-zh.en.xml": "iwslt", "train.en": "lines", "train.en.gz": "lines",
        "cmn.txt": "lines", "corpus.tgz!dir/train.tsv": "tsv", "c.zip!a/b.sgm": "sgm",
        "c.tar.gz!IWSLT17.xml.gz": "iwslt", "c.tgz": "lines", "weird!name.tmx": "tmx",
        "a.tsv.gz.gz": "lines", "gs://b/d.tmx.gz": "tmx", "dir.tsv/train.en": "lines",
    }
    assert {p: detect_format(p) for p in cases} == cases


def test_format_error_shape_and_pickling():
    error = FormatError("a/b.sgm", "line 3", "duplicate segment doc x seg 1")
    assert str(error) == "a/b.sgm:line 3: duplicate segment doc x seg 1"
    assert isinstance(error, ValueError)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.path, copy.where, copy.message, str(copy)) == \
        (error.path, error.where, error.message, str(error))
