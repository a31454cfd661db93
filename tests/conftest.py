"""Shared test configuration: the repository root on sys.path, the test data directory and
the lines of its real corpora."""

import glob
import os
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_DIR = os.path.join(REPO_ROOT, "tests", "data")

if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)


@pytest.fixture(scope="session")
def data_dir():
    return DATA_DIR


@pytest.fixture(scope="module")
def corpus_lines():
    """Every line of the three real test corpora (en-zh mlqe-pe, en-de OpenNMT, en-vi
    tensorflow/nmt), as `str.split("\\n")` gives them."""
    lines = []
    for corpus in ("enzh-mlqe-pe", "ende-opennmt", "envi-nmt-testdata"):
        for path in sorted(glob.glob(os.path.join(DATA_DIR, corpus, "*"))):
            with open(path, "rb") as f:
                lines.extend(f.read().decode("utf-8").split("\n"))
    return lines
