"""A Dask worker preload for the fault tests (`dask worker --preload dask_kill_points`): it
kills its own worker process at an exact point of the job's work, once per armed point, and
logs every shard fragment write, so a test can prove that the killed task ran again.

A point is armed by a file of its name in the directory `$T2T_DASK_KILL_DIR`; the first
worker to reach the point takes the file (renames it to `NAME.taken.PID`, which only one
process can do) and kills itself with SIGKILL. Its nanny then starts a new worker process.

- `in-fragment-write`: inside the write of a shard fragment (`transforms.storage.file_io.
  create_atomically` of a `.frag` path): half of the fragment's bytes are in the temporary
  file when the process dies;
- `in-check`: in the job's check of the worker's project (`pipeline.runtime.dask_worker.
  project_identity`, shipped by value), when it looks for the `pipeline` package;
- `in-plugin`: when the job's worker plugin reaches the worker (the scheduler's `plugin-add`).

`fragments.log` in the same directory gets `start|done PID TASK PATH` for every fragment write.
"""

import contextlib
import os
import signal

KILL_DIR = "T2T_DASK_KILL_DIR"
FRAGMENT_LOG = "fragments.log"


def _take(name):
    """True for the one process that takes armed point `name`."""
    path = os.path.join(os.environ[KILL_DIR], name)
    try:
        os.rename(path, "%s.taken.%d" % (path, os.getpid()))
    except FileNotFoundError:
        return False
    return True


def _die():
    os.kill(os.getpid(), signal.SIGKILL)


def _log(event, path):
    from distributed import get_worker
    task = str(get_worker().get_current_task())
    with open(os.path.join(os.environ[KILL_DIR], FRAGMENT_LOG), "a") as f:
        f.write("%s %d %s %s\n" % (event, os.getpid(), task, path))


class _DyingFile:
    """A file whose first write writes half of its bytes, then kills the process."""

    def __init__(self, f):
        self._f = f

    def write(self, data):
        self._f.write(data[:len(data) // 2])
        self._f.flush()
        os.fsync(self._f.fileno())
        _die()


def _patch_fragment_writes():
    from transforms.storage import file_io
    original = file_io.create_atomically

    @contextlib.contextmanager
    def create_atomically(path):
        if not path.endswith(".frag"):
            with original(path) as f:
                yield f
            return
        _log("start", path)
        with original(path) as f:
            yield _DyingFile(f) if _take("in-fragment-write") else f
        _log("done", path)

    file_io.create_atomically = create_atomically


def _patch_project_lookup():
    import importlib.util
    original = importlib.util.find_spec

    def find_spec(name, package=None):
        if name == "pipeline" and _take("in-check"):
            _die()
        return original(name, package)

    importlib.util.find_spec = find_spec


def _patch_plugin_add(worker):
    original = worker.plugin_add

    async def plugin_add(plugin=None, name=None, **kwargs):
        if name == "t2t-beam-datagen" and _take("in-plugin"):
            _die()
        return await original(plugin=plugin, name=name, **kwargs)

    worker.plugin_add = plugin_add  # at the worker's registration
    worker.handlers["plugin-add"] = plugin_add  # from the scheduler, later


def dask_setup(worker):
    if os.environ.get(KILL_DIR):
        _patch_project_lookup()
        _patch_fragment_writes()
        _patch_plugin_add(worker)


def fragment_writes(kill_dir):
    """[(event, pid, task, path)] of `fragments.log`."""
    path = os.path.join(str(kill_dir), FRAGMENT_LOG)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [tuple(line.split(" ", 3)) for line in f.read().splitlines()]


def taken(kill_dir, name):
    """The pids of the processes that took point `name` (and so died there)."""
    return [int(n.rsplit(".", 1)[1]) for n in os.listdir(str(kill_dir))
            if n.startswith(name + ".taken.")]
