"""A Dask cluster of separate hosts with an S3 store, for end-to-end tests that must not
share a disk or a network stack: tests/network_hosts.py makes the hosts.

    store  10.231.N.2   moto_server (the bucket `BUCKET`), port 5000
    sched  10.231.N.3   `dask scheduler`, port 8786
    w1     10.231.N.11  `dask worker` under its nanny, 1 thread
    w2     10.231.N.12  the same
    driver 10.231.N.1   the test process and the job's driver, in the root namespaces

Every host runs from the same installed environment, read-only (the project, its venv and
the Python it was made from: `image_dirs`), with tests/ on PYTHONPATH so that workers import
`TaskStarts`. Each hides the machine's /tmp, /var/tmp, /dev/shm, $HOME and the directory
holding the project (tmpfs of its own): what the driver writes on its disk (the test's
tmp_path, a --filters file, a given vocabulary) is not there. Inputs and outputs are s3://.
Each host's $HOME gets a copy of a numba cache warmed once per session (`warm_numba_cache`),
as an image built with its compiled loops would hold; without it every new worker process
compiles them again (~10 s of CPU).

`TaskStarts` (a worker plugin) reports every task a worker starts to the scheduler, where
`StartLog` (a scheduler plugin) keeps them: `starts()` lists (worker name, task key) in the
order they started, the events a test waits for before it cuts a link or kills a host
(`wait_for_start`); `task_log()` adds each worker the scheduler removed, with the tasks it
was running and the results lost with it. Faults: `kill_host(name)` (every process of the
host at once), `hosts[name].link_down()`/`link_up()`. Tests call `ensure_up()` first: a host
a previous test killed or cut off is booted again or reconnected (`fill_store(cluster)`
fills a new store's bucket).
"""

import contextlib
import fcntl
import os
import subprocess
import sys
import time

from distributed.diagnostics.plugin import SchedulerPlugin, WorkerPlugin

from clusters import wait_for
from dask_cluster import DaskCluster
from network_hosts import Network
from object_store_servers import ACCESS_KEY, BUCKET, REGION, SECRET_KEY, MotoServer

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(REPO, "tests")
HOSTS = {"store": ("st", 2), "sched": ("sc", 3), "w1": ("w1", 11), "w2": ("w2", 12)}
WORKERS = ("w1", "w2")
STORE_PORT, SCHEDULER_PORT = 5000, 8786
TOPIC = "t2t-test-task-starts"
NEVER_HIDDEN = {"/", "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/proc", "/sys",
                "/dev", "/run", "/var"}


class TaskStarts(WorkerPlugin):
    """On a worker: an event to the scheduler each time a task starts executing."""

    name = "t2t-test-task-starts"

    def setup(self, worker):
        self.worker = worker

    def transition(self, key, start, finish, **kwargs):
        if finish == "executing":
            self.worker.log_event(TOPIC, {"key": str(key), "name": str(self.worker.name)})


class StartLog(SchedulerPlugin):
    """On the scheduler: every `TaskStarts` event, in arrival order (the scheduler's own
    event log keeps only the last 1,000 of a topic), and every worker it removed, with the
    tasks that worker was running and the results lost with it (which Dask must compute
    again elsewhere), at their place among the starts."""

    name = "t2t-test-start-log"

    def __init__(self):
        self.starts = []
        self.removed = []
        self.names = {}

    def add_worker(self, scheduler, worker):
        self.names[worker] = str(scheduler.workers[worker].name)

    def log_event(self, topic, msg):
        if topic == TOPIC:
            self.starts.append((msg["name"], msg["key"]))
        elif topic == "all" and isinstance(msg, dict) and msg.get("action") == "remove-worker":
            self.removed.append({
                "name": self.names.get(msg["worker"], msg["worker"]),
                "after_starts": len(self.starts),
                "running": sorted(str(k) for k in msg["processing-tasks"]),
                "lost": sorted(str(k) for k in msg["lost-computed-tasks"])})


def _log(dask_scheduler=None):
    plugin = dask_scheduler.plugins[StartLog.name]
    return list(plugin.starts), list(plugin.removed)


