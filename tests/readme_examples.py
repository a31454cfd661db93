"""The examples of README.md and the docs/ pages that run offline, as the tests run them.

An example is the fenced block right after a `<!-- example: NAME -->` line in README.md or a
page of docs/ (`DOC_FILES`; the comment does not render). A name is unique across them, so a
block can move from README to a page (or back) without its test changing. `RUN_BY` names the
test that runs each; tests/test_docs.py checks that every marked block is in it, so a new
example needs a test.

Shell examples run with bash in a copy of the checkout (`tests/plain_install.py`), lines
that install something (`python3 -m venv ...`, `... pip install ...`) left out: the tests
give the venvs those lines would make (the test venv as `.venv`, the cached Airflow venv).
Fixed ports are replaced by free ones (`replace`).
"""

import glob
import os
import re
import textwrap

from repo_paths import REPO_ROOT

RUN_BY = {
    "quick-start": "tests/end_to_end/test_readme_examples.py",
    "near-dedup-setup": "tests/end_to_end/test_readme_examples.py",
    "dedup-normalized": "tests/end_to_end/test_readme_examples.py",
    "dedup-minhash": "tests/end_to_end/test_readme_examples.py",
    "decontaminate": "tests/end_to_end/test_readme_examples.py",
    "pandas": "tests/end_to_end/test_readme_examples.py",
    "cleaning": "tests/end_to_end/test_readme_examples.py",
    "cleaning-lid": "tests/end_to_end/test_readme_examples.py",
    "corpora-filters": "tests/end_to_end/test_filters_per_corpus.py",
    "s3-local": "tests/end_to_end/test_readme_examples.py",
    "airflow": "tests/end_to_end/test_airflow_dag.py",
    "first-run": "tests/end_to_end/test_console_noise.py",
    "k8s-manifest": "tests/pipeline/runtime/test_container_start.py",
    "slurm": "tests/end_to_end/test_slurm_cluster.py",
    "dataflow": "tests/pipeline/runtime/test_runners.py",
    "many-pairs": "tests/end_to_end/test_many_pairs.py",
}
_BLOCK = re.compile(r"^[ \t]*<!-- example: ([\w-]+) -->\n([ \t]*)```(\w+)\n(.*?)^\2```",
                    re.M | re.S)
_INSTALL = re.compile(r"^\s*(python3 -m venv |\S*pip install )")


def doc_files():
    """README.md and every page of docs/, as paths relative to the checkout."""
    pages = sorted(os.path.relpath(p, REPO_ROOT) for p in glob.glob(REPO_ROOT + "/docs/*.md"))
    return ["README.md"] + pages


def _text(doc):
    with open(os.path.join(REPO_ROOT, doc), encoding="utf-8") as f:
        return f.read()


def blocks():
    """{name: (language, text)} of every marked example, its indentation removed."""
    found = {}
    for doc in doc_files():
        for name, indent, language, text in _BLOCK.findall(_text(doc)):
            assert name not in found, "two examples named %s (one in %s)" % (name, doc)
            found[name] = (language, textwrap.dedent(text))
    return found


def markers():
    """Every `<!-- example: NAME -->` name in README.md and docs/, blocks or not."""
    return [name for doc in doc_files()
            for name in re.findall(r"<!-- example: ([\w-]+) -->", _text(doc))]


def block(name):
    return blocks()[name][1]


def shell_script(name, replace=()):
    """The shell example `name` as a bash script: `set -euo pipefail`, its install lines left
    out (each becomes a comment), every (old, new) of `replace` substituted."""
    language, text = blocks()[name]
    assert language == "sh", (name, language)
    for old, new in replace:
        assert old in text, (name, old)
        text = text.replace(old, new)
    lines = ["# left out (the test provides it): " + line if _INSTALL.match(line) else line
             for line in text.splitlines()]
    return "set -euo pipefail\n" + "\n".join(lines) + "\n"
