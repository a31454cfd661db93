"""transforms.formats.corpus_formats: TSV, TMX, SGM, IWSLT XML readers and archive members, on real files.

Fixtures are slices of real public files in tests/data/formats (provenance in its README.md);
archives are built at run time in tmp_path.
"""

import io
import os
import pickle
import random
import re
import tarfile
import tracemalloc
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repo_paths import TESTS_DIR as HERE
from transforms.formats.corpus_formats import (
    FormatError, Pair, Reject, detect_format, open_archive_member, read_iwslt_xml_pair,
    read_sgm_pair, read_tmx, read_tsv, split_archive_path)

FORMATS = os.path.join(HERE, "data", "formats")

CMN_HEAD = os.path.join(FORMATS, "cmn.head3000.txt")
CMN_TAIL = os.path.join(FORMATS, "cmn.tail100.txt")
TMX_I = os.path.join(FORMATS, "ImportTest1I.tmx")
TMX_J = os.path.join(FORMATS, "ImportTest1J_many.tmx")
TMX_ENES = os.path.join(FORMATS, "en-es.head800.tmx")
SGM_EN = os.path.join(FORMATS, "valid.en-zh.head3000.en.sgm")
SGM_ZH = os.path.join(FORMATS, "valid.en-zh.head3000.zh.sgm")
IWSLT_EN = os.path.join(FORMATS, "IWSLT17.TED.tst2017.en-zh.head5docs.en.xml")
IWSLT_ZH = os.path.join(FORMATS, "IWSLT17.TED.tst2017.zh-en.head5docs.zh.xml")


def _bytes(path):
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


# --------------------------------------------------------------------------------------------
# SGM


def test_sgm_real_files_paired():
    units = file_units(read_sgm_pair, SGM_EN, SGM_ZH)
    assert len(units) == 3000 and all(isinstance(u, Pair) for u in units)
    assert units[0] == Pair("Do you think we look young enough to blend in at a high school?",
                            "你们觉得我们看起来够年轻溜进高中吗？", "doc docid seg 1")
    # Inline markup inside a segment is kept verbatim; a bare "&" (invalid XML) is kept.
    assert units[1033] == Pair("<p1.3/>Make a reservation today at the BEST WESTERN PLUS Hotel Horizon.",
                               "<p1.3/>今天就预订地平线贝斯特韦斯特优质酒店。", "doc docid seg 1034")
    assert units[2992] == Pair(
        "Complimentary hot breakfast, free Wi-Fi, outdoor pool & gazebo with BBQ grill!",
        "免费赠送的热腾腾的早餐、免费Wi-Fi、室外游泳池和带烧烤架的露台！", "doc docid seg 2993")
    assert units[2999].where == "doc docid seg 3000"
    assert [u.where for u in units] == ["doc docid seg %d" % i for i in range(1, 3001)]


def _shuffle_seg_lines(data, seed):
    lines = data.split(b"\n")
    seg_index = [i for i, l in enumerate(lines) if l.startswith(b"<seg ")]
    segs = [lines[i] for i in seg_index]
    random.Random(seed).shuffle(segs)
    for i, s in zip(seg_index, segs):
        lines[i] = s
    return b"\n".join(lines)


def test_sgm_pairs_by_id_not_position(tmp_path):
    expected = file_units(read_sgm_pair, SGM_EN, SGM_ZH)
    shuffled = tmp_path / "valid.shuffled.zh.sgm"
    shuffled.write_bytes(_shuffle_seg_lines(_bytes(SGM_ZH), seed=1))
    assert shuffled.read_bytes() != _bytes(SGM_ZH)
    assert file_units(read_sgm_pair, SGM_EN, str(shuffled)) == expected
    # Shuffling the source changes only the output order (source file order).
    shuffled_en = tmp_path / "valid.shuffled.en.sgm"
    shuffled_en.write_bytes(_shuffle_seg_lines(_bytes(SGM_EN), seed=2))
    units = file_units(read_sgm_pair, str(shuffled_en), SGM_ZH)
    assert units != expected and sorted(units) == sorted(expected)


