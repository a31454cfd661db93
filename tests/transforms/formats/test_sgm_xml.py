"""transforms.formats.corpus_formats: the SGM (WMT mteval) and IWSLT XML readers on real files:
segments paired by document and id, not by position; unmatched, duplicate and malformed
segments. Fixtures are slices of real public files in tests/data/formats (provenance in its
README.md).
"""

import random
import re

import pytest

from format_readers import (IWSLT_EN, IWSLT_ZH, SGM_EN, SGM_ZH, file_bytes as _bytes, file_units,
                            pairs_of, rejects_of, sgm)
from transforms.formats.corpus_formats import (FormatError, Pair, Reject, read_iwslt_xml_pair,
                                               read_sgm_pair)


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
