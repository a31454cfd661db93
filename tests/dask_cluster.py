"""A real dask.distributed cluster on this machine for the tests that run Beam or the job on
it, and the small Beam pieces those tests run there.

`DaskCluster`: `dask scheduler` and N `dask worker` processes (each under its nanny, so a
killed worker process is restarted and its tasks rescheduled; `threads` each), on 127.0.0.1
at free ports, each in a session of its own and stopped by process group id. Workers import
the project and these helpers as a cluster's workers would: from the same environment, with
the repository and tests/ on PYTHONPATH. `add_worker` starts one more, from another
environment or with other arguments (a preload, another interpreter).

`WriteEach`, `EmitInFinishBundle`, `MarkRun`, `MarkSetup`, `ReadFirstLine`, `FailFirst`:
DoFns that leave their outputs as files in a directory (the driver reads them back with
`written`), since a pass on Dask returns nothing to the driver; defined here, not in a test
module, so that workers can import them.
"""

import ast
import contextlib
import os
import sys
import uuid

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.windowed_value import WindowedValue

from clusters import Processes, free_port, wait_for

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(REPO, "tests")


class DaskCluster:
    """A scheduler and `workers` nanny-managed worker processes of `threads` threads each;
    `worker_args`: more arguments of theirs (`--preload MODULE`), `worker_env`: more
    environment variables; `scheduler_args`: the scheduler's (`--preload dask_task_log`);
    `python`: the interpreter of them all (another environment's),
    `env`: more environment variables of them all."""

    def __init__(self, work_dir, workers=2, threads=1, worker_args=(), worker_env=None,
                 python=sys.executable, env=None, scheduler_args=()):
        self.port = free_port()
        self.python = python
        self.env = dict(env or {})
        self.workers = workers
        self.threads = threads
        self.worker_args = list(worker_args)
        self.worker_env = dict(worker_env or {})
        self.scheduler_args = list(scheduler_args)
        os.makedirs(str(work_dir), exist_ok=True)
        self.procs = Processes(str(work_dir))

    @property
    def address(self):
        return "tcp://127.0.0.1:%d" % self.port

    def start(self, seconds=120):
        self.procs.start("scheduler", [
            self.python, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
            "--port", str(self.port), "--no-dashboard"] + self.scheduler_args, env=self._env(),
            cwd=REPO)
        for i in range(self.workers):
            self._start_worker("worker-%d" % i, self.python, self.worker_args,
                               self.worker_env, REPO)
        self.wait_for_workers(self.workers, seconds)
        return self

    def _env(self, extra=None):
        bin_dir = os.path.dirname(sys.executable)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, TESTS]))
        env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
        env.update(self.env)
        env.update(extra or {})
        return env

    def _start_worker(self, name, python, args, env, cwd):
        return self.procs.start(name, [
            python, "-m", "distributed.cli.dask_worker", self.address,
            "--nworkers", "1", "--nthreads", str(self.threads), "--host", "127.0.0.1",
            "--no-dashboard", "--name", name] + list(args), env=self._env(env), cwd=cwd)

    def add_worker(self, name, python=None, args=(), env=None, cwd=REPO):
        """Starts one more worker (`python`: another environment's interpreter; `env`
        replaces variables, PYTHONPATH included), and waits until the scheduler has it."""
        count = len(self.worker_pids())
        self._start_worker(name, python or self.python, args, env, cwd)
        self.wait_for_workers(count + 1)

    def wait_for_workers(self, count, seconds=120):
        wait_for(lambda: len(self.worker_pids()) >= count, "%d Dask workers" % count,
                 self.procs.procs, seconds)

    def client(self):
        from distributed import Client
        return Client(self.address, timeout=60)

    def worker_pids(self):
        """{worker name: pid of its worker process} as the scheduler knows them."""
        with self.client() as client:
            info = client.scheduler_info(n_workers=-1)["workers"]
            if not info:
                return {}
            pids = client.run(os.getpid)
            # a worker that joined between the two calls is not in `info`: the next poll has it
            return {info[address]["name"]: pid for address, pid in pids.items()
                    if address in info}

    def executed(self):
        """{worker name: tasks it has executed since it started}."""
        with self.client() as client:
            names = {a: w["name"] for a, w in
                     client.scheduler_info(n_workers=-1)["workers"].items()}
            counts = client.run(lambda dask_worker: dask_worker.state.executed_count)
            return {names[a]: n for a, n in counts.items()}

    def processing(self):
        """{worker name: keys of the tasks the scheduler has it run now}, busy workers only."""
        with self.client() as client:
            names = {a: w["name"] for a, w in
                     client.scheduler_info(n_workers=-1)["workers"].items()}
            return {names.get(a, a): list(keys) for a, keys in client.processing().items()
                    if keys}

    def running_tasks(self):
        """{worker name: keys of the tasks a thread of it executes now}, busy workers only:
        what the workers themselves run (`Worker.active_threads`), whatever the scheduler
        was told."""
        with self.client() as client:
            names = {a: w["name"] for a, w in
                     client.scheduler_info(n_workers=-1)["workers"].items()}
            running = client.run(lambda dask_worker: [str(k) for k in list(
                dask_worker.active_threads.values())])
            return {names.get(a, a): keys for a, keys in running.items() if keys}

    def stop(self):
        self.procs.stop()


