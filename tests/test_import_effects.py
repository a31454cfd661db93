"""Importing the project acts on nothing: no environment variable, no logging filter or
handler. The console settings a process of the job needs (`pipeline.runtime.console.set_up`)
are made by its entry points, explicitly; the one module whose import acts is the fork
server's start-up hook, `pipeline.runtime.worker_start`, imported by nothing else.

Each check runs in a fresh interpreter, whose imports are all its own.
"""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_SNAPSHOT = r'''
import importlib, json, logging, os, pkgutil, sys

def state():
    root = logging.getLogger()
    return {"environ": dict(os.environ), "level": root.level,
            "filters": [type(f).__name__ for f in root.filters],
            "handlers": [type(h).__name__ for h in root.handlers]}

modules = sys.argv[1:]
before = state()
for name in modules:
    if name == "*":  # every module of both packages
        for package in ("pipeline", "transforms"):
            importlib.import_module(package)
            for info in pkgutil.walk_packages(sys.modules[package].__path__, package + "."):
                if info.name != "pipeline.runtime.worker_start":
                    importlib.import_module(info.name)
    else:
        importlib.import_module(name)
print(json.dumps({"before": before, "after": state()}))
'''


def _imports(*modules):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRPC_", "TF_"))}
    env["PYTHONPATH"] = ROOT
    done = subprocess.run([sys.executable, "-c", _SNAPSHOT] + list(modules), cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    states = json.loads(done.stdout.splitlines()[-1])
    return states["before"], states["after"]


def test_importing_the_packages_changes_no_environment_and_no_logging():
    before, after = _imports("pipeline", "transforms", "pipeline.runtime.console")
    assert after == before


def test_importing_every_module_changes_no_environment_and_no_root_logger():
    """Every module of `pipeline` and `transforms` (with Beam and TensorFlow, which they
    import): the environment and the root logger stay as they were."""
    before, after = _imports("*")
    assert after["environ"] == before["environ"]
    assert (after["filters"], after["handlers"]) == (before["filters"], before["handlers"])


def test_the_fork_servers_start_up_hook_sets_the_console_up_once():
    """`worker_start` (the fork server's first preload): the filter and GRPC_VERBOSITY, as
    `console.set_up` makes them; a second set-up adds no second filter."""
    before, after = _imports("pipeline.runtime.worker_start")
    assert "GRPC_VERBOSITY" not in before["environ"]
    assert after["environ"] == dict(before["environ"], GRPC_VERBOSITY="ERROR")
    assert after["filters"] == before["filters"] + ["_NoApitoolsWarning"]
    import logging
    from pipeline.runtime import console
    root = logging.getLogger()
    saved = list(root.filters), os.environ.get("GRPC_VERBOSITY")
    try:
        os.environ["GRPC_VERBOSITY"] = "DEBUG"  # an explicit setting is kept
        console.set_up()
        console.set_up()
        assert sum(isinstance(f, console._NoApitoolsWarning) for f in root.filters) == 1
        assert os.environ["GRPC_VERBOSITY"] == "DEBUG"
        record = logging.LogRecord("root", logging.WARNING, "", 0, console.APITOOLS_WARNING +
                                   ", and bigquery client libraries are not available", (),
                                   None)
        assert not root.filter(record)
    finally:
        root.filters[:] = saved[0]
        if saved[1] is None:
            os.environ.pop("GRPC_VERBOSITY", None)
        else:
            os.environ["GRPC_VERBOSITY"] = saved[1]


_MIX_A_LOCAL_OUTPUT = r'''
import json, sys
from pipeline.tools import batches
from pipeline.tools.mixture import Mixture
counts = {}
for name, directory in zip(("tfrecord", "array_record"), sys.argv[1:3]):
    mixture = Mixture(directory, temperature=2, seed=1, num_records=40)
    counts[name] = sum(1 for _ in mixture.records())
counts["grain"] = sum(len(b["inputs"]) for b in batches.grain_batches(mixture, 64, mode="t2t"))
print(json.dumps({"counts": counts, "imported": sorted(
    {m.split(".")[0] for m in sys.modules} & {"apache_beam", "tensorflow"})}))
'''


def test_a_mixture_of_a_local_output_imports_no_beam_and_prints_nothing(tmp_path):
    """`Mixture` on a local output, its records and `grain_batches` of it, in a fresh
    interpreter: neither Beam nor TensorFlow is imported, and nothing is printed (issue 50,
    item 14: `Mixture` imported Beam, which printed `WARNING:root:apitools not found`)."""
    from reader_outputs import numbered_pairs, write_output
    from transforms.shards.record_formats import ArrayRecordFormat, TFRecordFormat
    pairs = {"en-de": numbered_pairs(100, 6), "en-fr": numbered_pairs(200, 6)}
    outputs = []
    for fmt in (TFRecordFormat(), ArrayRecordFormat()):
        outputs.append(str(tmp_path / fmt.name))
        os.mkdir(outputs[-1])
        write_output(outputs[-1], "p", fmt, pairs)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRPC_", "TF_"))}
    env["PYTHONPATH"] = ROOT
    done = subprocess.run([sys.executable, "-c", _MIX_A_LOCAL_OUTPUT] + outputs, cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr == ""
    result = json.loads(done.stdout)
    assert result == {"counts": {"tfrecord": 40, "array_record": 40, "grain": 40},
                      "imported": []}
