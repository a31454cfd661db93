"""The package rules, checked on the code: which package may import which, no import cycle,
Beam's internals in at most one module, no module over 500 lines.

Each package's `__init__` docstring states its rule, once: a line `May import: a, b.` (the
project's packages it may import besides its own; `none`), and a first paragraph that says
"no Apache Beam, no TensorFlow" for a pure package. A package without the line (a nested one)
follows its parent's. Every import counts, function-local ones too (a lazy import is still a
dependency). The rules and imports are read from the text (`ast`), so nothing of the project
is run.
"""

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("pipeline", "transforms")
MAX_LINES = 500
PURE_WORDS = "no apache beam, no tensorflow"
# Beam's internals: its runner's and SDK harness's insides, not its user API.
BEAM_INTERNALS = ("apache_beam.runners.portability.fn_api_runner",
                  "apache_beam.runners.portability.portable_runner",
                  "apache_beam.runners.worker", "apache_beam.portability.api")


def _modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            yield name, path


def _imports(name, path):
    """Every module `path` imports (absolute dotted names), function-local ones too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".")
                base = ".".join(here[:len(here) - node.level + (path.name == "__init__.py")]
                                + ([base] if base else []))
            for alias in node.names:
                found.append((base, alias.name, node.lineno))
    return found


def _graph():
    names = dict(_modules())
    graph = {}
    for name, path in names.items():
        targets = set()
        for base, attr, _ in _imports(name, path):
            if attr and "%s.%s" % (base, attr) in names:
                targets.add("%s.%s" % (base, attr))
            elif base in names:
                targets.add(base)
        graph[name] = targets - {name}
    return graph


def _package_rules():
    """{package: (the packages it may import, whether it is pure)}, from the `__init__`s."""
    rules = {}
    for name, path in _modules():
        if path.name != "__init__.py":
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        line = re.search(r"^May import: (.*)$", doc, re.M)
        first = " ".join(doc.split("\n\n")[0].lower().split())
        allowed = None
        if line:
            allowed = tuple(p.strip() for p in line.group(1).rstrip(".").split(",")
                            if p.strip() and p.strip() != "none")
        rules[name] = (allowed, PURE_WORDS in first)
    return rules


def _rule_of(name, rules):
    """(package, allowed, pure) of the innermost package of `name` with a `May import:` line;
    pure when that package or one around it says so."""
    parts = name.split(".")
    pure = any(rules.get(".".join(parts[:i]), (None, False))[1] for i in range(1, len(parts) + 1))
    for i in range(len(parts), 0, -1):
        package = ".".join(parts[:i])
        if package in rules and rules[package][0] is not None:
            return package, rules[package][0], pure
    return None, (), pure


def _within(full, packages):
    return any(full == p or full.startswith(p + ".") for p in packages)


def test_top_level_packages_state_their_rule():
    rules = _package_rules()
    missing = [name for name in rules
               if name.count(".") <= 1 and rules[name][0] is None]
    assert not missing, "no `May import:` line in the docstring of %s" % missing


def test_no_import_runs_against_the_package_rules():
    rules = _package_rules()
    broken = []
    for name, path in _modules():
        package, allowed, pure = _rule_of(name, rules)
        for base, attr, line in _imports(name, path):
            full = base + ("." + attr if attr else "")
            ours = base.split(".")[0] in PACKAGES
            bad = ours and not _within(base, (package,) + allowed) and not (
                base in PACKAGES and attr and _within(full, (package,) + allowed))
            if pure and base.split(".")[0] in ("apache_beam", "tensorflow"):
                bad = True
            if bad:
                broken.append("%s:%d imports %s (%s may import %s)" % (
                    path.relative_to(ROOT), line, full, package, ", ".join(allowed) or "none"))
    assert not broken, "\n".join(broken)


def test_the_pure_packages_are_those_the_guide_names():
    """The guide's pure packages stay pure, and so do the config and the pair codecs."""
    pure = {name for name, (_, is_pure) in _package_rules().items() if is_pure}
    assert {"transforms.codecs", "transforms.formats", "transforms.cleaning",
            "transforms.contracts", "transforms.pairs"} <= pure, pure


