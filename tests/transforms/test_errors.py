"""transforms/errors: every exception class the job defines derives from `JobError`, but the
few that are signals (a pass stopped, a probe asked for, a write's precondition), so a caller
can catch every error the job raises on purpose; the reader's `StoreUnreachableError` is the
one store-unreachable error. Classes are found in the source, so a new one cannot be missed."""

import ast
import builtins
import pathlib

from repo_paths import REPO_ROOT
from transforms.errors import JobError, StoreUnreachable

# control flow, not errors: they never reach a user
SIGNALS = {"Interrupted", "PassStopped", "NeedProbe", "PreconditionFailed"}


def _classes():
    """{class name: (its bases' names, where)} of every class under pipeline/ and transforms/."""
    classes = {}
    for package in ("pipeline", "transforms"):
        for path in sorted((pathlib.Path(REPO_ROOT) / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef):
                    bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")
                             for b in node.bases]
                    classes[node.name] = (bases, "%s:%d" % (path.relative_to(REPO_ROOT), node.lineno))
    return classes


def _ancestors(name, classes, seen=()):
    for base in classes.get(name, ((), ""))[0]:
        if base not in seen:
            yield base
            yield from _ancestors(base, classes, seen + (base,))


def test_every_error_class_has_the_one_base():
    classes = _classes()
    builtin_exceptions = {name for name in dir(builtins)
                          if isinstance(getattr(builtins, name), type)
                          and issubclass(getattr(builtins, name), BaseException)}
    errors = {name for name in classes
              if builtin_exceptions & set(_ancestors(name, classes)) and name != "JobError"}
    assert len(errors) > 10 and SIGNALS <= errors
    orphans = sorted("%s (%s)" % (name, classes[name][1]) for name in errors - SIGNALS
                     if "JobError" not in set(_ancestors(name, classes)))
    assert not orphans, "exception classes without JobError among their bases: %s" % orphans


def test_the_readers_store_error_is_the_jobs_one():
    from pipeline.tools import reader
    assert reader.StoreUnreachableError is StoreUnreachable
    assert issubclass(StoreUnreachable, JobError) and issubclass(StoreUnreachable, OSError)
