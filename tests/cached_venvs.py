"""Virtualenvs of their own for reference tools whose dependencies clash with the project's
(Airflow, OpusFilter): created once per machine under ~/.cache, under a file lock (two test
runs may start together), reused afterwards.

Without the package index the tests that need one are skipped, except under CI=true, where a
missing reference tool is a failure: CI must prove what the tests claim.
"""

import fcntl
import os
import shutil
import subprocess
import sys
import time

import pytest


def cache_dir(kind, name, version):
    """~/.cache/t2t-datagen-{kind}/{name}-{version}-pyX.Y, or $T2T_{KIND}_VENV."""
    return os.environ.get("T2T_%s_VENV" % kind.upper()) or os.path.join(
        os.path.expanduser("~"), ".cache", "t2t-datagen-" + kind,
        "%s-%s-py%d.%d" % (name, version, *sys.version_info[:2]))


def unavailable(what, reason):
    """Skips the test (fails it under CI=true): `what` could not be had."""
    if os.environ.get("CI") == "true":
        pytest.fail("%s is needed under CI=true: %s" % (what, reason))
    pytest.skip(reason)


def installed_venv(venv, requirements, what):
    """`venv`, made with `requirements` pip-installed, on first use; `what` names it in
    messages. A half-made one (a run killed while installing) is made again."""
    done = os.path.join(venv, ".installed")
    os.makedirs(os.path.dirname(venv), exist_ok=True)
    with open(venv + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test run on this machine may be installing
        if os.path.exists(done):
            return venv
        shutil.rmtree(venv, ignore_errors=True)
        start = time.time()
        try:
            subprocess.run([sys.executable, "-m", "venv", venv], check=True,
                           capture_output=True, text=True, timeout=300)
            subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--quiet",
                            *requirements], check=True, capture_output=True, text=True,
                           timeout=900)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
            shutil.rmtree(venv, ignore_errors=True)
            tail = " ".join(((e.stderr or "") if isinstance(e.stderr, str) else "").split()[-40:])
            unavailable(what, "could not install %s from the package index: %s"
                        % (" ".join(requirements), tail or e))
        with open(done, "w") as f:
            f.write("%s installed in %.0f s\n" % (" ".join(requirements), time.time() - start))
        return venv
