"""Checks before anything runs or is deleted: every path's file system, and that the output
directory can be written. Each failure is one line naming the flag (exit 2), where a pass
would otherwise fail later with a worker's traceback."""

import os
import re
from typing import List, Optional, Tuple

from apache_beam.io.filesystems import FileSystems

from pipeline.driver.datasets import split_patterns
from pipeline.driver.fingerprint import INPUT_FLAGS, fingerprint_values, input_keys
from pipeline.output.layout import REJECTS_NAME, WORK_NAME, OutputLayout
from pipeline.runtime.errors import DatagenError, one_line
from transforms.contracts.config import DatagenConfig
from transforms.errors import StoreUnreachable
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores

def named_paths(config: DatagenConfig) -> List[Tuple[str, str]]:
    """(flag, path) of every path the flags name (input patterns, vocabularies, output)."""
    values = fingerprint_values(config)
    named = [("--output_dir", config.job.output_dir)]
    for flag in input_keys(values, INPUT_FLAGS):
        named += [("--" + flag, p) for p in split_patterns(values.get(flag))]
    return named


def check_file_systems(config: DatagenConfig) -> None:
    """Raises DatagenError when a path's scheme has no Beam file system here (gs://
    without apache-beam[gcp]): Beam would raise a ValueError with a traceback from
    whichever stage touched the path first."""
    for flag, path in named_paths(config):
        problem = file_io.filesystem_problem(path)
        if problem:
            raise DatagenError("%s %s" % (flag, problem))


def check_stores_reachable(config: DatagenConfig, stores: ObjectStores) -> None:
    """Raises DatagenError (one line naming the flag and the store's error) within about
    30 s when a path's object store does not answer: asked once per bucket, with short
    timeouts, since the job's own clients ride out outages of a minute or two mid-run
    (`transforms.storage.object_stores`) and would wait that long here. A store that
    answers with a refusal (no such bucket, access denied) is left to the step that
    needs it, which says what is wrong."""
    asked = set()
    for flag, path in named_paths(config):
        bucket = re.match(r"[a-z0-9]+://[^/]*", path)
        if bucket is None or stores.for_path(path) is None or bucket.group(0) in asked:
            continue
        asked.add(bucket.group(0))
        prefix = re.split(r"[\[*?!]", path, maxsplit=1)[0]  # before a wildcard or member
        try:
            file_io.check_reachable(prefix, stores)
        except StoreUnreachable as e:
            raise DatagenError("%s %s: cannot reach its store: %s" % (
                flag, path, one_line(e))) from None
        except OSError:
            pass


def make_local_dirs(path: str, attempts: int = 5) -> None:
    """`os.makedirs`, again when a parent it made was removed before its child was: another
    problem's run sharing --output_dir removes the shared `.datagen-work` once it is empty
    (`commit.remove_work_dir`). Once this run's directory is made the parent is not empty,
    and it stays until this run removes its own."""
    for attempt in range(attempts):
        try:
            os.makedirs(path, exist_ok=True)
            return
        except FileNotFoundError:
            if attempt == attempts - 1:
                raise


def missing_local_dirs(path: str) -> Optional[str]:
    """The outermost directory of local `path` that does not exist yet (`path` itself, or an
    ancestor), or None when `path` exists or is not local: what a run would create, and what
    `remove_new_dirs` removes again when the run is refused."""
    if not file_io.is_local(path):
        return None
    top = None
    while not os.path.lexists(path):
        top, path = path, os.path.dirname(path)
        if path == top:
            break
    return top


def remove_new_dirs(path: str, top: Optional[str]) -> None:
    """Removes `path` and its ancestors up to `top` (`missing_local_dirs`), each only if it
    is empty (`os.rmdir`): a refused run leaves no new directory behind, and a directory
    something else wrote into meanwhile stays."""
    if top is None:
        return
    while True:
        try:
            os.rmdir(path)
        except OSError:
            return
        if path == top:
            return
        path = os.path.dirname(path)


def check_output_writable(layout: OutputLayout, stores: Optional[ObjectStores] = None) -> None:
    """Writes and deletes a 0-byte file in the work directory, so an --output_dir under a
    regular file, in /proc or without permission stops the job with one line before any
    pass runs (a pass would fail with a worker's traceback). `stores`: the job's
    `ObjectStores` (a 0-byte object on S3 needs the store's own client)."""
    probe = FileSystems.join(layout.work_dir, "write-test")
    try:
        if file_io.is_local(probe):
            make_local_dirs(layout.work_dir)
        file_io.write_bytes_atomically(probe, b"", stores)
        file_io.delete_files([probe], stores)
    except OSError as e:  # BeamIOError is an OSError, and so is every store client error
        raise DatagenError("--output_dir %s: cannot write there (%s)" % (
            layout.output_dir, one_line(e))) from None


def check_output_directories(layout: OutputLayout) -> None:
    """Raises DatagenError when --output_dir holds a file (not a directory) where the job
    keeps a directory of its own: the work directory (`.datagen-work`) and `rejects`, so the
    run stops with one line before anything runs, not with a traceback at its first write
    (for `rejects`, after the whole encode pass). Local directories only: an object store
    has no directories, and an object of that name does not stand in the way."""
    for name in (WORK_NAME, REJECTS_NAME):
        path = layout.path(name)
        if file_io.is_local(path) and os.path.lexists(path) and not os.path.isdir(path):
            raise DatagenError("--output_dir %s holds a file named %s, where the job keeps "
                               "its %s directory: move it away" % (
                                   layout.output_dir, name,
                                   "work" if name == WORK_NAME else "rejects"))