def close_clients():
    """Closes every Dask client of this process (Beam's stock runner leaves its own open,
    and it would try to reconnect to a stopped scheduler)."""
    import gc
    from distributed import Client
    for obj in gc.get_objects():
        try:
            if isinstance(obj, Client) and obj.status not in ("closed", "closing"):
                obj.close()
        except ReferenceError:  # a weak proxy whose object is gone
            pass


@contextlib.contextmanager
def running_cluster(work_dir):
    """A started DaskCluster for a test module; on the way out, this process's clients are
    closed and the cluster's processes stopped."""
    cluster = DaskCluster(work_dir)
    try:
        yield cluster.start()
    finally:
        close_clients()
        cluster.stop()


def runner_options(cluster, *extra):
    from apache_beam.options.pipeline_options import PipelineOptions
    return PipelineOptions(["--dask_client_address", cluster.address] + list(extra))


class WriteEach(beam.DoFn):
    """Writes each element's repr into a file of its own in `directory`."""

    def __init__(self, directory):
        self.directory = directory

    def process(self, element):
        os.makedirs(self.directory, exist_ok=True)
        with open(os.path.join(self.directory, uuid.uuid4().hex), "w") as f:
            f.write(repr(element))


class ReadFirstLine(beam.DoFn):
    """Reads the first line of each path through Beam's FileSystems (as the job's DoFns
    read a store's files) and writes it into `directory` as `WriteEach` does."""

    def __init__(self, directory):
        self.directory = directory

    def process(self, path):
        from apache_beam.io.filesystems import FileSystems
        with FileSystems.open(path) as f:
            line = f.readline().decode("utf-8").strip()
        WriteEach(self.directory).process(line)


class FailFirst(beam.DoFn):
    """Element 0 fails at once; every other one runs for `seconds` and then leaves a file
    in `directory`: tasks still running when the first has failed."""

    def __init__(self, directory, seconds):
        self.directory = directory
        self.seconds = seconds

    def process(self, element):
        import time
        if element == 0:
            raise ValueError("element 0 fails")
        time.sleep(self.seconds)
        WriteEach(self.directory).process(element)


class EmitInFinishBundle(beam.DoFn):
    """Outputs the bundle's elements only in finish_bundle, as buffering sinks do."""

    def start_bundle(self):
        self.buffer = []

    def process(self, element):
        self.buffer.append(element)

    def finish_bundle(self):
        for element in self.buffer:
            yield WindowedValue(element, 0, [GlobalWindow()])


class SplitEvenOdd(beam.DoFn):
    def process(self, element):
        if element % 2:
            yield beam.pvalue.TaggedOutput("odd", element)
        else:
            yield element


class _Mark(beam.DoFn):
    """Passes elements through; `mark()` leaves a file in `directory`."""

    def __init__(self, directory):
        self.directory = directory

    def mark(self):
        os.makedirs(self.directory, exist_ok=True)
        open(os.path.join(self.directory, uuid.uuid4().hex), "w").close()

    def process(self, element):
        yield element


class MarkRun(_Mark):
    """Leaves a file in `directory` each time it runs a bundle."""

    def start_bundle(self):
        self.mark()


class MarkSetup(_Mark):
    """Leaves a file in `directory` each time it is set up."""

    def setup(self):
        self.mark()


def idle_stages(dask_worker=None):
    """On a worker (`client.run`): how many set-up stage executors its job plugin holds."""
    stages = dask_worker.plugins["t2t-beam-datagen"].stages
    return sum(len(idle) for idle in stages._idle.values())


def written(directory):
    """The elements `WriteEach` wrote into `directory`, sorted."""
    if not os.path.isdir(directory):
        return []
    values = []
    for name in os.listdir(directory):
        with open(os.path.join(directory, name)) as f:
            values.append(ast.literal_eval(f.read()))
    return sorted(values)


def runs(directory):
    """How many bundles `MarkRun` ran (or set-ups `MarkSetup` made) into `directory`."""
    return len(os.listdir(directory)) if os.path.isdir(directory) else 0
