"""How datagen reads text lines: the same lines Tensor2Tensor sees, with errors that name file and line.

T2T reads corpora through `tf.gfile` in text mode: lines end at `\\n` only, TensorFlow's line
reader drops every `\\r` anywhere in a line (not only before the `\\n`), every line is
decoded as strict UTF-8, and each line is `str.strip()`-ed before use. These helpers work on binary file objects (from Beam's
`FileSystems.open`, so `gs://` and `s3://` work) and import no Beam or TensorFlow themselves.
"""

from array import array
from typing import Dict, Iterable, Iterator, List, Literal, Optional, Protocol, Tuple, overload

from transforms.errors import JobError

_CHUNK = 1 << 22


class ByteStream(Protocol):
    """What the readers here use of a binary file object: `read` and `close` (a file from
    Beam's FileSystems, a store's stream, an archive member, a `MarkCounter`)."""

    def read(self, size: int = ..., /) -> bytes: ...

    def close(self) -> None: ...


Marks = Dict[str, int]  # `scan_stream`'s counts: lone_cr, nul; bom, wide_bom as 0/1
Part = Tuple[int, int, int]  # a sample's part: (start byte, end byte, line number before)


class InputError(JobError, ValueError):
    """Bad input that names the file and (1-based) line."""

    def __init__(self, path: str, line_number: int, message: str) -> None:
        where = "%s:%d" % (path, line_number) if line_number else path
        super().__init__("%s: %s" % (where, message))
        self.path = path
        self.line_number = line_number



class FormatError(JobError, ValueError):
    """An unrecoverable problem in a corpus file (`transforms.formats.corpus_formats`); str() is "path:where: message"."""

    def __init__(self, path: str, where: str, message: str) -> None:
        self.path = path
        self.where = where
        self.message = message
        super().__init__("%s:%s: %s" % (path, where, message))

    def __reduce__(self) -> tuple:  # picklable across worker processes
        return (type(self), (self.path, self.where, self.message))


def iter_raw_lines(stream: ByteStream, limit: Optional[int] = None) -> Iterator[bytes]:
    """Yields the lines of a binary stream as bytes without their `\\n`, at most `limit` of them."""
    if limit is not None and limit <= 0:
        return
    pending = b""
    emitted = 0
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            break
        parts = (pending + chunk).split(b"\n")
        pending = parts.pop()
        for part in parts:
            yield part
            emitted += 1
            if limit is not None and emitted >= limit:
                return
    if pending:
        yield pending


@overload
def decode_line(raw: bytes, path: str, line_number: int,
                on_invalid: Literal["error", "replace"] = ...) -> str: ...
@overload
def decode_line(raw: bytes, path: str, line_number: int, on_invalid: str) -> Optional[str]: ...
def decode_line(raw: bytes, path: str, line_number: int,
                on_invalid: str = "error") -> Optional[str]:
    """A line as T2T's `tf.gfile` reader yields it: `\\r` removed, strict UTF-8.

    A line that is not UTF-8 raises InputError naming the file and line (`on_invalid`
    "error"), returns None ("reject": the caller rejects the pair) or is decoded with U+FFFD
    replacement characters ("replace").
    """
    if b"\r" in raw:
        raw = raw.replace(b"\r", b"")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        if on_invalid == "replace":
            return raw.decode("utf-8", "replace")
        if on_invalid == "reject":
            return None
        raise InputError(path, line_number,
                         "invalid UTF-8 at byte %d of the line (%s)" % (e.start, e.reason)) from None


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


UTF8_BOM = b"\xef\xbb\xbf"
_HEAD = 4  # bytes at the start of a file that say its byte-order mark


def _head_marks(head: bytes, marks: Marks) -> None:
    marks["bom"] = head.startswith(UTF8_BOM)
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or head == b"\x00\x00\xfe\xff":
        marks["wide_bom"] = True  # UTF-16 or UTF-32: not UTF-8 from its first byte


