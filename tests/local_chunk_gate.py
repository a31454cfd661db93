"""A gate for local worker processes (DirectRunner's, the job's pool): the first `PASSED`
encode chunks of the job run, every later one is held (until its process is killed, or a
900 s hang guard), so a test that stops a job mid-encode knows, whatever the load, that some
chunks are done and some are not. The Dask tests' `dask_chunk_gate.ChunkGate` does the same
through a worker plugin; local workers have none, so the test puts a `sitecustomize` that
calls `install()` on the job's PYTHONPATH (Python imports `sitecustomize` at start-up, in the
driver, the fork server and every worker), which patches `_EncodeChunkFn.process` when its
module is imported.

`T2T_TEST_CHUNK_GATE` = `DIR:PASSED`: each chunk takes the next free token file in DIR
(created with O_EXCL, so the count is exact across processes); a token numbered PASSED or
more is held. Without the variable this module does nothing.
"""

import importlib.abc
import importlib.util
import os
import sys
import time

HANG_GUARD_SECONDS = 900
MODULE = "transforms.encode.encode_pairs"


def _take_token(directory):
    number = 0
    while True:
        try:
            os.close(os.open(os.path.join(directory, "%06d" % number),
                             os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return number
        except FileExistsError:
            number += 1


def _patch(module, directory, passed):
    cls = module._EncodeChunkFn
    original = cls.process

    def process(fn, chunk):
        if _take_token(directory) >= passed:
            time.sleep(HANG_GUARD_SECONDS)
        yield from original(fn, chunk)

    cls.process = process


class _PatchOnImport(importlib.abc.MetaPathFinder):
    def __init__(self, directory, passed):
        self._gate = (directory, passed)

    def find_spec(self, name, path, target=None):
        if name != MODULE:
            return None
        sys.meta_path.remove(self)  # the real finders find it; its loader runs then patches
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module
        gate = self._gate

        def exec_module(module):
            run(module)
            _patch(module, *gate)

        spec.loader.exec_module = exec_module
        return spec


def install():
    setting = os.environ.get("T2T_TEST_CHUNK_GATE")
    if not setting:
        return
    directory, passed = setting.rsplit(":", 1)
    sys.meta_path.insert(0, _PatchOnImport(directory, int(passed)))


def gate_variables(gate_dir, passed):
    """{PYTHONPATH, T2T_TEST_CHUNK_GATE} for a job whose local workers encode only the first
    `passed` chunks and hold the rest: a `sitecustomize` calling `install()` in a new folder
    beside `gate_dir`, then this folder, then the caller's PYTHONPATH."""
    os.makedirs(gate_dir)
    site = os.path.join(os.path.dirname(gate_dir), "gate_site")
    os.makedirs(site)
    with open(os.path.join(site, "sitecustomize.py"), "w") as f:
        f.write("import local_chunk_gate\nlocal_chunk_gate.install()\n")
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join(p for p in (site, here, os.environ.get("PYTHONPATH")) if p)
    return {"PYTHONPATH": path, "T2T_TEST_CHUNK_GATE": "%s:%d" % (gate_dir, passed)}