def image_dirs():
    """What every host runs from, read-only: the project (and its venv) and the Python the
    venv was made from."""
    return sorted({REPO, os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)})


def hidden_dirs(*extra):
    """What no host sees of the machine's disk (`extra`: the test's own directories)."""
    home = os.path.expanduser("~")
    dirs = ["/tmp", "/var/tmp", "/dev/shm", home, os.path.dirname(REPO)] + list(extra)
    return sorted({os.path.realpath(d) for d in dirs} - NEVER_HIDDEN)


def warm_numba_cache(directory):
    """A numba cache holding the job's compiled loops, made once in `directory` (by one
    process at a time: test processes may share it)."""
    os.makedirs(directory, exist_ok=True)
    marker = os.path.join(directory, ".warm")
    with open(os.path.join(directory, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(marker):
            env = dict(os.environ, NUMBA_CACHE_DIR=directory, PYTHONPATH=REPO)
            subprocess.run([sys.executable, "-c", "import pipeline.runtime.worker_warmup"],
                           env=env, cwd=REPO, check=True, capture_output=True)
            open(marker, "w").close()
    return directory


class MultiHostCluster(DaskCluster):
    """The hosts above, started by `start()` and removed by `stop()`; `work_dir` holds
    every host's process logs. `hide`: more directories of this machine no host sees."""

    def __init__(self, work_dir, numba_cache=None, hide=(), fill_store=None):
        self.work_dir = str(work_dir)
        self.fill_store = fill_store  # fill_store(cluster): what the bucket holds at boot
        self.home = os.path.expanduser("~")
        self.numba_dir = os.path.join(self.home, ".cache", "t2t-test-numba")
        seed = [(numba_cache, self.numba_dir)] if numba_cache else []
        self.network = Network(self.work_dir, hide=hidden_dirs(self.work_dir, *hide),
                               keep=image_dirs(), seed=seed)
        self.hosts = {}
        self.store = None

    # -- addresses and flags -----------------------------------------------------------
    def ip(self, host):
        return self.hosts[host].ip

    @property
    def address(self):
        return "tcp://%s:%d" % (self.ip("sched"), SCHEDULER_PORT)

    @property
    def endpoint(self):
        return "http://%s:%d" % (self.ip("store"), STORE_PORT)

    def s3_flags(self):
        return ["--s3_endpoint_url", self.endpoint, "--s3_access_key_id", ACCESS_KEY,
                "--s3_secret_access_key", SECRET_KEY, "--s3_region_name", REGION]

    def dask_flags(self):
        return ["--runner", "DaskRunner", "--dask_client_address", self.address]

    def s3(self):
        """A boto3 client of the store (from the driver's namespace)."""
        import boto3
        from botocore.config import Config
        return boto3.session.Session().client(
            "s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY, region_name=REGION,
            config=Config(response_checksum_validation="when_required"))

    # -- the hosts' processes -----------------------------------------------------------
    def _env(self):
        """A host's environment: the image's PATH, its $HOME, nothing of the driver's."""
        env = {"PATH": os.path.dirname(sys.executable) + ":/usr/local/bin:/usr/bin:/bin",
               "HOME": self.home, "LANG": os.environ.get("LANG", "C.UTF-8"),
               "PYTHONPATH": os.pathsep.join([REPO, TESTS]),
               "PYTHONDONTWRITEBYTECODE": "1", "NUMBA_CACHE_DIR": self.numba_dir}
        return env

    def _launch(self, host):
        def launch(label, argv):
            proc = self.hosts[host].run(label, argv, env=self._env())
            proc.name = "%s/%s" % (host, label)
            return proc
        return launch

    def _start_service(self, name):
        launch = self._launch(name)
        python = sys.executable
        if name == "store":
            self.store = MotoServer(self.work_dir, host=self.ip("store"), port=STORE_PORT,
                                    launch=launch)
            self.s3().create_bucket(Bucket=BUCKET)
            if self.fill_store is not None:
                self.fill_store(self)
        elif name == "sched":
            proc = launch("scheduler", [
                python, "-m", "distributed.cli.dask_scheduler", "--host", self.ip("sched"),
                "--port", str(SCHEDULER_PORT), "--no-dashboard"])
            wait_for(self._scheduler_answers, "the Dask scheduler on host sched", [proc])
        else:
            launch("worker", [
                python, "-m", "distributed.cli.dask_worker", self.address, "--nworkers", "1",
                "--nthreads", "1", "--host", self.ip(name), "--no-dashboard", "--name", name])

    def _scheduler_answers(self):
        from distributed import Client
        with Client(self.address, timeout=5) as client:
            client.register_plugin(StartLog())
            client.register_plugin(TaskStarts())
        return True

    def _workers_up(self):
        with self.client() as client:
            names = {w["name"] for w in client.scheduler_info(n_workers=-1)["workers"].values()}
        return set(WORKERS) <= names

    def start(self):
        self.network.create()
        try:
            for name, (code, number) in HOSTS.items():
                self.hosts[name] = self.network.add_host(name, code, number)
                self._start_service(name)
            wait_for(self._workers_up, "Dask workers w1 and w2", self._procs(), 180)
        except BaseException:
            self.stop()
            raise
        return self

    def _procs(self):
        return [proc for host in self.hosts.values() for proc in host.procs]

    def stop(self):
        self.network.close()

    # -- faults -------------------------------------------------------------------------
    def kill_host(self, name):
        """Every process of host `name` killed at once (SIGKILL), the nanny's too."""
        self.hosts[name].kill()

    def boot(self, name):
        """Boots host `name` again (a fresh disk) and starts its service; returns once it
        answers (a worker: once it started; `ensure_up` waits for the scheduler to list it)."""
        self.hosts[name].link_up()
        self.hosts[name].start()
        self._start_service(name)

    def _registered(self):
        with self.client() as client:
            return {w["name"] for w in client.scheduler_info(n_workers=-1)["workers"].values()}

    def ensure_up(self):
        """Boots again every host a test left down or cut off, the scheduler's first, and a
        worker host whose worker is gone (a worker stops when it loses its scheduler)."""
        for name in HOSTS:
            self.hosts[name].link_up()
        if not self.hosts["store"].alive or self.store.proc.poll() is not None:
            self.hosts["store"].kill()
            self.boot("store")
        if not self.hosts["sched"].alive:
            self.boot("sched")
        registered = self._registered()
        lost = [name for name in WORKERS if name not in registered]
        for name in lost:
            self.hosts[name].kill()
            self.boot(name)
        wait_for(self._workers_up, "Dask workers w1 and w2",
                 [proc for name in lost for proc in self.hosts[name].procs], 180)

    # -- what ran where -----------------------------------------------------------------
    def starts(self):
        """[(worker name, task key)] of every task started since the scheduler started."""
        return self.task_log()[0]

    def task_log(self):
        """(starts, removed workers) as `StartLog` keeps them."""
        with self.client() as client:
            return client.run_on_scheduler(_log)

    def wait_for_start(self, worker, after, seconds=300, job=None):
        """The key of the first task `worker` started after the first `after` starts
        (`len(starts())` taken earlier); raises if `job` (a cluster_jobs.Job) ends first."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            for name, key in self.starts()[after:]:
                if name == worker:
                    return key
            if job is not None and job.proc.poll() is not None:
                raise AssertionError("the job ended (%s) before %s started a task:\n%s" % (
                    job.proc.returncode, worker, "\n".join(job.lines[-20:])))
            time.sleep(0.05)
        raise TimeoutError("%s started no task within %d s" % (worker, seconds))


@contextlib.contextmanager
def running_hosts(work_dir, numba_cache=None, fill_store=None):
    """A started MultiHostCluster, stopped (every host, link and process removed) after."""
    cluster = MultiHostCluster(work_dir, numba_cache, fill_store=fill_store)
    cluster.start()
    try:
        yield cluster
    finally:
        from dask_cluster import close_clients
        close_clients()
        cluster.stop()
