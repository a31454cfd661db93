"""What a remote runner's workers get of the project, prepared once per job; a dry run offline.

With `--setup_file`, Beam's stager builds the project's sdist (`python -m build --sdist`) for
every pipeline it submits, and the job submits one pipeline per pass: four builds, and
setuptools leaves `{name}.egg-info` in the source tree each time. Here the sdist is built
once per job, from a copy of the setup file's directory in a temporary directory (so the
source tree gains nothing), and every pass stages that tarball as an `--extra_package`
(workers `pip install` it as they would the setup file's package). The temporary directory
is removed when the job ends.

A Dataflow dry run (`--dry_run True`) must need no network and no credentials: Beam's option
validation tries to create a default bucket (network, credentials, minutes of retries) when
`--temp_location` and `--staging_location` name invalid buckets, such as docs/runners.md's `BUCKET`
placeholder, and refuses an invalid `--project` such as `PROJECT`. A dry run translates with
stand-ins for those, and says so in one warning line.
"""

import contextlib
import glob
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Iterator, List, Optional

from apache_beam.options.pipeline_options import GoogleCloudOptions, SetupOptions
from apache_beam.options.pipeline_options_validator import PipelineOptionsValidator

from pipeline.runtime.runners import REMOTE_RUNNERS, is_dry_run, runner_name
from pipeline.runtime.errors import DatagenError, one_line

LOG = logging.getLogger("datagen")

# Not copied for the sdist build: VCS, environments, caches, build outputs, local outputs.
_NOT_COPIED = shutil.ignore_patterns(".git", ".venv", "venv", "*.egg-info", "build", "dist",
                                     "__pycache__", ".hypothesis", ".pytest_cache",
                                     "local_output", "output")
STAND_IN_BUCKET = "dry-run-stand-in-bucket"
STAND_IN_PROJECT = "dry-run-stand-in-project"


def build_sdist(setup_file: str, work_dir: str) -> str:
    """Builds the sdist of `setup_file`'s project from a copy under `work_dir`; returns the
    tarball's path. As Beam's stager: `python -m build --sdist --no-isolation` (no index
    needed), else `setup.py sdist`."""
    if not os.path.isfile(setup_file):
        raise DatagenError("--setup_file %s: no such file" % setup_file)
    copy = os.path.join(work_dir, "src")
    shutil.copytree(os.path.dirname(os.path.abspath(setup_file)), copy, ignore=_NOT_COPIED)
    dist = os.path.join(work_dir, "dist")
    commands = [[sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", dist,
                 copy]]
    if os.path.basename(setup_file) == "setup.py":
        commands.append([sys.executable, "setup.py", "sdist", "--dist-dir", dist])
    error = ["no command ran"]
    for command in commands:
        done = subprocess.run(command, cwd=copy, capture_output=True, text=True)
        tarballs = glob.glob(os.path.join(dist, "*.tar.gz"))
        if done.returncode == 0 and len(tarballs) == 1:
            return tarballs[0]
        error = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no tarball"]
    raise DatagenError("--setup_file %s: building the sdist failed: %s" % (
        setup_file, one_line(error[0])))


@contextlib.contextmanager
def project_sdist_once(options: Any) -> Iterator[Optional[str]]:
    """While the job runs: with `--setup_file` and a remote runner, the project's sdist
    built once and staged by every pass as an extra package instead (`options` changed in
    place, restored afterwards); otherwise nothing."""
    setup = options.view_as(SetupOptions)
    if not setup.setup_file or runner_name(options) not in REMOTE_RUNNERS:
        yield None
        return
    setup_file, extra = setup.setup_file, setup.extra_packages
    work_dir = tempfile.mkdtemp(prefix="datagen-sdist-")
    try:
        tarball = build_sdist(setup_file, work_dir)
        LOG.info("--setup_file %s: sdist %s built once, staged by every pass",
                 setup_file, os.path.basename(tarball))
        setup.setup_file = None
        setup.extra_packages = list(extra or []) + [tarball]
        yield tarball
    finally:
        setup.setup_file, setup.extra_packages = setup_file, extra
        shutil.rmtree(work_dir, ignore_errors=True)


def offline_dry_run(options: Any) -> List[str]:
    """A Dataflow dry run: invalid `--project`, `--temp_location`, `--staging_location`
    (placeholders) replaced by stand-ins, with one warning line; returns what was replaced.
    Nothing else of a dry run touches a network (inputs are not listed, nothing is read)."""
    if not is_dry_run(options) or runner_name(options) != "dataflow":
        return []
    cloud = options.view_as(GoogleCloudOptions)
    v = PipelineOptionsValidator
    replaced = []
    if cloud.project and not re.fullmatch(v.PROJECT_ID_PATTERN, cloud.project):
        replaced.append("--project %s" % cloud.project)
        cloud.project = STAND_IN_PROJECT
    for name in ("temp_location", "staging_location"):
        value = getattr(cloud, name)
        match = re.fullmatch(v.GCS_URI, value or "", re.DOTALL)
        if (match and match.group("SCHEME") == v.GCS_SCHEME
                and not re.fullmatch(v.GCS_BUCKET, match.group("BUCKET"))):
            replaced.append("--%s %s" % (name, value))
            setattr(cloud, name, "gs://%s/%s" % (STAND_IN_BUCKET, match.group("OBJECT") or ""))
    if replaced:
        LOG.warning("dry run: %s not valid for Dataflow (placeholders?): translated with "
                    "stand-ins; a real run needs real values", ", ".join(replaced))
    return replaced
