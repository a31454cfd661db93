"""Helpers for PTransform unit tests: an in-process TestPipeline and tiny input files."""

import gzip

from apache_beam.testing.test_pipeline import TestPipeline


def test_pipeline():
    """A TestPipeline on FnApiRunner: in-process and quick to start.

    The default DirectRunner first hands a pipeline to the Prism runner (a separate process,
    downloaded on first use), which costs seconds per pipeline on inputs of a few lines.
    """
    return TestPipeline(runner="FnApiRunner")


test_pipeline.__test__ = False  # a factory, not a test


def write(path, data):
    """Writes bytes (or UTF-8 text) to `path`, gzip-compressed when it ends in `.gz`."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(data)
    return str(path)
