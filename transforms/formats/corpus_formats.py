"""Readers that turn parallel corpora in Tensor2Tensor's input formats into aligned pairs.

Pure Python, standard library only (no Beam, no TensorFlow, no lxml; the project's
`transforms.formats.text_lines` only for its error class, which a stream may raise): the pipeline opens the
files (Beam FileSystems) and passes binary file objects; only ``.read(n)`` is used, except
that archives use ``seek`` when the stream is seekable. Every reader is a generator of
``Pair`` (an aligned source/target pair) and ``Reject`` (a unit that could not be paired, with
a short snake_case reason), so every unit of the input is accounted for: a unit is a row of a
TSV file, a ``<tu>`` of a TMX file, a ``<seg>`` of an SGM or IWSLT XML file. A problem that
makes the rest of the file meaningless (malformed XML, a duplicate segment id, a missing
archive member) raises ``FormatError``, whose message is ``"path:where: message"`` with
``where`` a line number, segment id or archive member. Problems with the arguments (negative
column, same source and target language) raise a plain ``ValueError`` when the reader is
called. Reject texts are whole (the vocabulary sample reads them; the rejects file truncates
them to 500 characters). ``where`` is a human position:
``line 12``, ``tu 5``, ``doc 2455 seg 3`` (all 1-based as the file numbers them).

TSV (``read_tsv``). UTF-8. A byte-order mark at the very start of the file is removed (one
anywhere else is kept as U+FEFF). Lines end at ``\\n``; one trailing ``\\r`` is removed (a
``\\r`` inside a line is kept). Each line is split on every ``\\t``: TSV has no quoting, so a
field that contains a tab cannot be represented, and a tab inside the source text shifts the
columns after it (the row is read with the wrong target, or rejected as ``too_few_columns``).
Columns beyond the two requested are ignored (``cmn.txt``'s attribution column). Fields are
not stripped. A line that is not valid UTF-8 is ``Reject("invalid_utf8")`` (its text decoded
with U+FFFD replacements); a line with fewer than ``max(source_column, target_column) + 1``
columns is ``Reject("too_few_columns")`` with the raw line as source; an empty line followed
by a later non-empty line is ``Reject("empty_line")``. Empty lines after the last non-empty
line are not rows: a file ending in ``\\n`` (or in ``\\n\\n``, as Tatoeba's ``cmn.txt`` does)
has no extra row and no reject.

TMX (``read_tmx``; TMX 1.4, also 1.1/1.2 ``lang``). Parsed with
``xml.etree.ElementTree.iterparse`` in streaming mode: each ``<tu>`` is cleared and detached
once read, so memory does not grow with the file. The XML parser handles the declared encoding
(UTF-8, UTF-16, single-byte ones such as Latin-1; a multi-byte legacy encoding such as Big5 or
Shift_JIS is a ``FormatError``), character references (``&#x3000;``) and the predefined
entities; external DTDs are not loaded. For each ``<tu>`` (``where="tu N"``, N its 1-based index in the
file), the ``<tuv>`` of each side is chosen by its ``xml:lang`` attribute (or ``lang``):
languages are compared case-insensitively with ``_`` read as ``-``; a tuv matches a requested
language if it is the same tag (``EN_us`` matches ``en-US``), or, when the requested language
is a bare base language, if the tuv's base language is that (``en-US`` and ``en-GB`` match
``en``; ``en`` does not match ``en-US``, and ``en-GB`` does not match ``en-US``). An exact
match wins over a base match; among equals the first tuv in the tu wins; one tuv is never used
for both sides (the side with the exact match keeps it). The text of a side is the full text
content of the tuv's ``<seg>``: text, the inner text of ``<hi>`` and ``<sub>`` elements and
the tail text after every inline element are kept; the content of the native-code elements
``<bpt>``, ``<ept>``, ``<ph>``, ``<it>``, ``<ut>`` is dropped (except the text of a ``<sub>``
nested in them, which is kept), so ``a <ph>&lt;br/&gt;</ph>b`` reads ``a b``. Segment text is
not stripped (OPUS exports end every segment with a space; it is kept). A ``<tu>`` with no
tuv (or no ``<seg>``) for a side is ``Reject("missing_source")``, ``Reject("missing_target")``
or, if neither side is present, ``Reject("missing_source_and_target")``; an empty ``<seg/>``
is a pair with an empty side (the pipeline rejects it later). Malformed XML, an unsupported
encoding declaration or a root element other than ``<tmx>`` raise ``FormatError`` with the
parser's line number.

SGM / mteval (``read_sgm_pair``) and IWSLT XML (``read_iwslt_xml_pair``). Source and target
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

Archives (``split_archive_path``, ``open_archive_member``). ``archive!member`` names a file
inside an archive: the path is split at the first ``!`` that follows a name ending in
``.tar``, ``.tar.gz``, ``.tgz``, ``.tar.bz2``, ``.tbz2``, ``.tar.xz``, ``.txz`` or ``.zip``
(a ``!`` elsewhere is part of the file name; nested archives are not supported). Tar archives
(any compression, detected from content, so a stream already decompressed by Beam works too)
are opened with ``tarfile`` mode ``r:*`` when the stream is seekable, else in streaming mode
``r|*``, scanning members in order until the member is found (a link cannot be followed in
streaming mode). Zip archives need random access: a non-seekable stream is first read whole
into memory (the archive's full compressed size). Member names match with or without a
leading ``./`` or ``/``; the first member of that name is used. ``open_archive_member`` owns
the stream it is given: closing the member file closes it (and the archive), and so does any
error while opening the member. A missing member, a directory, a corrupt or unreadable
archive raise ``FormatError`` naming the archive and member; so do decompression errors while
the member is read. ``detect_format`` picks the reader from the file name (the member's name
for archives), after removing a compression suffix (``.gz``, ``.bz2``, ``.xz``, ``.zst``, ...): ``.tsv``/``.tab`` -> tsv,
``.tmx`` -> tmx, ``.sgm`` -> sgm, ``.xml`` -> iwslt, anything else -> lines.
"""

