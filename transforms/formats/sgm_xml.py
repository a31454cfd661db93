"""SGM / mteval (``read_sgm_pair``) and IWSLT XML (``read_iwslt_xml_pair``). Source and target
are separate files (``<srcset>``, ``<refset>`` or ``<tstset>``; the set element is not
checked), each a sequence of ``<doc docid=...>`` holding ``<seg id=...>`` elements. Real
files are often not well-formed XML (unescaped ``&`` or ``<``), so they are read with a
line-based regular-expression scanner, not an XML parser: tag names are case-insensitive,
attribute values may be double-quoted, single-quoted or bare; outside a segment only
``<doc>``, ``</doc>``, ``<seg>``, ``</seg>`` are recognised and everything else (the
``<url>``, ``<description>``, ``<keywords>``, ``<talkid>``, ``<title>``, ``<reviewer>``,
``<translator>`` lines of IWSLT talks, ``<p>``, the set and declaration lines) is ignored;
inside a segment everything up to the next ``</seg>`` is segment text, so inline markup such
as ``<p1.3/>`` is kept verbatim, and a segment may span lines (joined with ``\\n``). A
trailing ``\\r`` is removed from each line and a byte-order mark at the start of the file.
Files are read as UTF-8 whatever their declaration says; a segment containing invalid UTF-8
on either side is ``Reject("invalid_utf8")``. Segment text is stripped (``str.strip()``: the
padding spaces around it) and then unescaped, in one pass, of exactly XML's five predefined
entities (``&amp; &lt; &gt; &quot; &apos;``) and decimal/hex numeric character references
that name a character allowed in XML; everything else, including a bare ``&`` (``pool &
gazebo``), unknown names like ``&nbsp;`` and ``&AMP;``, is left as it is. (Not
``html.unescape``: it also decodes 2,000+ HTML5 names, some without the ``;``, so raw text
such as ``&para`` or ``&copy`` would change; not ``xml.sax.saxutils.unescape``: it does not
decode numeric references.) Segments are paired by (docid, seg id), not by position; ids are
compared as strings. The target file is read first into memory (one entry per segment), the
source is streamed; output is in source file order, followed by the target segments that no
source segment matched, in target file order. A segment only on one side is
``Reject("unmatched_source_segment")`` or ``Reject("unmatched_target_segment")``, ``where``
``doc D seg S`` (``seg S`` for a segment outside any ``<doc>``). A duplicate (docid, seg id)
within one file, a ``<doc>`` without docid, a ``<seg>`` without id, a nested or unclosed
``<seg>`` or a stray ``</seg>`` raise ``FormatError``. IWSLT XML files (IWSLT17
``*.en-zh.en.xml`` with ``*.zh-en.zh.xml``, whose docids match) are read the same way: only
``<seg id>`` elements are segments.

Pure Python, standard library only; part of `transforms.formats.corpus_formats`' readers.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Tuple

from transforms.contracts.elements import Pair, Reject, Unit
from transforms.formats.text_lines import ByteStream, FormatError, iter_raw_lines

__all__ = ["read_sgm_pair", "read_iwslt_xml_pair", "unescape_xml"]

_BOM = b"\xef\xbb\xbf"


_OPEN_TAG_RE = re.compile(r"<(/?)(doc|seg)(?=[\s/>])([^>]*)>", re.IGNORECASE)
_CLOSE_SEG_RE = re.compile(r"</seg\s*>", re.IGNORECASE)
_DOCID_RE = re.compile(r"""(?<![\w.:-])docid\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>/]+))""",
                       re.IGNORECASE)
_SEGID_RE = re.compile(r"""(?<![\w.:-])id\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>/]+))""",
                       re.IGNORECASE)
_ENTITY_RE = re.compile(r"&(?:(amp|lt|gt|quot|apos)|#([0-9]{1,7})|#[xX]([0-9a-fA-F]{1,6}));")
_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}


def _xml_char_ok(code):
    return (code in (0x9, 0xA, 0xD) or 0x20 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD
            or 0x10000 <= code <= 0x10FFFF)


def _entity(match):
    name, dec, hexa = match.groups()
    if name:
        return _NAMED[name]
    code = int(dec) if dec else int(hexa, 16)
    return chr(code) if _xml_char_ok(code) else match.group(0)


def unescape_xml(text: str) -> str:
    """Decode XML's predefined entities and numeric references in one pass; leave the rest."""
    return _ENTITY_RE.sub(_entity, text) if "&" in text else text


def _attr(regex, attrs):
    match = regex.search(attrs)
    if match is None:
        return None
    value = next(g for g in match.groups() if g is not None)
    return unescape_xml(value).strip()


class _Segment(NamedTuple):
    docid: Optional[str]
    segid: str
    text: str
    bad_utf8: bool
    line: int


