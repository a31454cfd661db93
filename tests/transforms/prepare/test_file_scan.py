"""ScanTextFiles (`transforms.prepare.file_scan`) on TestPipeline: line counts, bytes, seek
points and the first invalid line of every file."""


import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from beam_unit import test_pipeline, write
from transforms.prepare.file_scan import ScanTextFiles


def test_scan_counts_lines_bytes_seek_points_and_first_invalid_line(tmp_path):
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
        scanned = p | beam.Create(sorted(files.values())) | ScanTextFiles(chunk_lines=2)
        assert_that(scanned, equal_to(expected))
