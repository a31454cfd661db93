"""ScanTextFiles (`transforms.prepare.file_scan`) on TestPipeline: line counts, bytes, seek
points and the first invalid line of every file."""


import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from beam_unit import test_pipeline, write
from transforms.prepare.file_scan import RANGE_BYTES, ScanTextFiles


# whole files, and files cut in ranges of 3 and 5 bytes (a compressed one is read whole)
@pytest.mark.parametrize("range_bytes", [RANGE_BYTES, 3, 5])
def test_scan_counts_lines_bytes_seek_points_and_first_invalid_line(tmp_path, range_bytes):
    five = "one\ntwo\nthree\nfour\nfive"  # no final newline: still five lines
    files = {
        "five": write(tmp_path / "five.txt", five),
        "two": write(tmp_path / "two.txt", "a\nb\n"),
        "gz": write(tmp_path / "five.txt.gz", five),
        "bad": write(tmp_path / "bad.txt", b"ok\n\xff\xfe\nok\n"),
        "empty": write(tmp_path / "empty.txt", b""),
    }
    expected = [
        # a seek point at the start of every 2nd line; none at the very end of the file
        (files["five"], {"bytes": 23, "lines": 5, "checkpoints": [(0, 0), (2, 8), (4, 19)],
                         "first_invalid_utf8_line": None}),
        (files["two"], {"bytes": 4, "lines": 2, "checkpoints": [(0, 0)],
                        "first_invalid_utf8_line": None}),
        # sizes of the decompressed text; a compressed stream is read whole (no seek points)
        (files["gz"], {"bytes": 23, "lines": 5, "checkpoints": [(0, 0)],
                       "first_invalid_utf8_line": None}),
        (files["bad"], {"bytes": 9, "lines": 3, "checkpoints": [(0, 0), (2, 6)],
                        "first_invalid_utf8_line": 2}),
        (files["empty"], {"bytes": 0, "lines": 0, "checkpoints": [(0, 0)],
                          "first_invalid_utf8_line": None}),
    ]
    with test_pipeline() as p:
        scanned = p | beam.Create(sorted(files.values())) | ScanTextFiles(2, range_bytes)
        assert_that(scanned, equal_to(expected))


def test_a_file_scanned_in_ranges_has_the_facts_and_warnings_of_one_scan(tmp_path):
    import io
    from transforms.formats.text_lines import scan_stream, text_marks
    contents = {
        "crlf.txt": b"one\r\ntwo\r\n\r\nthree\r\nfour",
        "marks.txt": b"\xef\xbb\xbfa\rb\nc\x00d\n\n" + "中文 é\n".encode("utf-8") * 3,
        "long.txt": b"x" * 40 + b"\nshort\n" + b"y" * 30,
    }
    expected = []
    for name, data in contents.items():
        path = write(tmp_path / name, data)
        marks = {}
        num_bytes, lines, points, invalid = scan_stream(io.BytesIO(data), 2, marks)
        facts = {"bytes": num_bytes, "lines": lines, "checkpoints": points,
                 "first_invalid_utf8_line": invalid}
        if text_marks(path, marks):
            facts["warnings"] = text_marks(path, marks)
        expected.append((path, facts))
    gone = str(tmp_path / "gone.txt")  # listed, then gone: one error line, as a whole scan
    with test_pipeline() as p:
        scanned = (p | beam.Create(sorted(path for path, _ in expected))
                   | ScanTextFiles(2, range_bytes=4))
        assert_that(scanned, equal_to(expected))
        missing = p | "Gone" >> beam.Create([gone]) | "ScanGone" >> ScanTextFiles(2, 4)
        assert_that(missing, equal_to([(gone, {"error": "%s: cannot be read (No such file "
                                                        "or directory)" % gone})]),
                    label="gone")


def test_the_sample_corpus_in_64_kib_ranges_has_the_facts_of_whole_scans():
    """Facts are all the later passes take from the scan (chunks start at its seek points),
    so equal facts make equal outputs."""
    import os
    from repo_paths import SAMPLE_DATA
    paths = [os.path.join(SAMPLE_DATA, "enzh-mlqe-pe", name) for name in ("train.en", "train.zh")]
    with test_pipeline() as p:
        whole = p | beam.Create(paths) | "Whole" >> ScanTextFiles(1000)
        ranges = p | "Paths" >> beam.Create(paths) | "Ranges" >> ScanTextFiles(1000, 64 << 10)
        both = ((whole | "W" >> beam.Map(lambda pf: (pf[0], ("whole", pf[1]))),
                 ranges | "R" >> beam.Map(lambda pf: (pf[0], ("ranges", pf[1]))))
                | beam.Flatten() | beam.GroupByKey()
                | beam.MapTuple(lambda path, facts: (path, dict(facts)["whole"] == dict(facts)[
                    "ranges"] and len(dict(facts)["whole"]["checkpoints"]) > 5)))
        assert_that(both, equal_to([(path, True) for path in paths]))