def scan_stream(stream: ByteStream, checkpoint_every: int, marks: Optional[Marks] = None
                ) -> Tuple[int, int, List[Tuple[int, int]], Optional[int]]:
    """Counts lines and bytes of a binary stream in one read.

    Returns (num_bytes, num_lines, checkpoints, first_invalid) where checkpoints lists
    (line_index, byte_offset) of the start of every `checkpoint_every`-th line (so a reader
    can seek there) and first_invalid is the 1-based number of the first line that is not
    valid UTF-8, or None. A dict `marks` gets what T2T reads as text but a user likely did
    not mean (`text_marks`): `lone_cr`, carriage returns not followed by `\n` (old Mac line
    ends: the file reads as one long line); `nul`, NUL bytes (UTF-16/32 text?); `bom`,
    whether the file starts with a UTF-8 byte-order mark (kept as text in line 1).
    """
    lone_cr = nul = 0
    head = b""  # the first bytes, for the byte-order mark
    num_bytes = 0
    num_lines = 0
    checkpoints = [(0, 0)]
    first_invalid: Optional[int] = None
    pending = b""
    pending_offset = 0
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            break
        num_bytes += len(chunk)
        if len(head) < _HEAD:
            head += chunk[:_HEAD - len(head)]
        data = pending + chunk
        parts = data.split(b"\n")
        pending = parts.pop()
        if marks is not None:  # the lines ended here (`pending` is counted with the next)
            if b"\r" in data:  # most files have none: one search, not two counts
                lone_cr += (data.count(b"\r") - data.count(b"\r\n")
                            - pending.count(b"\r") + pending.count(b"\r\n"))
            if b"\0" in data:
                nul += data.count(b"\0") - pending.count(b"\0")
        offset = pending_offset
        for part in parts:
            if first_invalid is None and not _is_utf8(part):
                first_invalid = num_lines + 1
            num_lines += 1
            offset += len(part) + 1
            if num_lines % checkpoint_every == 0:
                checkpoints.append((num_lines, offset))
        pending_offset = offset
    if pending:
        if first_invalid is None and not _is_utf8(pending):
            first_invalid = num_lines + 1
        num_lines += 1
    if marks is not None:
        marks["lone_cr"] = lone_cr + pending.count(b"\r")
        marks["nul"] = nul + pending.count(b"\0")
        _head_marks(head, marks)
    if checkpoints[-1][0] >= num_lines and len(checkpoints) > 1:
        checkpoints.pop()
    return num_bytes, num_lines, checkpoints, first_invalid


class MarkCounter:
    """A binary stream's `read`, counting on the way what `scan_stream` counts in `marks`
    (for line files read once, by a converter, rather than scanned)."""

    def __init__(self, stream: ByteStream) -> None:
        self._stream = stream
        self._head = b""
        self._last = b""
        self.marks: Marks = {"lone_cr": 0, "nul": 0, "bom": False}

    def read(self, size: int = -1, /) -> bytes:
        data = self._stream.read(size)
        if data:
            marks = self.marks
            if len(self._head) < _HEAD:
                self._head += data[:_HEAD - len(self._head)]
                _head_marks(self._head, marks)
            # a "\r" ending the previous read counted as lone; a "\n" here makes it CRLF
            marks["lone_cr"] += data.count(b"\r") - data.count(b"\r\n") - (
                self._last == b"\r" and data[:1] == b"\n")
            marks["nul"] += data.count(b"\0")
            self._last = data[-1:]
        return data

    def close(self) -> None:
        self._stream.close()


def text_marks(path: str, marks: Marks) -> List[str]:
    """The warnings of `scan_stream`'s `marks` for the file `path` (T2T reads such text as
    it is, and so does the job; these say what that means)."""
    warnings = []
    if marks.get("lone_cr"):
        warnings.append("%s: %d carriage returns (\\r) not followed by \\n: lines end at \\n "
                        "only, as T2T reads them, so text with old Mac line ends reads as one "
                        "long line (convert it: tr '\\r' '\\n')" % (path, marks["lone_cr"]))
    if marks.get("bom"):
        warnings.append("%s: starts with a UTF-8 byte-order mark, kept as text at the start of "
                        "line 1 (as T2T keeps it)" % path)
    if marks.get("wide_bom"):
        warnings.append("%s: starts with a UTF-16 or UTF-32 byte-order mark: the job reads "
                        "UTF-8 only (convert it: iconv -f UTF-16 -t UTF-8)" % path)
    if marks.get("nul"):
        warnings.append("%s: %d NUL bytes, kept as characters (as T2T keeps them); UTF-16 or "
                        "UTF-32 text? (convert it: iconv -t UTF-8)" % (path, marks["nul"]))
    return warnings


