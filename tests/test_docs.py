"""The documentation kept honest where a machine can check it.

- docs/design.md holds design only, within `DESIGN_MAX_LINES` lines (the reference for users is
  the README, the other pages of docs/ and `--help`); README.md is a user's guide within
  `README_MAX_LINES` lines (a topic's detail goes to its page of docs/).
- Every file path README.md, CONTRIBUTING.md or a page of docs/ names (`pipeline/driver/job.py`,
  a link such as `(docs/design.md#the-lock-protocol)`) exists, and every `#anchor` of a link
  into one of them is a heading there. A path followed by "(new)" is one a walk-through adds.
- Every name on a **Code:** line of docs/design.md (the modules and functions each step of the
  walk-through runs) is defined in the module named before it (or, with none, somewhere in
  `pipeline/` or `transforms/`): a rename or a move fails here until the doc follows.
- Every `--flag` these files name is a flag of `python -m pipeline.datagen` (its own or a
  Beam pipeline option it accepts), of `python -m pipeline.tools.inspect`, of a benchmark
  script, or of one of the few other programs the docs show commands of (`OTHER_PROGRAMS`).
  `--spm_*` stands for the flags it prefixes.
- Every file path a module of the project (its docstrings and comments) names exists:
  `tests/...py`, `pipeline/...py` and the like, in pipeline/, transforms/, tests/, benchmarks/.

The checks read text and build the job's flag parser; nothing runs.
"""

import ast
import pathlib
import re

from pipeline.driver.options import job_flag_parser
from pipeline.runtime import flags
from pipeline.tools import inspect
from repo_paths import REPO_ROOT

ROOT = pathlib.Path(REPO_ROOT)
DOCS = ("README.md", "CONTRIBUTING.md") + tuple(
    sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")))
DESIGN_MAX_LINES = 700
README_MAX_LINES = 300
# Flags of programs other than this project's, as the docs show their commands.
OTHER_PROGRAMS = {
    "--no-deps": "pip install",
    "--host": "dask scheduler", "--port": "dask scheduler, Beam's local_job_service_main",
    "--nworkers": "dask worker", "--nthreads": "dask worker", "--name": "dask worker",
    "--service_port": "Beam's worker_pool_main",
    "--durations": "pytest", "--pdb": "pytest", "--strict-markers": "pytest",
    "--chdir": "sbatch", "--aggressive_dedup": "Bifixer",
    "--dataset-impl": "fairseq-preprocess", "--joined-dictionary": "fairseq-preprocess",
    "--task": "fairseq-train", "--source-lang": "fairseq-train",
    "--target-lang": "fairseq-train", "--arch": "fairseq-train", "--optimizer": "fairseq-train",
    "--lr": "fairseq-train", "--max-tokens": "fairseq-train",
    "--share-all-embeddings": "fairseq-train",
    "--trainpref": "fairseq-preprocess", "--validpref": "fairseq-preprocess",
    "--destdir": "fairseq-preprocess",
}
PATH = re.compile(r"`([\w.-]+(?:/[\w.-]+)+\.(?:py|md|sh|txt|ini|json|png|yaml|cfg))`(?! \(new\))")
LINK = re.compile(r"\]\(([^)\s]+)\)")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9_-]*[a-z0-9_])(\*?)")
HEADING = re.compile(r"^#+ (.+)$", re.M)


def _text(doc):
    return (ROOT / doc).read_text(encoding="utf-8")


def _slug(heading):
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def test_design_doc_is_within_its_length():
    lines = len(_text("docs/design.md").splitlines())
    assert lines <= DESIGN_MAX_LINES, (
        "docs/design.md has %d lines: design only, within %d (reference goes to README, "
        "docs/ or --help)" % (lines, DESIGN_MAX_LINES))


def test_readme_is_a_guide_within_its_length():
    lines = len(_text("README.md").splitlines())
    assert lines <= README_MAX_LINES, (
        "README.md has %d lines: a user's guide, within %d (a topic's detail goes to its page "
        "of docs/)" % (lines, README_MAX_LINES))


def _named_paths(doc):
    text = _text(doc)
    base = (ROOT / doc).parent
    for match in PATH.finditer(text):
        yield match.group(1), ROOT / match.group(1)
    for match in LINK.finditer(text):
        target = match.group(1)
        if target.startswith(("http://", "https://", "#", "mailto:")):
            continue
        yield target, base / target.split("#", 1)[0]


