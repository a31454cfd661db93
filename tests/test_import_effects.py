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
