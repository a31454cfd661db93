"""What the job runs on a Dask cluster's processes outside its tasks: the check that a worker
(and the scheduler) runs the driver's project, the warm-up of a worker, the per-worker pool of
set-up stages, and the scheduler's view of its workers.

This module is shipped **by value** (`cloudpickle.register_pickle_by_value`, done by
`pipeline.runtime.dask_session`): the functions and the plugin class reach a worker as code, not
as a reference to this module, so they run where the project cannot be imported (or is another
version) and can say so. It therefore imports only the standard library and `distributed` at
the top; the project is imported inside functions, where it is there.

- `project_identity()`: this interpreter's Python, apache-beam and t2t-beam-datagen versions,
  where `pipeline` is imported from, and a digest of the project's source files (a stale install
  of the same version number differs there);
- `DatagenWorker`: the worker plugin a job registers once: it quiets Beam's "apitools not
  found" line, then imports Beam and the project and runs the compiled loops once, in a
  thread of its own, while the driver builds its first pass; it holds the worker's
  `StagePool` (the job's DoFns, set up once per worker thread, reused by every task of a stage);
- `dask_setup(worker)`: the same warm-up as a preload (`dask worker --preload
  pipeline.runtime.dask_worker`), as the project's Docker image starts its workers;
- `warm_scheduler()`: the scheduler's own warm-up (it unpickles the job's task graphs);
- `scheduler_view()`: run on the scheduler, how long each worker has been silent and what it
  holds (`pipeline.runtime.dask_session.silent_workers` turns it into the progress line).
"""

import logging
import os
import sys
import threading
import time

from distributed.diagnostics.plugin import WorkerPlugin

DISTRIBUTION = "t2t-beam-datagen"
PACKAGES = ("pipeline", "transforms")
PLUGIN_NAME = "t2t-beam-datagen"
SOURCE_SUFFIXES = (".py", ".json")  # the packages' code and package data
# What a worker imports before its first task: Beam, the Dask stage executor, the passes'
# transforms, and (worker_warmup) the compiled loops of the token index and the encoder.
WARM_MODULES = ("apache_beam", "pipeline.runtime.dask_runner", "transforms.prepare.file_scan",
                "transforms.vocab.learners", "transforms.vocab.word_learning",
                "transforms.vocab.byte_bpe_learning", "transforms.vocab.token_counts",
                "transforms.vocab.subword_refine", "transforms.encode.encode_pairs",
                "transforms.encode.shuffled_shards", "transforms.reporting.json_result",
                "pipeline.runtime.worker_warmup")
LOG = logging.getLogger("distributed")


def project_identity() -> dict:
    """{"python", "apache-beam", "version", "location", "code"} of this interpreter's project,
    or {"error": ...} when it cannot import the project's packages. `code` is a digest of
    the packages' source files, found where `import pipeline` would find them."""
    import hashlib
    import importlib.metadata
    import importlib.util

    def version(name):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None

    identity = {"python": "%d.%d" % sys.version_info[:2], "apache-beam": version("apache-beam"),
                "version": version(DISTRIBUTION)}
    digest = hashlib.sha256()
    for package in PACKAGES:
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError) as e:
            spec, identity["error"] = None, "%s: %s" % (package, e)
        if spec is None or not spec.submodule_search_locations:
            identity.setdefault("error", "no module named %s" % package)
            return identity
        root = list(spec.submodule_search_locations)[0]
        identity["location"] = os.path.dirname(root)
        for folder, folders, files in os.walk(root):
            folders[:] = sorted(f for f in folders if f != "__pycache__")
            for name in sorted(f for f in files if f.endswith(SOURCE_SUFFIXES)):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, root).encode() + b"\0")
                with open(path, "rb") as f:
                    digest.update(f.read() + b"\0")
    identity["code"] = digest.hexdigest()
    return identity