def test_every_named_path_exists():
    missing = ["%s: %s" % (doc, name) for doc in DOCS
               for name, path in _named_paths(doc) if not path.exists()]
    assert missing == []


SOURCE_DIRS = ("pipeline", "transforms", "tests", "benchmarks")
SOURCE_PATH = re.compile(r"(?<![\w./-])((?:%s|docs|sample_data)/[\w./-]*\.(?:py|md|sh|txt|ini|json|"
                         r"yaml|cfg))(?![\w*{%%])" % "|".join(SOURCE_DIRS))


def test_every_path_a_module_names_exists():
    missing = []
    for top in SOURCE_DIRS:
        for module in sorted((ROOT / top).rglob("*.py")):
            text = module.read_text(encoding="utf-8")
            missing += ["%s: %s" % (module.relative_to(ROOT), match.group(1))
                        for match in SOURCE_PATH.finditer(text)
                        if "..." not in match.group(1)
                        and not (ROOT / match.group(1)).exists()]
    assert missing == []


def test_every_link_anchor_is_a_heading():
    anchors = {doc: {_slug(h) for h in HEADING.findall(_text(doc))} for doc in DOCS}
    broken = []
    for doc in DOCS:
        base = (ROOT / doc).parent
        for match in LINK.finditer(_text(doc)):
            target = match.group(1)
            if "#" not in target or target.startswith(("http://", "https://")):
                continue
            path, anchor = target.split("#", 1)
            into = doc if not path else str((base / path).resolve().relative_to(ROOT.resolve()))
            if into in anchors and anchor not in anchors[into]:
                broken.append("%s: %s" % (doc, target))
    assert broken == []


def _defined_names(path):
    """Names a module defines: its classes, functions and methods, and assigned names."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def test_every_name_on_a_code_line_is_defined_where_it_says():
    """A **Code:** line is groups separated by `;`: a module path, then names it defines; a
    group without a path names what some module of the packages defines."""
    modules = {str(path.relative_to(ROOT)): _defined_names(path)
               for package in ("pipeline", "transforms") for path in (ROOT / package).rglob("*.py")}
    anywhere = set().union(*modules.values())
    undefined = []
    for paragraph in re.findall(r"^\*\*Code:\*\*(.*?)(?:\n\n|\Z)", _text("docs/design.md"), re.S | re.M):
        for group in paragraph.split(";"):
            defined = anywhere
            for span in re.findall(r"`([^`]+)`", group):
                if span.endswith(".py"):
                    defined = modules.get(span, set())  # a missing module: every name fails
                    continue
                undefined += ["%s (%s)" % (span, group.strip()[:60])
                              for name in re.findall(r"[A-Za-z_]\w*", span)
                              if name not in defined]
    assert undefined == []


def _argparse_flags(path):
    """The option strings of every `add_argument(...)` call in the file at `path`."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            found.update(a.value for a in node.args
                         if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return found


def _known_flags():
    known = set()
    for parser in (flags.with_beam_options(job_flag_parser(), ["--runner", "DaskRunner"]),
                   inspect._parser()):
        known.update(s for action in parser._actions for s in action.option_strings)
    for script in sorted((ROOT / "benchmarks").glob("*.py")):
        known.update(_argparse_flags(script))
    return known


def test_every_named_flag_is_a_real_flag():
    known = _known_flags()
    unknown = []
    for doc in DOCS:
        text = _text(doc)
        for match in FLAG.finditer(text):
            flag, prefix = match.groups()
            if text[max(0, match.start() - 13):match.start()] == "unknown flag ":
                continue  # the example of the error for a mistyped flag
            if prefix:
                ok = any(k.startswith(flag) for k in known)
            else:
                ok = flag in known or flag in OTHER_PROGRAMS
            if not ok:
                unknown.append("%s: %s%s" % (doc, flag, prefix))
    assert sorted(set(unknown)) == []


def test_every_readme_example_is_run_by_a_test():
    """A `<!-- example: NAME -->` block of README.md runs in the test that
    tests/readme_examples.py's RUN_BY names (issue 45: README examples run as written)."""
    import readme_examples
    found = readme_examples.blocks()
    assert sorted(readme_examples.markers()) == sorted(found)  # each marker has its block
    assert sorted(found) == sorted(readme_examples.RUN_BY)
    for name, test in readme_examples.RUN_BY.items():
        assert "readme_examples.%s(\"%s\"" % ("shell_script" if found[name][0] == "sh"
                                              else "block", name) in (ROOT / test).read_text(
            encoding="utf-8"), (name, test)
