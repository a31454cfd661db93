"""A Dask scheduler preload for the tests that count a job's tasks and see where they ran
(`dask scheduler --preload dask_task_log`): the scheduler's own account, not the driver's.

Into the file `$T2T_DASK_TASK_LOG` it appends, as the scheduler learns them:
- `graph PASS N`: a graph of N new tasks of the job's pass PASS (the `t2t-{pass id}` prefix of
  their keys), in the order the passes are submitted;
- `done KEY WORKER`: task KEY of the job finished on the worker named WORKER.
`read_task_log` reads it back.
"""

import os

from distributed.diagnostics.plugin import SchedulerPlugin

TASK_LOG = "T2T_DASK_TASK_LOG"


def _pass_of(key):
    name = key[0] if isinstance(key, tuple) else str(key)
    return name[:16] if name.startswith("t2t-") else None


class TaskLog(SchedulerPlugin):
    def __init__(self, scheduler, path):
        self.scheduler = scheduler
        self.path = path

    def _write(self, line):
        with open(self.path, "a") as f:
            f.write(line + "\n")

    def update_graph(self, scheduler, *, keys, tasks, **kwargs):
        counts = {}
        for key in tasks:
            name = _pass_of(key)
            if name:
                counts[name] = counts.get(name, 0) + 1
        for name, count in counts.items():
            self._write("graph %s %d" % (name, count))

    def transition(self, key, start, finish, *args, **kwargs):
        if start == "processing" and finish == "memory" and _pass_of(key):
            state = self.scheduler.workers.get(kwargs.get("worker"))
            name = state.name if state is not None else kwargs.get("worker")
            self._write("done %s %s" % (str(key).replace(" ", ""), name))


def dask_setup(scheduler):
    scheduler.add_plugin(TaskLog(scheduler, os.environ[TASK_LOG]), name="t2t-task-log")


def read_task_log(path):
    """([(pass, tasks)] in submission order, [(key, worker name)] of the finished tasks)."""
    graphs, done = [], []
    if not os.path.exists(path):
        return graphs, done
    with open(path) as f:
        for line in f:
            kind, first, second = line.split()
            if kind == "graph":
                graphs.append((first, int(second)))
            else:
                done.append((first, second))
    return graphs, done