def _sampled(raw_lines: Iterable[bytes], stride: int, budget: float, path: str,
             on_invalid: str, number: int = 0, counter: int = 0, offset: int = 0,
             end: Optional[int] = None) -> Iterator[Tuple[int, int, str]]:
    """Tensor2Tensor's `generate_lines_for_vocab` loop over `raw_lines` (a file's lines from
    byte `offset` on, the first one numbered `number + 1`): yields (line number, byte offset,
    stripped line) of each sampled line. `counter` is the stride counter at the start; lines
    starting at or after byte `end` are not read."""
    for raw in raw_lines:
        number += 1
        at = offset
        offset += len(raw) + 1
        if end is not None and at >= end:
            return
        if counter < stride:
            counter += 1
            continue
        if budget <= 0:
            return
        line = decode_line(raw, path, number, on_invalid)
        if line is None:
            continue
        line = line.strip()
        budget -= len(line)
        counter = 0
        yield number, at, line


def sample_stride(file_size: int, byte_budget: float) -> int:
    """Lines T2T skips between two sampled lines of a file of `file_size` bytes."""
    return int(file_size / byte_budget / 2)


def sample_lines_for_vocab(raw_lines: Iterable[bytes], file_size: int, byte_budget: float,
                           path: str = "<stream>", on_invalid: str = "error"
                           ) -> Iterator[str]:
    """Tensor2Tensor's `generate_lines_for_vocab` sampling for one file.

    Skips `int(file_size / byte_budget / 2)` lines between samples, takes one stripped line,
    charges its length in characters against the budget, and stops when a line is due and the
    budget is spent (so the last line may overshoot). Yields decoded, stripped lines. With
    `on_invalid="reject"` a line that is not UTF-8 is passed over and the next line is taken
    in its place.
    """
    for _, _, line in _sampled(raw_lines, sample_stride(file_size, byte_budget), byte_budget,
                               path, on_invalid):
        yield line


def sample_part_lines(raw_lines: Iterable[bytes], file_size: int, byte_budget: float,
                      part: Part, path: str = "<stream>", on_invalid: str = "error"
                      ) -> Iterator[str]:
    """The sampled lines of one part of `plan_counted_sample_parts`; `raw_lines` are the
    file's lines from the part's start byte on."""
    start, end, number = part
    stride = sample_stride(file_size, byte_budget)
    for _, _, line in _sampled(raw_lines, stride, float("inf"), path, on_invalid, number,
                               counter=stride, offset=start, end=end):
        yield line


# `plan_counted_sample_parts`: distinct characters of the sample it holds to find repeats
# (about 2-4 bytes each with their dictionary entry); past that, new lines count once each
COUNTED_LINES_CHARS = 1 << 26
# Finding repeats costs ~0.5-1 us a line (a dictionary of the lines): a sample whose first
# REPEATS_PROBE_LINES lines repeat fewer than REPEATS_MIN_SHARE of them stops looking (on
# 368k distinct Chinese lines it would cost the planning worker 0.4 s, 10% of counting them)
REPEATS_PROBE_LINES = 1 << 16
REPEATS_MIN_SHARE = 0.01


def few_repeats(lines: int, repeats: int) -> bool:
    """Whether a sample that repeated `repeats` of its first `lines` lines should stop
    looking for repeats: asked before each line, decided once, at REPEATS_PROBE_LINES."""
    return lines == REPEATS_PROBE_LINES and repeats < REPEATS_MIN_SHARE * lines


