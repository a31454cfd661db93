"""The type checker and the annotation share, measured in the suite (so CI runs both).

- `test_mypy_passes`: mypy, configured by the root `mypy.ini`, finds no error in `pipeline`
  and `transforms`. It runs cold (a fresh cache directory each time, as in a fresh CI
  clone): ~2-3 s on 2 cores, hence `slow`.
- `test_public_functions_are_annotated`: at least `MIN_SHARE` of the public functions and
  methods of `pipeline/` and `transforms/` have every parameter and the return annotated,
  counted with `ast`. `python tests/test_type_check.py` prints the share per package.

A public function is a module-level function or a method of a module-level class whose
names do not start with `_` (dunder methods and nested functions are not counted; an
`@overload` stub is not a function of its own); `self`/`cls` need no annotation.
"""

import ast
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("pipeline", "transforms")
MIN_SHARE = 0.90



def _is_overload(node):
    return any(isinstance(d, (ast.Name, ast.Attribute))
               and (getattr(d, "id", None) or getattr(d, "attr", None)) == "overload"
               for d in node.decorator_list)


def public_functions(tree):
    """The public function and method nodes of a module's syntax tree."""
    def walk(node, public):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if public and not child.name.startswith("_") and not _is_overload(child):
                    yield child
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, public and not child.name.startswith("_"))
            elif isinstance(child, (ast.If, ast.Try)):  # `if TYPE_CHECKING:`, `try: import`
                yield from walk(child, public)
    return list(walk(tree, True))


def is_annotated(node):
    """Every parameter (but a method's first, `self`/`cls`) and the return annotated."""
    args = node.args
    params = args.posonlyargs + args.args + args.kwonlyargs
    if params and params[0].arg in ("self", "cls"):
        params = params[1:]
    params += [a for a in (args.vararg, args.kwarg) if a is not None]
    return node.returns is not None and all(p.annotation is not None for p in params)


def annotation_counts():
    """{package (directory): (annotated, public)} over PACKAGES."""
    counts = {}
    for package in PACKAGES:
        for directory, _, names in os.walk(os.path.join(ROOT, package)):
            for name in sorted(n for n in names if n.endswith(".py")):
                path = os.path.join(directory, name)
                relative = os.path.relpath(path, ROOT).replace(os.sep, "/")
                with open(path, encoding="utf-8") as f:
                    functions = public_functions(ast.parse(f.read(), relative))
                key = os.path.dirname(relative)
                done, total = counts.get(key, (0, 0))
                counts[key] = (done + sum(map(is_annotated, functions)), total + len(functions))
    return counts


def report(counts):
    lines = ["%-22s %9s %7s" % ("package", "annotated", "share")]
    for key, (done, total) in sorted(counts.items()):
        if not total:
            continue
        lines.append("%-22s %4d/%-4d %6.1f%%" % (key, done, total,
                                                  100.0 * done / total if total else 100.0))
    done = sum(d for d, _ in counts.values())
    total = sum(t for _, t in counts.values())
    lines.append("%-22s %4d/%-4d %6.1f%%" % ("all", done, total, 100.0 * done / total))
    return "\n".join(lines)


def test_public_functions_are_annotated():
    counts = annotation_counts()
    done = sum(d for d, _ in counts.values())
    total = sum(t for _, t in counts.values())
    assert total > 200, "the count found too few functions: %s" % counts
    assert done / total >= MIN_SHARE, "annotated public functions below %d%%:\n%s" % (
        100 * MIN_SHARE, report(counts))


def test_annotation_count_reads_signatures():
    tree = ast.parse(
        "def a(x: int) -> int: ...\n"
        "def b(x, y: int) -> None: ...\n"
        "def c(*args: int, **kw) -> None: ...\n"
        "def _private(x): ...\n"
        "class C:\n"
        "    def m(self, x: str) -> str: ...\n"
        "    def n(self): ...\n"
        "    def __init__(self, x): ...\n"
        "    @classmethod\n"
        "    def k(cls) -> 'C': ...\n"
        "class _D:\n"
        "    def m(self): ...\n")
    found = {f.name: is_annotated(f) for f in public_functions(tree)}
    assert found == {"a": True, "b": False, "c": False, "m": True, "n": False, "k": True}


@pytest.mark.slow
def test_mypy_passes(tmp_path):
    api = pytest.importorskip("mypy.api", reason="mypy is in requirements-test.txt")
    cwd = os.getcwd()
    os.chdir(ROOT)  # mypy.ini names the packages relative to the root
    try:
        stdout, stderr, status = api.run(["--config-file", os.path.join(ROOT, "mypy.ini"),
                                          "--cache-dir", str(tmp_path / "mypy_cache")])
    finally:
        os.chdir(cwd)
    assert status == 0, "mypy found errors:\n%s%s" % (stdout, stderr)


if __name__ == "__main__":
    print(report(annotation_counts()))
    sys.exit(0)
