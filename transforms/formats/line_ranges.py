"""A big text file scanned in byte ranges, in parallel, with exactly the facts of one scan.

One task reading a 1B-line file is a serial floor of 15-25 minutes (issue 49). Range
[start, end) of a file holds the lines that *start* in it (a line starts at byte 0 and after
every `\n`; the file's end starts none), read to their `\n` past `end` if need be: the lines
`text_lines.iter_raw_lines` reads (T2T's reader ends lines at `\n` only), each in exactly one
range wherever the cuts fall (inside a line, a CRLF or a UTF-8 character). A range's reader
opens the file at byte max(0, start - 1) and skips to the first line start at or after
`start`. Line counts, bytes, UTF-8 validity and the marks add up over ranges; a checkpoint
needs the file's number of the range's first line, known once the ranges before it are
counted (`merge_range_scans` takes them in file order). A compressed stream cannot seek: it is
one range, read whole.
"""

from typing import Iterator, List, Optional, Tuple

from transforms.formats.text_lines import (_CHUNK, _HEAD, ByteStream, Marks, _head_marks,
                                           _is_utf8)

RangeScan = Tuple[int, int, Optional[int], List[Tuple[int, int]]]


class RangeLines:
    """The raw lines of range [start, end) of a stream at byte max(0, start - 1); `first`:
    the offset of its first line (known once iteration began), `unterminated`: whether the
    last one yielded ended the file without a `\n`."""

    def __init__(self, stream: ByteStream, start: int, end: int) -> None:
        self._stream, self._start, self._end = stream, start, end
        self.first = start
        self.unterminated = False

    def _skip(self) -> bytes:
        """Reads up to the first line start at or after `start`; the bytes read past it."""
        if self._start == 0:
            return b""
        offset = self._start - 1
        while True:
            chunk = self._stream.read(_CHUNK)
            if not chunk:
                self.first = offset
                return b""
            at = chunk.find(b"\n")
            if at >= 0:
                self.first = offset + at + 1
                return chunk[at + 1:]
            offset += len(chunk)

    def __iter__(self) -> Iterator[bytes]:
        pending = self._skip()
        offset, end = self.first, self._end
        while offset < end:
            chunk = self._stream.read(_CHUNK)
            parts = (pending + chunk).split(b"\n")
            pending = parts.pop()
            for part in parts:
                if offset >= end:
                    return
                yield part
                offset += len(part) + 1
            if not chunk:
                if pending and offset < end:  # the file's last line, without a `\n`
                    self.unterminated = True
                    yield pending
                return


def scan_range(stream: ByteStream, start: int, end: int, checkpoint_every: int,
               first_line: Optional[int] = None, marks: Optional[Marks] = None) -> RangeScan:
    """`scan_stream` of range [start, end)'s lines (above), the stream at byte
    max(0, start - 1): (lines, bytes, the number in the range of its first line that is not
    UTF-8 or None, checkpoints). Its checkpoints are the (line, offset) of every
    `checkpoint_every`-th line of the file that starts right after one of its lines, known
    with the file's number of its first line only (`first_line`: 0 for the first range).
    `marks` gets its lines' `lone_cr` and `nul` (and the byte-order marks when start is 0):
    `merge_range_scans` makes the file's facts of its ranges'."""
    lines = size = 0
    first_invalid: Optional[int] = None
    checkpoints: List[Tuple[int, int]] = []
    lone_cr = nul = 0
    head = b""
    reader = RangeLines(stream, start, end)
    for raw in reader:
        if first_invalid is None and not _is_utf8(raw):
            first_invalid = lines + 1
        lines += 1
        size += len(raw) + 1
        if b"\r" in raw:
            lone_cr += raw.count(b"\r") - raw.endswith(b"\r")
        if b"\0" in raw:
            nul += raw.count(b"\0")
        if start == 0 and len(head) < _HEAD:
            head += (raw + b"\n")[:_HEAD - len(head)]
        if first_line is not None and (first_line + lines) % checkpoint_every == 0:
            checkpoints.append((first_line + lines, reader.first + size))
    if reader.unterminated:
        size -= 1
        lone_cr += raw.endswith(b"\r")
        head = head[:size]
    if marks is not None:
        marks["lone_cr"], marks["nul"] = lone_cr, nul
        if start == 0:
            _head_marks(head, marks)
    return lines, size, first_invalid, checkpoints


def merge_range_scans(scans: List[RangeScan]) -> Tuple[int, int, List[Tuple[int, int]],
                                                        Optional[int]]:
    """A file's `scan_stream` result from its ranges' `scan_range`s, in file order (each
    range's checkpoints computed with its `first_line`)."""
    num_lines = num_bytes = 0
    first_invalid: Optional[int] = None
    checkpoints = [(0, 0)]
    for lines, size, invalid, points in scans:
        if first_invalid is None and invalid is not None:
            first_invalid = num_lines + invalid
        num_lines += lines
        num_bytes += size
        checkpoints.extend(points)
    if checkpoints[-1][0] >= num_lines and len(checkpoints) > 1:
        checkpoints.pop()
    return num_bytes, num_lines, checkpoints, first_invalid
