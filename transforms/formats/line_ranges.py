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

from itertools import accumulate
from typing import Iterator, List, Optional, Tuple

from transforms.formats.text_lines import (_CHUNK, _HEAD, ByteStream, Marks, _head_marks,
                                           _is_utf8)

RangeScan = Tuple[int, int, Optional[int], List[Tuple[int, int]]]


class RangeLines:
    """The raw lines of range [start, end) of a stream at byte max(0, start - 1), a block of
    them a read (`blocks`: the bytes they span, `\n`s included, and their list) or one by one
    (iterating); `first`: the offset of its first line (known once reading began),
    `unterminated`: whether the last one ended the file without a `\n`."""

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

    def blocks(self) -> Iterator[Tuple[bytes, List[bytes]]]:
        pending = self._skip()
        offset, end = self.first, self._end
        while offset < end:
            chunk = self._stream.read(_CHUNK)
            data = pending + chunk
            parts = data.split(b"\n")
            pending = parts.pop()
            used = len(data) - len(pending)
            if parts and offset + used - len(parts[-1]) - 1 >= end:  # the range ends here
                kept, used = 0, 0
                while kept < len(parts) and offset + used < end:
                    used += len(parts[kept]) + 1
                    kept += 1
                parts = parts[:kept]
            if parts:
                yield data[:used], parts
            offset += used
            if offset >= end:
                return
            if not chunk:
                if pending:  # the file's last line, without a `\n`
                    self.unterminated = True
                    yield pending, [pending]
                return

    def __iter__(self) -> Iterator[bytes]:
        for _, parts in self.blocks():
            yield from parts


def scan_range(stream: ByteStream, start: int, end: int, checkpoint_every: int,
               first_line: Optional[int] = None, marks: Optional[Marks] = None) -> RangeScan:
    """`scan_stream` of range [start, end)'s lines (above), the stream at byte
    max(0, start - 1): (lines, bytes, the number in the range of its first line that is not
    UTF-8 or None, checkpoints). Its checkpoints are the (line, offset) of every
    `checkpoint_every`-th line of the file that starts right after one of its lines, known
    with the file's number of its first line only (`first_line`: 0 for the first range).
    `marks` gets its lines' `lone_cr` and `nul` (and the byte-order marks when start is 0);
    without `marks` (a second read, for the checkpoints) UTF-8 is not checked again.
    `merge_range_scans` makes the file's facts of its ranges'. A block of lines is checked
    at once (UTF-8 splits at `\n` into valid lines only if it is valid whole)."""
    lines = size = 0
    first_invalid: Optional[int] = None
    checkpoints: List[Tuple[int, int]] = []
    lone_cr = nul = 0
    head = b""
    reader = RangeLines(stream, start, end)
    for region, parts in reader.blocks():
        if marks is not None:
            if first_invalid is None and not _is_utf8(region):
                first_invalid = lines + next(i for i, raw in enumerate(parts, 1)
                                             if not _is_utf8(raw))
            if b"\r" in region:
                lone_cr += region.count(b"\r") - region.count(b"\r\n")
            if b"\0" in region:
                nul += region.count(b"\0")
            if start == 0 and len(head) < _HEAD:
                head += region[:_HEAD - len(head)]
        if first_line is not None:  # after line j of the block: line before + j + 1
            before = first_line + lines
            first_due = (-before - 1) % checkpoint_every
            if first_due < len(parts):
                ends = list(accumulate(len(raw) + 1 for raw in parts))
                base = reader.first + size
                checkpoints.extend((before + j + 1, base + ends[j])
                                   for j in range(first_due, len(parts), checkpoint_every))
        lines += len(parts)
        size += len(region)
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