from __future__ import annotations

import io
import re
import tarfile
import xml.etree.ElementTree as ET
import zipfile
import zlib
from typing import IO, Any, Dict, Iterator, List, NamedTuple, Optional, Tuple

from transforms.elements import Pair, Reject, Unit
from transforms.formats.checked_decompress import strip_compression_suffix
from transforms.formats.text_lines import ByteStream, InputError, iter_raw_lines

try:  # optional stdlib modules (absent in some minimal Python builds)
    import lzma
    _LZMA_ERRORS: tuple = (lzma.LZMAError,)
except ImportError:  # pragma: no cover
    _LZMA_ERRORS = ()

__all__ = [
    "Pair", "Reject", "FormatError", "read_tsv", "read_tmx", "read_sgm_pair",
    "read_iwslt_xml_pair", "open_archive_member", "split_archive_path", "detect_format",
]

_BOM = b"\xef\xbb\xbf"


class FormatError(ValueError):
    """An unrecoverable problem in an input file; str() is "path:where: message"."""

    def __init__(self, path: str, where: str, message: str) -> None:
        self.path = path
        self.where = where
        self.message = message
        super().__init__("%s:%s: %s" % (path, where, message))

    def __reduce__(self):  # picklable across worker processes
        return (type(self), (self.path, self.where, self.message))




# --------------------------------------------------------------------------------------------
# TSV


def read_tsv(stream: ByteStream, path: str, source_column: int = 0, target_column: int = 1,
             invalid_utf8: str = "reject") -> Iterator[Unit]:
    """Pairs from a tab-separated file: one row per line, source and target columns by index.

    A row that is not UTF-8 is a Reject, or with `invalid_utf8="replace"` decoded with U+FFFD.
    """
    for name, value in (("source_column", source_column), ("target_column", target_column)):
        if not isinstance(value, int) or value < 0:
            raise ValueError("%s must be a non-negative integer, not %r" % (name, value))
    if source_column == target_column:
        raise ValueError("source_column and target_column are both %d" % source_column)
    return _read_tsv(stream, path, source_column, target_column, invalid_utf8 == "replace")


