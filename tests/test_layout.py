"""The test tree's own rules (CONTRIBUTING.md, "Tests"), checked on every file under tests/.

- A test module imports no other test module: what two test modules share lives in a helper
  module (tests/*.py not named test_*.py, such as datagen_helpers.py or t2t_reference.py) or
  in a fixture of tests/conftest.py. Importing a test module runs its module-level code and
  collects its tests a second time under another name.
- Test modules sit in a directory that mirrors the package they test (tests/transforms/codecs/
  for transforms/codecs/, tests/pipeline/runtime/ for pipeline/runtime/, ...), or in
  tests/end_to_end/ when they run the whole job; only the checks of the whole tree sit at the
  top (`TREE_CHECKS`).
- A unit test module is named after the module it tests: `test_<module>.py`, or
  `test_<module>_<aspect>.py` beside it (tests/pipeline/runtime/test_dask_runner_stages.py), so
  the tests of X are where one would look.
- No `__init__.py` under tests/ and no two test modules of the same name: pytest imports each
  test module by its bare name, with its directory on sys.path.
- No module over 500 lines (the house rule for every module).
"""

import ast
import os

from repo_paths import REPO_ROOT, TESTS_DIR

MAX_LINES = 500
OWN_DIRECTORIES = ("end_to_end",)  # test directories that mirror no package
# checks of the whole tree: this file, the package rules, the type checker, imports, the docs
TREE_CHECKS = ("test_layout.py", "test_architecture.py", "test_type_check.py",
               "test_import_effects.py", "test_docs.py")


def _python_files():
    """{path relative to tests/: absolute path} of every .py file under tests/ but its data."""
    found = {}
    for base, dirs, names in os.walk(TESTS_DIR):
        dirs[:] = sorted(d for d in dirs if d != "data" and not d.startswith((".", "__")))
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(base, name)
                found[os.path.relpath(path, TESTS_DIR)] = path
    return found


def _is_test_module(relpath):
    return os.path.basename(relpath).startswith("test_")


def _imported_modules(path):
    """The top-level names of every module `path` imports, anywhere in it."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_no_module_imports_a_test_module():
    files = _python_files()
    test_modules = {os.path.basename(rel)[:-3] for rel in files if _is_test_module(rel)}
    offenders = {rel: sorted(_imported_modules(path) & test_modules)
                 for rel, path in files.items()}
    assert {rel: names for rel, names in offenders.items() if names} == {}


def test_test_modules_mirror_the_packages():
    misplaced = []
    for rel in _python_files():
        directory = os.path.dirname(rel)
        if not _is_test_module(rel):
            assert directory == "" or os.path.basename(rel) == "conftest.py", (
                "%s: a helper module belongs beside tests/conftest.py" % rel)
            continue
        if rel in TREE_CHECKS:
            continue
        top = directory.split(os.sep)[0]
        package = os.path.join(REPO_ROOT, directory, "__init__.py")
        if top not in OWN_DIRECTORIES and not os.path.isfile(package):
            misplaced.append(rel)
    assert misplaced == [], "test modules in no package's directory"


def test_unit_test_modules_are_named_after_a_module_of_their_package():
    unnamed = []
    for rel in _python_files():
        top = rel.split(os.sep)[0]
        if not _is_test_module(rel) or rel in TREE_CHECKS or top in OWN_DIRECTORIES:
            continue
        package = os.path.join(REPO_ROOT, os.path.dirname(rel))
        modules = [name[:-3] for name in os.listdir(package)
                   if name.endswith(".py") and name != "__init__.py"]
        tested = os.path.basename(rel)[len("test_"):-len(".py")]
        if not any(tested == m or tested.startswith(m + "_") for m in modules):
            unnamed.append(rel)
    assert unnamed == [], "test modules named after no module of their package"


def test_test_modules_are_importable_by_their_bare_name():
    files = _python_files()
    assert [rel for rel in files if os.path.basename(rel) == "__init__.py"] == []
    by_name = {}
    for rel in sorted(files):
        if os.path.basename(rel) != "conftest.py":
            by_name.setdefault(os.path.basename(rel), []).append(rel)
    assert {name: rels for name, rels in by_name.items() if len(rels) > 1} == {}


def test_no_module_over_500_lines():
    too_long = {}
    for rel, path in _python_files().items():
        with open(path, encoding="utf-8") as f:
            lines = sum(1 for _ in f)
        if lines > MAX_LINES:
            too_long[rel] = lines
    assert too_long == {}
