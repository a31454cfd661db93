"""Where things are, for tests in any directory under tests/: the repository, the test data
(`tests/data`, provenance in its README.md) and the bundled sample (`sample_data`).

Test modules live in directories that mirror the packages (tests/transforms/codecs/, ...), so
a path computed from a test file's own `__file__` would depend on how deep it sits; they take
these instead."""

import os

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(TESTS_DIR)
DATA_DIR = os.path.join(TESTS_DIR, "data")
SAMPLE_DATA = os.path.join(REPO_ROOT, "sample_data")