def test_no_import_cycle():
    graph = _graph()
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node):  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph[node]:
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    # a package's __init__ importing its own modules is not a cycle of design
    cycles = [c for c in cycles if not all(m.startswith(c[0]) for m in c)]
    assert not cycles, cycles


def test_beam_internals_and_private_apis_in_at_most_one_module_and_the_dask_patch():
    users = {}
    for name, path in _modules():
        text = path.read_text(encoding="utf-8")
        for base, attr, line in _imports(name, path):
            private = base.startswith("apache_beam") and (
                base.startswith(BEAM_INTERNALS) or (attr or "").startswith("_"))
            if private:
                users.setdefault(name, []).append("%d: %s %s" % (line, base, attr or ""))
        for needle in ("atexit._run_exitfuncs", "._actions", "_BeamArgumentParser"):
            if needle in text:
                users.setdefault(name, []).append(needle)
    # The runner machinery that patches Beam (local_worker_pool: DirectRunner's worker pool)
    # and its DaskRunner patch (dask_runner: Beam's Dask translation and in-process DoFn
    # invoker, fixed where they are wrong for the job).
    local = {n: u for n, u in users.items() if n != "pipeline.runtime.dask_runner"}
    assert len(local) <= 1, local
    assert "pipeline.runtime.dask_runner" in users  # else this exception can go


def test_no_module_over_500_lines():
    long = []
    for folder in PACKAGES + ("benchmarks", "examples"):  # tests: test_layout.py
        for path in sorted((ROOT / folder).rglob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > MAX_LINES:
                long.append("%s: %d lines" % (path.relative_to(ROOT), lines))
    assert not long, long


def test_every_package_says_what_it_holds_and_may_import():
    for name, path in _modules():
        if path.name == "__init__.py":
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
            assert doc and "import" in doc.lower(), "%s: no docstring naming what it may import" % name


# Where a vocabulary kind's name may be written: its two declarations (transforms.codecs.kinds,
# and its plugin in pipeline.driver.kinds). Elsewhere the same words mean something else.
KIND_DECLARATIONS = ("transforms/codecs/kinds.py", "pipeline/driver/kinds/")
SAME_WORD_OTHER_MEANING = {
    ("transforms/cleaning/filters.py", "word"),             # a length unit of OpusFilter's
    ("transforms/codecs/sentencepiece_model.py", "word"),   # a SentencePiece model type
    ("transforms/codecs/sentencepiece_model.py", "sentencepiece"),  # a special-ids layout
}


def _kind_names():
    from transforms.codecs.kinds import KIND_NAMES
    return KIND_NAMES


def test_no_module_outside_the_kind_declarations_names_a_kind():
    """Lists of kinds, modes, suffixes and flags derive from the declarations; a module that
    compares `vocab_type` with a name would miss the next kind (as own_outputs once did)."""
    names = set(_kind_names())
    found = []
    for folder in PACKAGES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith(KIND_DECLARATIONS):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.Constant) and node.value in names
                        and (relative, node.value) not in SAME_WORD_OTHER_MEANING):
                    found.append("%s:%d names kind %r" % (relative, node.lineno, node.value))
    assert not found, found


def test_the_encode_pass_stands_on_the_vocabulary_interface_only():
    """`transforms.encode.encode_pairs` (and what it imports) needs a `Vocabulary`, not the learning
    stack nor a kind: its caller hands it the kind's Vocabulary class."""
    graph = _graph()
    reached, todo = set(), ["transforms.encode.encode_pairs"]
    while todo:
        for target in graph[todo.pop()] - reached:
            reached.add(target)
            todo.append(target)
    learning = sorted(m for m in reached
                      if m in ("transforms.codecs.kinds", "transforms.vocab.token_counts")
                      or m.endswith(("_learning", "_vocabulary", "_refine", "_train")))
    assert "transforms.codecs.vocabulary" in reached
    assert not learning, learning