def warm_up(modules=WARM_MODULES) -> None:
    """Quiets Beam's import, then imports what the job's tasks need (`modules`): every
    pass's tasks then find them loaded. A module that fails to import is logged once; the
    task that needs it reports the error."""
    import importlib
    start = time.time()
    try:
        from pipeline.runtime import console
        console.set_up()  # before Beam's first import: no "apitools not found" line
        for name in modules:
            importlib.import_module(name)
    except Exception as e:  # the job's check names a worker without the project
        LOG.warning("t2t-beam-datagen: warm-up stopped: %s: %s", type(e).__name__, e)
        return
    LOG.info("t2t-beam-datagen: warmed up in %.1f s", time.time() - start)


class StagePool:
    """Set-up stage executors of the job's passes on one worker, by stage: a task takes an
    idle one (or none: it builds one), runs its partition, and gives it back. A worker of N
    threads holds at most N of a stage. `forget(pass_id)` tears down a finished pass's."""

    def __init__(self) -> None:
        self._idle: dict = {}
        self._lock = threading.Lock()

    def take(self, name: str):
        with self._lock:
            idle = self._idle.get(name)
            return idle.pop() if idle else None

    def give(self, name: str, executor) -> None:
        with self._lock:
            self._idle.setdefault(name, []).append(executor)

    def forget(self, pass_id: str) -> int:
        with self._lock:
            names = [n for n in self._idle if pass_id in n]
            dropped = [e for n in names for e in self._idle.pop(n)]
        for executor in dropped:
            executor.teardown()
        return len(dropped)


class DatagenWorker(WorkerPlugin):
    """The job's plugin on every worker (and on every worker that joins later): warms the
    worker up in a thread (`warm_up`), so that registering it returns at once, and holds the
    worker's `StagePool`."""

    name = PLUGIN_NAME

    def setup(self, worker) -> None:
        self.stages = StagePool()
        threading.Thread(target=warm_up, name="t2t-datagen-warm-up", daemon=True).start()

    def teardown(self, worker) -> None:
        stages = getattr(self, "stages", None)
        if stages is not None:
            stages.forget("")


async def forget_pass(pass_id: str, dask_worker=None) -> int:
    """On a worker (`client.run`, not waited for: a coroutine function): tears down the
    set-up stages of finished pass `pass_id`."""
    stages = getattr(dask_worker.plugins.get(PLUGIN_NAME), "stages", None)
    return stages.forget(pass_id) if stages is not None else 0


def running_of(keys, dask_worker=None) -> list:
    """On a worker (`client.run`): the tasks of `keys` whose code still runs there."""
    return [key for key, task in dask_worker.state.tasks.items()
            if str(key) in keys and task.state in ("executing", "long-running", "cancelled",
                                              "resumed")]


def dask_setup(worker) -> None:
    """`dask worker --preload pipeline.runtime.dask_worker`: warm up when the worker starts,
    before any job (the project's Docker image sets this preload for its workers)."""
    threading.Thread(target=warm_up, name="t2t-datagen-warm-up", daemon=True).start()


def warm_scheduler(dask_scheduler=None) -> None:
    """On the scheduler (`client.run_on_scheduler`): imports, in a thread, what unpickling the
    job's task graphs needs (the stage executor's module, and Beam), quietly, while the
    driver builds its first pass."""
    threading.Thread(target=warm_up, args=(("pipeline.runtime.dask_runner",),),
                     name="t2t-datagen-warm-up", daemon=True).start()


def scheduler_view(dask_scheduler=None) -> dict:
    """On the scheduler: {"ttl": seconds after which it drops a silent worker (or None),
    "workers": [{"address", "name", "silent", "last_seen", "processing", "status"}]}: how
    long since each worker's last heartbeat (and when that was, on the scheduler's clock, the
    clock of its events) and how many tasks it holds."""
    import dask
    now = time.time()
    ttl = getattr(dask_scheduler, "worker_ttl", None)  # what it runs with: its config's value
    if ttl is None:  # or its argument's
        ttl = dask.utils.parse_timedelta(
            dask.config.get("distributed.scheduler.worker-ttl", None))
    return {"ttl": ttl, "workers": [
        {"address": address, "name": str(ws.name), "silent": now - ws.last_seen,
         "last_seen": ws.last_seen,
         "processing": len(ws.processing), "status": str(ws.status.name)}
        for address, ws in dask_scheduler.workers.items()]}