def _read_tsv(stream: ByteStream, path: str, source_column: int, target_column: int,
              replace: bool = False) -> Iterator[Unit]:
    need = max(source_column, target_column) + 1
    blank_start, blank_count = 0, 0  # a run of empty lines, reported only if a row follows
    for number, raw in enumerate(iter_raw_lines(stream), 1):
        if number == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM):]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw:
            if not blank_count:
                blank_start = number
            blank_count += 1
            continue
        for blank in range(blank_start, blank_start + blank_count):
            yield Reject("line %d" % blank, "empty_line", "", "")
        blank_count = 0
        where = "line %d" % number
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "replace")
            if not replace:
                yield Reject(where, "invalid_utf8", text, "")
                continue
        fields = text.split("\t")
        if len(fields) < need:
            yield Reject(where, "too_few_columns", text, "")
            continue
        yield Pair(fields[source_column], fields[target_column], where)


# --------------------------------------------------------------------------------------------
# TMX

_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_NATIVE_CODE = frozenset(("bpt", "ept", "ph", "it", "ut"))


def _local(tag):
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1] if tag.startswith("{") else tag


def _norm_lang(lang):
    return lang.strip().lower().replace("_", "-")


def _lang_rank(tuv_lang, wanted):
    """0 for an exact match, 1 for a base-language match, None for no match."""
    lang = _norm_lang(tuv_lang)
    if lang == wanted:
        return 0
    if "-" not in wanted and lang.split("-", 1)[0] == wanted:
        return 1
    return None