def _seg_where(docid, segid):
    return "seg %s" % segid if docid is None else "doc %s seg %s" % (docid, segid)


def _scan_segments(stream: ByteStream, path: str) -> Iterator[_Segment]:
    """Yield every <seg> of an SGM-like file, in file order."""
    docid: Optional[str] = None
    seg: Optional[List[Any]] = None  # (segid, start line, parts, bad) while inside a <seg>
    for number, raw in enumerate(iter_raw_lines(stream), 1):
        if number == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM):]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            text = raw.decode("utf-8")
            bad = False
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "replace")
            bad = True
        if seg is not None:
            seg[2].append("\n")
            seg[3] = seg[3] or bad
        pos = 0
        while True:
            if seg is not None:
                close = _CLOSE_SEG_RE.search(text, pos)
                if close is None:
                    seg[2].append(text[pos:])
                    seg[3] = seg[3] or bad
                    break
                seg[2].append(text[pos:close.start()])
                seg[3] = seg[3] or bad
                yield _Segment(docid, seg[0], unescape_xml("".join(seg[2]).strip()), seg[3], seg[1])
                seg = None
                pos = close.end()
                continue
            tag = _OPEN_TAG_RE.search(text, pos)
            if tag is None:
                break
            pos = tag.end()
            closing, name, attrs = tag.group(1), tag.group(2).lower(), tag.group(3)
            where = "line %d" % number
            if name == "doc":
                if closing:
                    docid = None
                    continue
                docid = _attr(_DOCID_RE, attrs)
                if docid is None:
                    raise FormatError(path, where, "<doc> without a docid attribute")
                if attrs.rstrip().endswith("/"):  # <doc docid="x"/>: an empty document
                    docid = None
                continue
            if closing:
                raise FormatError(path, where, "</seg> without an open <seg>")
            segid = _attr(_SEGID_RE, attrs)
            if segid is None:
                raise FormatError(path, where, "<seg> without an id attribute%s"
                                  % ("" if docid is None else " in doc %s" % docid))
            if attrs.rstrip().endswith("/"):  # <seg id="3"/>: an empty segment
                yield _Segment(docid, segid, "", bad, number)
                continue
            seg = [segid, number, [], bad]
    if seg is not None:
        raise FormatError(path, "line %d" % seg[1], "<seg id=%s> is never closed" % seg[0])


def _read_segmented_pair(source_stream: ByteStream, source_path: str,
                         target_stream: ByteStream, target_path: str,
                         invalid_utf8: str = "reject") -> Iterator[Unit]:
    targets: Dict[Tuple[Optional[str], str], _Segment] = {}
    for seg in _scan_segments(target_stream, target_path):
        key = (seg.docid, seg.segid)
        first = targets.get(key)
        if first is not None:
            raise FormatError(target_path, "line %d" % seg.line, "duplicate segment %s (first at line %d)"
                              % (_seg_where(*key), first.line))
        targets[key] = seg
    seen: Dict[Tuple[Optional[str], str], int] = {}
    for seg in _scan_segments(source_stream, source_path):
        key = (seg.docid, seg.segid)
        if key in seen:
            raise FormatError(source_path, "line %d" % seg.line, "duplicate segment %s (first at line %d)"
                              % (_seg_where(*key), seen[key]))
        seen[key] = seg.line
        where = _seg_where(*key)
        target = targets.pop(key, None)
        if target is None:
            yield Reject(where, "unmatched_source_segment", seg.text, "")
        elif (seg.bad_utf8 or target.bad_utf8) and invalid_utf8 != "replace":
            yield Reject(where, "invalid_utf8", seg.text, target.text)
        else:
            yield Pair(seg.text, target.text, where)
    for key, target in targets.items():
        yield Reject(_seg_where(*key), "unmatched_target_segment", "", target.text)


def read_sgm_pair(source_stream: ByteStream, source_path: str, target_stream: ByteStream,
                  target_path: str, invalid_utf8: str = "reject") -> Iterator[Unit]:
    """Pairs from an mteval SGM source/reference file pair, matched by (docid, seg id).

    Segments that are not UTF-8 are Rejects, or with `invalid_utf8="replace"` decoded with
    U+FFFD.
    """
    return _read_segmented_pair(source_stream, source_path, target_stream, target_path,
                                invalid_utf8)


def read_iwslt_xml_pair(source_stream: ByteStream, source_path: str,
                        target_stream: ByteStream, target_path: str,
                        invalid_utf8: str = "reject") -> Iterator[Unit]:
    """Pairs from IWSLT XML files: as SGM; talk metadata lines (<url>, <title> ...) ignored."""
    return _read_segmented_pair(source_stream, source_path, target_stream, target_path,
                                invalid_utf8)