def test_sgm_unmatched_segments_rejected(tmp_path):
    lines = _bytes(SGM_ZH).split(b"\n")
    # Drop target seg 5 and 2000, add a target seg 9999 and one in another doc.
    lines = [l for l in lines if not l.startswith((b'<seg id="5">', b'<seg id="2000">'))]
    end = lines.index(b"</doc>")
    lines[end:end] = [b'<seg id="9999"> extra </seg>']
    lines[end + 2:end + 2] = [b'<doc docid="other">', b'<seg id="1"> other doc </seg>', b"</doc>"]
    target = tmp_path / "ref.sgm"
    target.write_bytes(b"\n".join(lines))
    units = file_units(read_sgm_pair, SGM_EN, str(target))
    assert len(units) == 3002
    assert rejects_of(units) == [
        Reject("doc docid seg 5", "unmatched_source_segment",
               "Find a safety chain or something to keep these lights in place.", ""),
        Reject("doc docid seg 2000", "unmatched_source_segment",
               pairs_of(file_units(read_sgm_pair, SGM_EN, SGM_ZH))[1999].source, ""),
        Reject("doc docid seg 9999", "unmatched_target_segment", "", "extra"),
        Reject("doc other seg 1", "unmatched_target_segment", "", "other doc"),
    ]
    assert len(pairs_of(units)) == 2998


def test_sgm_duplicate_segment_is_format_error(tmp_path):
    lines = _bytes(SGM_ZH).split(b"\n")
    lines.insert(100, b'<seg id="7"> again </seg>')
    target = tmp_path / "dup.zh.sgm"
    target.write_bytes(b"\n".join(lines))
    with pytest.raises(FormatError) as info:
        file_units(read_sgm_pair, SGM_EN, str(target))
    assert str(info.value) == "%s:line 101: duplicate segment doc docid seg 7 (first at line 11)" % target
    # In the source file too (found while streaming it).
    with pytest.raises(FormatError) as info:
        sgm(b'<doc docid="a">\n<seg id="1"> x </seg>\n<seg id="1"> y </seg>\n</doc>\n',
            b'<doc docid="a">\n<seg id="1"> x </seg>\n</doc>\n')
    assert str(info.value) == "src.sgm:line 3: duplicate segment doc a seg 1 (first at line 2)"
    # The same seg id in two docs is not a duplicate.
    assert sgm(b'<doc docid="a"><seg id="1">a1</seg></doc><doc docid="b"><seg id="1">b1</seg></doc>',
               b'<doc docid="b"><seg id="1">B1</seg></doc><doc docid="a"><seg id="1">A1</seg></doc>') == [
        Pair("a1", "A1", "doc a seg 1"), Pair("b1", "B1", "doc b seg 1")]


def test_sgm_entities_and_scanner_details():
    src = (b'<?xml version="1.0"?>\r\n<SRCSET setid="x">\r\n<DOC DOCID=d1 sysid="s">\r\n'
           b'<p>\r\n<SEG ID=1>  &amp;lt; &lt;b&gt; &quot;q&quot; &apos;a&apos; &#x4E2D;&#25991; </SEG>\r\n'
           b"<seg id='2'> AT&T &nbsp; &AMP; &#0; &#xD800; &#99999999; &copy </seg>\r\n"
           b'<seg id="3">first line\r\n  second line </seg><seg id="4">same line</seg>\r\n'
           b'<seg id="5"/>\r\n<seg id="6">   &#x20;padded&#x3000;   </seg>\r\n'
           b'</p>\r\n</DOC>\r\n</SRCSET>\r\n')
    tgt = b"".join(b'<doc docid="d1"><seg id="%d">t%d</seg></doc>\n' % (i, i) for i in range(1, 7))
    units = sgm(src, tgt)
    assert [u.source for u in units] == [
        "&lt; <b> \"q\" 'a' 中文",
        "AT&T &nbsp; &AMP; &#0; &#xD800; &#99999999; &copy",
        "first line\n  second line",
        "same line",
        "",
        " padded\u3000",
    ]
    assert [u.where for u in units] == ["doc d1 seg %d" % i for i in range(1, 7)]


def test_sgm_invalid_utf8_segment_rejected():
    units = sgm(b'<doc docid="a">\n<seg id="1"> ok </seg>\n<seg id="2"> bad \xff </seg>\n</doc>\n',
                b'<doc docid="a">\n<seg id="2"> fine </seg>\n<seg id="1"> \xc3 </seg>\n</doc>\n')
    assert units == [Reject("doc a seg 1", "invalid_utf8", "ok", "\ufffd"),
                     Reject("doc a seg 2", "invalid_utf8", "bad \ufffd", "fine")]


