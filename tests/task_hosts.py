"""A Dask scheduler preload for tests whose scheduler is not started by the test (the SLURM
recipe's `SLURMCluster` runs its scheduler inside the recipe's process): it records which
host computed each task, asked of the scheduler itself, for the test to read afterwards.

    DASK_DISTRIBUTED__SCHEDULER__PRELOAD='["task_hosts"]' T2T_TEST_TASK_HOSTS=FILE

Each task that ends in memory appends one line `HOST KEY` to FILE (HOST: the address of the
worker holding the result, the one that computed it), as it happens, so the file is whole
even when the recipe's process exits without a clean close.
"""

import os

from distributed.diagnostics.plugin import SchedulerPlugin

PATH_VARIABLE = "T2T_TEST_TASK_HOSTS"


class TaskHosts(SchedulerPlugin):
    name = "t2t-test-task-hosts"

    def __init__(self, scheduler, path):
        self.scheduler = scheduler
        self.path = path

    def transition(self, key, start, finish, *args, **kwargs):
        if start == "processing" and finish == "memory":
            task = self.scheduler.tasks.get(key)
            hosts = sorted({ws.host for ws in task.who_has}) if task is not None else []
            with open(self.path, "a") as f:
                f.write("%s %s\n" % (",".join(hosts) or "?", key))


def dask_setup(scheduler):
    scheduler.add_plugin(TaskHosts(scheduler, os.environ[PATH_VARIABLE]))


def read(path):
    """{host: tasks it computed} from FILE."""
    counts = {}
    with open(path) as f:
        for line in f:
            for host in line.split(" ", 1)[0].split(","):
                counts[host] = counts.get(host, 0) + 1
    return counts
