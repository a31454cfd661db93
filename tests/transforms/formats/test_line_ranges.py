"""A file scanned in byte ranges (transforms/formats/line_ranges.py) gives exactly the facts of
one scan (`text_lines.scan_stream`): bytes, lines, checkpoints (offsets included), the first
line that is not UTF-8 and the marks, wherever the cuts fall: inside a CRLF, inside a line,
inside a multi-byte UTF-8 character, on empty lines, in a file without a final newline; and
its ranges' lines are `iter_raw_lines`'s, each once. Held on chosen files at every cut and
with hypothesis on any bytes and cuts."""

import io

from hypothesis import given, settings, strategies as st

from transforms.formats.line_ranges import RangeLines, merge_range_scans, scan_range
from transforms.formats.text_lines import iter_raw_lines, scan_stream


class _Stream(io.BytesIO):
    """A file's bytes read in reads of at most `step` bytes (a read that returns less than
    asked, as a store's stream may), opened at `offset`."""

    def __init__(self, data, offset, step):
        super().__init__(data)
        self.seek(offset)
        self.step = step

    def read(self, size=-1):
        return super().read(self.step if size is None or size < 0 else min(size, self.step))


def _opened(data, start, step):
    return _Stream(data, max(0, start - 1), step)


def _ranges(data, cuts, every, step=1 << 20):
    """The merged scan of `data` cut at `cuts`: each range counted, then scanned again with
    the file's number of its first line (as the pipeline does: counts first, then the
    checkpoints of ranges after the first)."""
    bounds = [0] + sorted(set(c for c in cuts if 0 < c < len(data))) + [len(data) + 1]
    counted = [scan_range(_opened(data, a, step), a, b, every) for a, b in zip(bounds, bounds[1:])]
    scans, first, marks = [], 0, {"lone_cr": 0, "nul": 0}
    for (a, b), (lines, _, _, _) in zip(zip(bounds, bounds[1:]), counted):
        part = {}
        scans.append(scan_range(_opened(data, a, step), a, b, every, first, part))
        first += lines
        marks["lone_cr"] += part["lone_cr"]
        marks["nul"] += part["nul"]
        for name in ("bom", "wide_bom"):
            if name in part:
                marks[name] = part[name]
    return merge_range_scans(scans), marks, bounds


def _one_scan(data, every):
    marks = {}
    return scan_stream(io.BytesIO(data), every, marks), marks


def _range_lines(data, bounds):
    return [line for a, b in zip(bounds, bounds[1:])
            for line in RangeLines(_opened(data, a, 3), a, b)]


FILES = {
    "crlf": b"one\r\ntwo\r\n\r\nthree\r\n",
    "no final newline": b"alpha\nbeta\ngamma",
    "empty lines": b"\n\n\na\n\n\nb\n\n",
    "utf-8": "première\n中文的句子\néé\n😀 x\n".encode("utf-8"),
    "lone cr and nul": b"a\rb\nc\x00d\n\re\r",
    "bom": b"\xef\xbb\xbfhead\nline\n",
    "invalid": b"good\nbad \xff line\nalso \xc3 bad\nend",
    "empty": b"",
    "one newline": b"\n",
}


def test_every_cut_of_chosen_files_gives_the_facts_of_one_scan():
    for name, data in FILES.items():
        for every in (1, 2, 3):
            expected, expected_marks = _one_scan(data, every)
            for cut in range(len(data) + 1):
                for second in (cut, cut + 1, cut + 5):
                    got, marks, bounds = _ranges(data, [cut, second], every, step=4)
                    assert got == expected, (name, every, cut, second)
                    for mark in ("lone_cr", "nul", "bom", "wide_bom"):
                        assert marks.get(mark, 0) == expected_marks.get(mark, 0), (name, mark)
                    assert _range_lines(data, bounds) == list(iter_raw_lines(io.BytesIO(data)))


def test_a_line_across_the_border_belongs_to_the_range_it_starts_in():
    data = b"short\na line much longer than the range\nend\n"
    first = scan_range(_opened(data, 0, 64), 0, 10, 100, 0)
    second = scan_range(_opened(data, 10, 64), 10, len(data) + 1, 100)
    assert first[:2] == (2, len(b"short\na line much longer than the range\n"))
    assert second[:2] == (1, len(b"end\n"))


LINES = st.lists(st.sampled_from(["", "a", "é", "中文", "😀", "\r", "x\ry", "\x00", "word word"]),
                 max_size=6).map("".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(LINES, max_size=12), st.booleans(), st.lists(st.integers(0, 200), max_size=5),
       st.integers(1, 4), st.integers(1, 9), st.binary(max_size=3))
def test_any_text_and_any_cuts_give_the_facts_of_one_scan(lines, final, cuts, every, step,
                                                          junk):
    data = "\n".join(lines).encode("utf-8") + (b"\n" if final else b"") + junk
    expected, expected_marks = _one_scan(data, every)
    got, marks, bounds = _ranges(data, cuts, every, step)
    assert got == expected
    assert (marks["lone_cr"], marks["nul"]) == (expected_marks["lone_cr"], expected_marks["nul"])
    assert _range_lines(data, bounds) == list(iter_raw_lines(io.BytesIO(data)))