def _seg_text(seg):
    """Full text of a <seg>: keeps text, tails, <hi>/<sub> content; drops native codes."""
    out = []
    stack = [(seg, True)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        elem, inherited = item
        local = _local(elem.tag)
        if elem is seg:
            keep = True
        elif local in _NATIVE_CODE:
            keep = False
        elif local == "sub":
            keep = True
        else:
            keep = inherited
        if keep and elem.text:
            out.append(elem.text)
        for child in reversed(elem):
            if keep and child.tail:
                stack.append(child.tail)
            stack.append((child, keep))
    return "".join(out)


def _tuv_side_text(tuv):
    for child in tuv:
        if _local(child.tag) == "seg":
            return _seg_text(child)
    return None


def read_tmx(stream: ByteStream, path: str, source_lang: Optional[str],
             target_lang: Optional[str]) -> Iterator[Unit]:
    """Pairs from a TMX file, one unit per <tu>, sides chosen by the tuvs' xml:lang."""
    wanted = []
    for name, value in (("source_lang", source_lang), ("target_lang", target_lang)):
        if not isinstance(value, str) or not _norm_lang(value):
            raise ValueError("%s must be a language code, not %r" % (name, value))
        wanted.append(_norm_lang(value))
    if wanted[0] == wanted[1]:
        raise ValueError("source_lang and target_lang are the same language %r" % source_lang)
    return _read_tmx(stream, path, wanted[0], wanted[1])


def _choose(candidates, exclude):
    for rank, index, text in candidates:
        if index != exclude:
            return rank, index, text
    return None


def _tu_unit(tu, number, source_lang, target_lang):
    source_candidates, target_candidates = [], []
    index = 0
    for child in tu:
        if _local(child.tag) != "tuv":
            continue
        index += 1
        lang = child.get(_XML_LANG)
        if lang is None:
            lang = child.get("lang")
        if lang is None:
            continue
        source_rank = _lang_rank(lang, source_lang)
        target_rank = _lang_rank(lang, target_lang)
        if source_rank is None and target_rank is None:
            continue
        text = _tuv_side_text(child)
        if text is None:
            continue
        if source_rank is not None:
            source_candidates.append((source_rank, index, text))
        if target_rank is not None:
            target_candidates.append((target_rank, index, text))
    source_candidates.sort(key=lambda c: c[:2])
    target_candidates.sort(key=lambda c: c[:2])
    source = source_candidates[0] if source_candidates else None
    target = target_candidates[0] if target_candidates else None
    if source is not None and target is not None and source[1] == target[1]:
        if target[0] < source[0]:
            source = _choose(source_candidates, target[1])
        else:
            target = _choose(target_candidates, source[1])
    where = "tu %d" % number
    if source is not None and target is not None:
        return Pair(source[2], target[2], where)
    reason = ("missing_source_and_target" if source is None and target is None
              else "missing_source" if source is None else "missing_target")
    return Reject(where, reason, source[2] if source else "",
                  target[2] if target else "")


def _read_tmx(stream: ByteStream, path: str, source_lang: str, target_lang: str
              ) -> Iterator[Unit]:
    events = ET.iterparse(stream, events=("start", "end"))
    open_elements: List[ET.Element] = []
    tu_depth = 0  # <tu> elements currently open (a nested <tu> is content, not a unit)
    number = 0
    root_checked = False
    while True:
        try:
            event, elem = next(events)
        except StopIteration:
            break
        except (FormatError, InputError):  # the stream's own error (a cut .gz) names the file
            raise
        except ET.ParseError as error:
            line = error.position[0] if getattr(error, "position", None) else 0
            raise FormatError(path, "line %d" % line, "malformed XML: %s" % error) from None
        except (LookupError, ValueError) as error:  # encoding declaration Python can't use
            raise FormatError(path, "line 1", "unsupported XML encoding: %s" % error) from None
        if event == "start":
            if not root_checked:
                root_checked = True
                if _local(elem.tag) != "tmx":
                    raise FormatError(path, "root element",
                                      "not a TMX file: root element <%s>, expected <tmx>"
                                      % _local(elem.tag))
            open_elements.append(elem)
            if _local(elem.tag) == "tu":
                tu_depth += 1
            continue
        open_elements.pop()
        if _local(elem.tag) != "tu":
            continue
        tu_depth -= 1
        if tu_depth:
            continue
        number += 1
        unit = _tu_unit(elem, number, source_lang, target_lang)
        elem.clear()
        if open_elements:  # detach finished siblings so memory stays flat
            del open_elements[-1][:]
        yield unit


# --------------------------------------------------------------------------------------------
# SGM / IWSLT XML

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


# --------------------------------------------------------------------------------------------
# Archives and format detection

_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
_ARCHIVE_SUFFIXES = _TAR_SUFFIXES + (".zip",)
_ARCHIVE_ERRORS = (tarfile.TarError, zipfile.BadZipFile, zipfile.LargeZipFile, OSError,
                   EOFError, zlib.error, RuntimeError, NotImplementedError, ValueError,
                   KeyError) + _LZMA_ERRORS


def split_archive_path(path: str) -> Tuple[str, Optional[str]]:
    """"a/b.tgz!x/y.en" -> ("a/b.tgz", "x/y.en"); a path naming no archive member -> (path, None)."""
    start = 0
    while True:
        bang = path.find("!", start)
        if bang < 0:
            return path, None
        if path[:bang].lower().endswith(_ARCHIVE_SUFFIXES):
            member = path[bang + 1:]
            if not member:
                raise FormatError(path[:bang], "member", "empty archive member name after '!'")
            return path[:bang], member
        start = bang + 1


def _member_key(name):
    while name.startswith("./"):
        name = name[2:]
    return name.lstrip("/")


class _MemberReader(io.RawIOBase):
    """An archive member: keeps the archive objects alive; read errors become FormatError."""

    def __init__(self, member_file: IO[bytes], keep: List[Any], archive_path: str,
                 member: str) -> None:
        super().__init__()
        self._file = member_file
        self._keep = keep
        self._archive_path = archive_path
        self._member = member

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self._file.read(len(buffer))
        except FormatError:
            raise
        except _ARCHIVE_ERRORS as error:
            raise FormatError(self._archive_path, "member %s" % self._member,
                              "cannot read archive member: %s" % error) from None
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            try:
                self._file.close()
                for obj in self._keep:
                    _close_quietly(obj)
            finally:
                super().close()


def _is_seekable(stream):
    try:
        return bool(stream.seekable())
    except Exception:  # no seekable() or a closed/odd stream: treat as a pipe
        return False


def _not_found(archive_path, member, names, count):
    sample = ", ".join(names[:5]) + (", ..." if count > 5 else "")
    return FormatError(archive_path, "member %s" % member,
                       "no such member in the archive (%d members%s)"
                       % (count, ": " + sample if count else ""))


def open_archive_member(stream: IO[bytes], archive_path: str, member: str) -> IO[bytes]:
    """A binary file object reading `member` of the tar or zip archive in `stream`.

    Takes ownership of `stream`: closing the returned file closes it, and so does a failure.
    """
    where = "member %s" % member
    wanted = _member_key(member)
    try:
        if not wanted:
            raise FormatError(archive_path, where, "empty archive member name")
        if archive_path.lower().endswith(".zip"):
            return _open_zip_member(stream, archive_path, member, wanted)
        return _open_tar_member(stream, archive_path, member, wanted)
    except BaseException as error:
        _close_quietly(stream)
        if isinstance(error, FormatError) or not isinstance(error, _ARCHIVE_ERRORS):
            raise
        raise FormatError(archive_path, where, "cannot read archive: %s: %s"
                          % (type(error).__name__, error)) from None


def _close_quietly(stream):
    try:
        close = stream.close
    except AttributeError:
        return
    try:
        close()
    except Exception:  # the original error matters more
        pass


def _open_zip_member(stream, archive_path, member, wanted):
    data = stream if _is_seekable(stream) else io.BytesIO(stream.read())  # whole zip in memory
    archive = zipfile.ZipFile(data)
    infos = archive.infolist()
    info = next((i for i in infos if _member_key(i.filename) == wanted), None)
    if info is None:
        raise _not_found(archive_path, member, [i.filename for i in infos], len(infos))
    if info.is_dir():
        raise FormatError(archive_path, "member %s" % member, "is a directory, not a file")
    return io.BufferedReader(_MemberReader(archive.open(info), [archive, stream], archive_path, member))


def _open_tar_member(stream, archive_path, member, wanted):
    streaming = not _is_seekable(stream)
    archive = tarfile.open(fileobj=stream, mode="r|*" if streaming else "r:*")
    names: List[str] = []
    count = 0
    for info in archive:
        count += 1
        if len(names) < 5:
            names.append(info.name)
        if _member_key(info.name) != wanted:
            continue
        if info.isdir():
            raise FormatError(archive_path, "member %s" % member, "is a directory, not a file")
        if streaming and not info.isfile():
            raise FormatError(archive_path, "member %s" % member,
                              "is a link or special file; cannot follow it in a non-seekable stream")
        member_file = archive.extractfile(info)
        if member_file is None:
            raise FormatError(archive_path, "member %s" % member, "is not a regular file")
        return io.BufferedReader(_MemberReader(member_file, [archive, stream], archive_path, member))
    raise _not_found(archive_path, member, names, count)


_FORMAT_BY_SUFFIX = ((".tsv", "tsv"), (".tab", "tsv"), (".tmx", "tmx"), (".sgm", "sgm"),
                     (".xml", "iwslt"))


def detect_format(path: str) -> str:
    """'lines', 'tsv', 'tmx', 'sgm' or 'iwslt', from the file name (the member's, for archives)."""
    outer, member = split_archive_path(path)
    name = member if member is not None else outer
    base = name.rstrip("/").rsplit("/", 1)[-1].lower()
    base = strip_compression_suffix(base)
    for suffix, kind in _FORMAT_BY_SUFFIX:
        if base.endswith(suffix):
            return kind
    return "lines"