def test_sgm_structural_errors():
    cases = {
        b'<doc genre="x">\n<seg id="1">a</seg>\n</doc>': "src.sgm:line 1: <doc> without a docid attribute",
        b'<doc docid="a">\n<seg>a</seg>\n</doc>': "src.sgm:line 2: <seg> without an id attribute in doc a",
        b'<doc docid="a">\n<seg id="1">a\n</doc>\n': "src.sgm:line 2: <seg id=1> is never closed",
        b'<doc docid="a">\na</seg>\n</doc>': "src.sgm:line 2: </seg> without an open <seg>",
    }
    for data, message in cases.items():
        with pytest.raises(FormatError) as info:
            sgm(data, b"")
        assert str(info.value) == message
    # A segment outside any <doc> is keyed by its id alone.
    assert sgm(b'<seg id="1">x</seg>', b'<seg id="2">y</seg>') == [
        Reject("seg 1", "unmatched_source_segment", "x", ""),
        Reject("seg 2", "unmatched_target_segment", "", "y")]


# --------------------------------------------------------------------------------------------
# IWSLT XML


def _seg_lines(path):
    return len(re.findall(rb"^<seg id=", _bytes(path), flags=re.M))


def test_iwslt_real_files():
    units = file_units(read_iwslt_xml_pair, IWSLT_EN, IWSLT_ZH)
    assert _seg_lines(IWSLT_EN) == _seg_lines(IWSLT_ZH) == 647
    assert len(units) == 647 and all(isinstance(u, Pair) for u in units)
    docs = {}
    for u in units:
        doc = u.where.split()[1]
        docs[doc] = docs.get(doc, 0) + 1
    assert docs == {"2455": 116, "2459": 106, "2456": 164, "2458": 142, "2451": 119}
    assert units[0] == Pair("So, this is a story  about how we know what we know.",
                            "好吧，我要讲个故事， 是关于我们如何了解自己所知的事物。", "doc 2455 seg 1")
    assert units[116 + 106] == Pair(
        "I come from one of the most liberal,  tolerant, progressive places in the United States,  "
        "Seattle, Washington.", "我来自美国最自由、宽容和 最具发展潜力的城市之一， 华盛顿西雅图。",
        "doc 2456 seg 1")
    assert units[-1] == Pair("Thank you.", "谢谢。", "doc 2451 seg 119")
    # The talk metadata (<url>, <description>, <keywords>, <talkid>, <title>, <reviewer>,
    # <translator>) is not read as segments.
    assert b"<description>" in _bytes(IWSLT_EN) and b"<title>" in _bytes(IWSLT_ZH)
    for u in units:
        for text in (u.source, u.target):
            assert "ted.com" not in text and "TED Talk Subtitles" not in text and "<" not in text
            assert "Latif Nasser: You have no idea" not in text and "Candice Tang" not in text


def test_iwslt_docs_paired_by_docid(tmp_path):
    data = _bytes(IWSLT_ZH)
    head, rest = data.split(b"<doc ", 1)
    docs = (b"<doc " + rest).split(b"</doc>\n")
    body, tail = docs[:-1], docs[-1]
    reordered = head + b"".join(d + b"</doc>\n" for d in reversed(body)) + tail
    path = tmp_path / "reordered.zh.xml"
    path.write_bytes(reordered)
    assert file_units(read_iwslt_xml_pair, IWSLT_EN, str(path)) == \
        file_units(read_iwslt_xml_pair, IWSLT_EN, IWSLT_ZH)
    # A talk missing on the target side: its segments are rejected, the others still pair.
    path.write_bytes(head + b"".join(d + b"</doc>\n" for d in body[1:]) + tail)
    units = file_units(read_iwslt_xml_pair, IWSLT_EN, str(path))
    assert len(units) == 647 and len(pairs_of(units)) == 647 - 116
    assert {r.reason for r in rejects_of(units)} == {"unmatched_source_segment"}
    assert rejects_of(units)[0].where == "doc 2455 seg 1"


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