def plan_counted_sample_parts(raw_lines: Iterable[bytes], file_size: int, byte_budget: float,
                              part_chars: int, path: str = "<stream>",
                              on_invalid: str = "error",
                              max_chars: int = COUNTED_LINES_CHARS
                              ) -> List[Tuple[Part, "array[int]"]]:
    """The sample of one file (as `sample_lines_for_vocab` takes it) cut into parts that
    can be read independently, in parallel (`sample_part_lines`), each distinct line to be
    counted once with its number of occurrences.

    Returns [((start byte, end byte, line number before start), times)]: a part starts at a
    sampled line (where T2T's stride counter always equals the stride) and holds the
    sampled lines starting before `end`; the last part ends one byte after the start of the
    last sampled line (later lines are past the budget or the file). `times` holds one
    count per sampled line of the part: how often it is to be counted, the number of times
    it occurs in the whole sample at its first occurrence, 0 at every later one. Token
    counts are additive over lines, so this gives the counts of the whole sample exactly,
    and a corpus that repeats lines (of the en-zh bench corpus's sampled lines 25% of the
    English are distinct, 48% of the Chinese) is tokenized once per distinct line. A part
    starts at a new line once about `part_chars` characters of new lines were taken since
    the last start: the parts hold about equal tokenizing work. The distinct lines held
    stop at `max_chars` characters: a new line after that counts once wherever it occurs;
    a sample with few repeats in its first lines stops looking (`few_repeats`).
    Reads the file once, decoding only the sampled lines (their lengths spend the budget).
    """
    first: Dict[str, int] = {}  # a distinct sampled line -> its index in `times`
    times = array("Q")
    starts: List[Tuple[int, int, int]] = []  # (start byte, line number before, index in times)
    fresh = held = repeats = 0
    looking = True
    last = 0
    for number, at, line in _sampled(raw_lines, sample_stride(file_size, byte_budget),
                                     byte_budget, path, on_invalid):
        last = at
        if looking:
            if few_repeats(len(times), repeats):
                looking = False
                first = {}
            else:
                seen = first.get(line)
                if seen is not None:
                    times[seen] += 1
                    times.append(0)
                    repeats += 1
                    continue
        if not starts or fresh >= part_chars:
            starts.append((at, number - 1, len(times)))
            fresh = 0
        fresh += len(line)
        if looking and held < max_chars:
            first[line] = len(times)
            held += len(line)
        times.append(1)
    ends = [s[0] for s in starts[1:]] + [last + 1]
    stops = [s[2] for s in starts[1:]] + [len(times)]
    return [((start, end, before), times[index:stop])
            for (start, before, index), end, stop in zip(starts, ends, stops)]


def mixture_lines(raw_lines: Iterable[bytes], lines: int, take: int, path: str = "<stream>",
                  on_invalid: str = "error", number: int = 0, offset: int = 0,
                  end: Optional[int] = None) -> Iterator[str]:
    """The lines a file of `lines` lines gives a mixed sample of `take` lines
    (`transforms.pairs.mixing.take_count`: evenly spread, each decoded, stripped line as often as
    it is taken). `raw_lines` are the file's lines from byte `offset` on, `number` lines in;
    lines starting at or after byte `end` are not read (a part of `plan_line_parts`). A line
    that is not UTF-8 with `on_invalid="reject"` gives nothing."""
    for raw in raw_lines:
        if end is not None and offset >= end:
            return
        index = number
        number += 1
        offset += len(raw) + 1
        times = ((index + 1) * take) // lines - (index * take) // lines if lines > 0 else 0
        if not times:
            continue
        line = decode_line(raw, path, number, on_invalid)
        if line is None:
            continue
        line = line.strip()
        for _ in range(times):
            yield line


def plan_line_parts(raw_lines: Iterable[bytes], part_bytes: int) -> List[Part]:
    """A file cut at line starts into parts of about `part_bytes`, as
    [(start byte, end byte, lines before start)], for `mixture_lines` to read in parallel."""
    parts: List[Part] = []
    start, start_line, offset, number = 0, 0, 0, 0
    for raw in raw_lines:
        if offset - start >= part_bytes:
            parts.append((start, offset, start_line))
            start, start_line = offset, number
        offset += len(raw) + 1
        number += 1
    if offset > start:
        parts.append((start, offset, start_line))
    return parts
