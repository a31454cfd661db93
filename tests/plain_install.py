"""A virtualenv holding only `pip install .` of this checkout: what a user's install prints is
checked there (no test extras, no apache-beam[gcp], nothing the shared test venv adds).

The project's dependencies are installed once per machine, keyed by setup.py's list of requirements (under a
file lock, `cached_venvs.installed_venv`); each use then reinstalls the project itself from a
copy of the checkout (`--no-deps --force-reinstall`), so the venv holds the code under test and
the checkout gets no build/ or *.egg-info.
"""

import hashlib
import os
import shutil
import subprocess

from cached_venvs import cache_dir, installed_venv
from repo_paths import REPO_ROOT

# the checkout's own clutter, at its top level only (pipeline/output is a package)
TOP_LEVEL_SKIP = {".venv", ".git", "build", "dist", "local_output", "output", ".pytest_cache",
                  ".hypothesis", ".mypy_cache"}


def _skip(directory, names):
    skipped = {n for n in names if n == "__pycache__" or n.endswith(".egg-info")}
    if os.path.abspath(directory) == os.path.abspath(REPO_ROOT):
        skipped |= TOP_LEVEL_SKIP & set(names)
    return skipped


def _copy(dest):
    shutil.copytree(REPO_ROOT, dest, ignore=_skip, symlinks=True)
    return dest


def copy_of_checkout(dest):
    """A copy of this checkout's files at `dest` (no venv, no git, no build leftovers)."""
    return _copy(str(dest))


def plain_install_venv(tmp_path):
    """bin/python of a venv where `pip install .` of this checkout is all that was run."""
    with open(os.path.join(REPO_ROOT, "setup.py"), "rb") as f:
        setup = f.read()
    requirements = setup[setup.index(b"REQUIRED = ["):].split(b"\n]", 1)[0]
    key = hashlib.sha256(requirements).hexdigest()[:12]
    venv = cache_dir("install", "t2t-beam-datagen", key)
    if not os.path.exists(os.path.join(venv, ".installed")):
        installed_venv(venv, [_copy(str(tmp_path / "first"))], "the project's dependencies")
    source = _copy(str(tmp_path / "source"))
    subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--quiet",
                    "--no-deps",
                    "--force-reinstall", source], check=True, capture_output=True, text=True,
                   timeout=900)
    return os.path.join(venv, "bin", "python")
