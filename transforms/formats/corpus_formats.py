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

SGM / mteval and IWSLT XML pairs: `transforms.formats.sgm_xml`; members of archives
(``archive!member``): `transforms.formats.archives`; both re-exported here, so this module is
the one place the readers are looked up. ``detect_format`` picks the reader from the file name (the member's name
for archives), after removing a compression suffix (``.gz``, ``.bz2``, ``.xz``, ``.zst``, ...): ``.tsv``/``.tab`` -> tsv,
``.tmx`` -> tmx, ``.sgm`` -> sgm, ``.xml`` -> iwslt, anything else -> lines.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Iterator, List, Optional

from transforms.contracts.elements import Pair, Reject, Unit
from transforms.formats.archives import open_archive_member, split_archive_path
from transforms.formats.checked_decompress import strip_compression_suffix
from transforms.formats.sgm_xml import read_iwslt_xml_pair, read_sgm_pair
from transforms.formats.text_lines import ByteStream, FormatError, InputError, iter_raw_lines

__all__ = [
    "Pair", "Reject", "FormatError", "read_tsv", "read_tmx", "read_sgm_pair",
    "read_iwslt_xml_pair", "open_archive_member", "split_archive_path", "detect_format",
]

_BOM = b"\xef\xbb\xbf"


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
