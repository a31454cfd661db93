"""Real Flink and Spark clusters on this machine, for the tests and benchmarks that run the
job on them: installs, Beam's job server jars, the cluster processes and Beam's worker pool.

- Flink 1.20 and Spark 3.5 come from PyPI (`apache-flink-libraries` holds Flink's Java
  distribution, `pyspark` Spark's), installed once per machine with `pip --target` into
  `~/.cache/t2t-datagen-clusters` (`T2T_DATAGEN_CLUSTERS` to change it), outside the
  project's virtualenv: apache-flink pins apache-beam<=2.61, and only the Java side is used.
- Beam's job server jars (`beam-runners-flink-1.20-job-server`,
  `beam-runners-spark-3-job-server`, this Beam release's version) are fetched once with
  `mvn dependency:get` into `~/.m2`. That is checked first, before anything is installed
  or started: without the jar nothing can run on the cluster.
- `FlinkCluster`: a JobManager and N TaskManagers in the foreground (`jobmanager.sh
  start-foreground`, `taskmanager.sh start-foreground`), each a process of ours, with a
  config directory of its own (REST on a free loopback port, slots, memory, restart
  strategy, fast heartbeats so a lost TaskManager is noticed in seconds).
- `SparkCluster`: a standalone master and one worker (`spark-class ...Master/Worker`).
- `WorkerPool`: Beam's `worker_pool_main` (the EXTERNAL environment the job's passes use),
  run with this interpreter's directory first on PATH and the repository on PYTHONPATH, so
  the workers it starts (`python -c ...SdkHarness...`) import the project.

Every process is started in a session of its own and stopped by process group id. When a
download is impossible (no Maven Central or PyPI, or an artifact they do not serve)
`unavailable` skips the test with the reason; with CI=true it fails instead, unless the
registry answered that it does not serve the artifact.
"""

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import apache_beam

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("T2T_DATAGEN_CLUSTERS",
                       os.path.join(os.path.expanduser("~"), ".cache", "t2t-datagen-clusters"))
FLINK_VERSION = "1.20.5"
FLINK_MINOR = "1.20"  # Beam's --flink_version
SPARK_VERSION = "3.5.9"
BEAM_VERSION = apache_beam.__version__
FLINK_JOB_SERVER = "beam-runners-flink-%s-job-server" % FLINK_MINOR
SPARK_JOB_SERVER = "beam-runners-spark-3-job-server"


class Unavailable(Exception):
    """Something the clusters need could not be downloaded here."""


NOT_SERVED = ("Could not find artifact", "was not found in", "404")


def unavailable(reason):
    """Skips the calling test with `reason`, or fails it under CI=true (CI must run it),
    except where the registry answered that it does not serve the artifact: then no run
    here can do better, and CI skips too, with that reason in its log (this machine's Maven
    Central serves no `org.apache.beam:beam-runners-*` artifact: README, Runners)."""
    import pytest
    if os.environ.get("CI") == "true" and not any(text in reason for text in NOT_SERVED):
        pytest.fail("CI=true and " + reason)
    pytest.skip(reason)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _cache_lock():
    """One installer at a time (pytest-xdist workers may ask together)."""
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, ".lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _run(command, what, timeout=900):
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        text = re.sub(r"\x1b\[[0-9;]*m|\[ERROR\] ?", "", done.stdout + done.stderr)
        # Maven's reason ("Could not find artifact ... in central (https://...)"), or pip's
        found = re.search(r"Could not (find|transfer) artifact .*?\)", text)
        lines = [found.group(0)] if found else [
            line.strip() for line in text.splitlines() if "error" in line.lower()]
        raise Unavailable("%s failed: %s" % (what, " ".join((lines or ["?"])[:2])[:400]))
    return done


def _pip_install(target, requirements, wheel_first=()):
    """Installs `requirements` --no-deps into `target` (atomically: a temporary directory
    renamed into place), building `wheel_first` into wheels before (an sdist whose plain
    --target install would leave files out)."""
    with _cache_lock():
        if os.path.isdir(target):
            return
        work = tempfile.mkdtemp(prefix=".install-", dir=CACHE)
        try:
            pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
            wheels = []
            if wheel_first:
                _run(pip + ["wheel", "--quiet", "--no-deps", "-w", os.path.join(work, "wheels")]
                     + list(wheel_first), "pip wheel %s" % " ".join(wheel_first))
                wheels = [os.path.join(work, "wheels", n)
                          for n in os.listdir(os.path.join(work, "wheels"))]
            _run(pip + ["install", "--quiet", "--no-deps", "--target", os.path.join(work, "t")]
                 + wheels + list(requirements), "pip install %s" % " ".join(requirements))
            os.rename(os.path.join(work, "t"), target)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def flink_home():
    """FLINK_HOME of Flink FLINK_VERSION's Java distribution, installed once."""
    target = os.path.join(CACHE, "flink-" + FLINK_VERSION)
    _pip_install(target, ["apache-flink==" + FLINK_VERSION],
                 wheel_first=["apache-flink-libraries==" + FLINK_VERSION])
    return os.path.join(target, "pyflink")


def spark_home():
    """SPARK_HOME of Spark SPARK_VERSION, installed once."""
    target = os.path.join(CACHE, "spark-" + SPARK_VERSION)
    _pip_install(target, ["pyspark==" + SPARK_VERSION])
    return os.path.join(target, "pyspark")


_MISSING = {}  # artifact -> Unavailable, so a process asks Maven once


def job_server_jar(artifact):
    """Path of Beam's job server jar `artifact` (this Beam release), fetched with mvn into
    ~/.m2 once."""
    if artifact in _MISSING:
        raise _MISSING[artifact]
    try:
        return _fetch_jar(artifact)
    except Unavailable as e:
        _MISSING[artifact] = e
        raise


def _fetch_jar(artifact):
    m2 = os.path.join(os.path.expanduser("~"), ".m2", "repository")
    path = os.path.join(m2, "org", "apache", "beam", artifact, BEAM_VERSION,
                        "%s-%s.jar" % (artifact, BEAM_VERSION))
    if os.path.exists(path):
        return path
    if shutil.which("mvn") is None:
        raise Unavailable("no mvn to fetch org.apache.beam:%s:%s" % (artifact, BEAM_VERSION))
    with _cache_lock():
        if not os.path.exists(path):
            _run(["mvn", "--batch-mode", "--quiet", "-U", "-Dstyle.color=never", "dependency:get",
                  "-Dartifact=org.apache.beam:%s:%s" % (artifact, BEAM_VERSION),
                  "-Dtransitive=false"],
                 "mvn dependency:get org.apache.beam:%s:%s" % (artifact, BEAM_VERSION), 600)
    return path


class Processes:
    """Processes started in sessions of their own, stopped by process group id."""

    def __init__(self, log_dir):
        self.log_dir = log_dir
        self.procs = []

    def start(self, name, command, env=None, cwd=None):
        log = open(os.path.join(self.log_dir, name + ".log"), "wb")
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                cwd=cwd or self.log_dir, start_new_session=True)
        log.close()
        proc.name = name
        self.procs.append(proc)
        return proc

    def log(self, name, lines=20):
        with open(os.path.join(self.log_dir, name + ".log"), errors="replace") as f:
            return "\n".join(f.read().splitlines()[-lines:])

    @staticmethod
    def stop_one(proc, timeout=20):
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        except ProcessLookupError:
            proc.wait()

    def stop(self):
        for proc in reversed(self.procs):
            self.stop_one(proc)
        self.procs = []


def _get_json(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read().decode("utf-8"))


def wait_for(check, what, procs, seconds=120):
    """Waits until `check()` is true; fails early when one of `procs` has exited."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        for proc in procs:
            if proc.poll() is not None:
                raise RuntimeError("%s exited with %s while waiting for %s"
                                   % (proc.name, proc.returncode, what))
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise TimeoutError("%s: not within %d s" % (what, seconds))


def _flatten(tree, prefix=""):
    """Flink's nested config.yaml as flat `a.b.c: value` keys."""
    flat = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, prefix + key + "."))
        else:
            flat[prefix + key] = value
    return flat


class FlinkCluster:
    """A Flink session cluster: a JobManager and `task_managers` TaskManagers of `slots`
    slots each, REST on `rest_port` of 127.0.0.1. With `restarts`, a fixed-delay restart
    strategy of that many attempts."""

    def __init__(self, work_dir, task_managers=2, slots=2, restarts=3):
        self.home = flink_home()
        self.work_dir = work_dir
        self.task_managers = task_managers
        self.slots = slots
        self.restarts = restarts
        self.rest_port = free_port()
        self.conf_dir = os.path.join(work_dir, "conf")
        self.procs = Processes(work_dir)
        self.task_manager_procs = []

    @property
    def master(self):
        return "127.0.0.1:%d" % self.rest_port

    @property
    def web_ui(self):
        return "http://" + self.master

    def _write_conf(self):
        os.makedirs(self.conf_dir, exist_ok=True)
        for name in os.listdir(os.path.join(self.home, "conf")):
            if name.startswith("log4j") or name.startswith("logback"):
                shutil.copy(os.path.join(self.home, "conf", name), self.conf_dir)
        # Flink's own settings first (among them the JVM options Java 17 needs:
        # env.java.opts.all's --add-opens), flattened, then this cluster's.
        import yaml
        with open(os.path.join(self.home, "conf", "config.yaml")) as f:
            conf = _flatten(yaml.safe_load(f) or {})
        conf.update({
            "jobmanager.rpc.address": "127.0.0.1",
            "jobmanager.rpc.port": free_port(),
            "jobmanager.bind-host": "127.0.0.1",
            "taskmanager.bind-host": "127.0.0.1",
            "taskmanager.host": "127.0.0.1",
            "rest.address": "127.0.0.1",
            "rest.bind-address": "127.0.0.1",
            "rest.port": self.rest_port,
            "jobmanager.memory.process.size": "1024m",
            "taskmanager.memory.process.size": "1280m",
            "taskmanager.numberOfTaskSlots": self.slots,
            "parallelism.default": self.slots,
            "heartbeat.interval": 1000,
            "heartbeat.timeout": 8000,
            "io.tmp.dirs": os.path.join(self.work_dir, "tmp"),
        })
        if self.restarts:
            conf.update({"restart-strategy.type": "fixed-delay",
                         "restart-strategy.fixed-delay.attempts": self.restarts,
                         "restart-strategy.fixed-delay.delay": "1 s"})
        os.makedirs(conf["io.tmp.dirs"], exist_ok=True)
        with open(os.path.join(self.conf_dir, "config.yaml"), "w") as f:
            f.writelines("%s: %s\n" % (key, value if not isinstance(value, list)
                                         else ";".join(map(str, value)))
                         for key, value in conf.items())

    def _env(self):
        return dict(os.environ, FLINK_HOME=self.home, FLINK_CONF_DIR=self.conf_dir,
                    FLINK_LOG_DIR=self.work_dir)

    def start(self, seconds=120):
        self._write_conf()
        bin_dir = os.path.join(self.home, "bin")
        for name in ("bin/jobmanager.sh", "bin/taskmanager.sh", "bin/config.sh"):
            os.chmod(os.path.join(self.home, name), 0o755)
        jm = self.procs.start("jobmanager", [os.path.join(bin_dir, "jobmanager.sh"),
                                             "start-foreground"], env=self._env())
        for i in range(self.task_managers):
            self.start_task_manager(i)
        wait_for(lambda: _get_json(self.web_ui + "/overview")["taskmanagers"]
                 == self.task_managers, "Flink's %d TaskManagers" % self.task_managers,
                 [jm] + self.task_manager_procs, seconds)
        return self

    def start_task_manager(self, i):
        proc = self.procs.start("taskmanager-%d" % i, [
            os.path.join(self.home, "bin", "taskmanager.sh"), "start-foreground"],
            env=self._env())
        self.task_manager_procs.append(proc)
        return proc

    def jobs(self):
        """[{jid, name, state, ...}] of /jobs/overview."""
        return _get_json(self.web_ui + "/jobs/overview")["jobs"]

    def get(self, path):
        return _get_json(self.web_ui + path)

    def stop(self):
        self.procs.stop()


class SparkCluster:
    """A Spark standalone master and one worker of `cores` cores on 127.0.0.1."""

    def __init__(self, work_dir, cores=2, memory="2g"):
        self.home = spark_home()
        self.work_dir = work_dir
        self.cores = cores
        self.memory = memory
        self.port = free_port()
        self.ui_port = free_port()
        self.procs = Processes(work_dir)

    @property
    def master_url(self):
        return "spark://127.0.0.1:%d" % self.port

    def state(self):
        """The master's /json/: workers, active and completed applications."""
        return _get_json("http://127.0.0.1:%d/json/" % self.ui_port)

    def start(self, seconds=120):
        env = dict(os.environ, SPARK_HOME=self.home, SPARK_LOCAL_IP="127.0.0.1",
                   SPARK_LOG_DIR=self.work_dir, SPARK_WORKER_DIR=os.path.join(
                       self.work_dir, "work"))
        spark_class = os.path.join(self.home, "bin", "spark-class")
        for name in ("spark-class", "load-spark-env.sh", "find-spark-home"):
            os.chmod(os.path.join(self.home, "bin", name), 0o755)
        master = self.procs.start("master", [
            spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
            "--port", str(self.port), "--webui-port", str(self.ui_port)], env=env)
        worker = self.procs.start("worker", [
            spark_class, "org.apache.spark.deploy.worker.Worker", "--cores", str(self.cores),
            "--memory", self.memory, "--host", "127.0.0.1", "--webui-port", str(free_port()),
            self.master_url], env=env)
        wait_for(lambda: [w for w in self.state()["workers"] if w["state"] == "ALIVE"],
                 "Spark's worker", [master, worker], seconds)
        return self

    def stop(self):
        self.procs.stop()


class WorkerPool:
    """Beam's stock worker pool (`worker_pool_main`) on a free loopback port: the EXTERNAL
    environment's address is `address`."""

    def __init__(self, work_dir):
        self.port = free_port()
        self.procs = Processes(work_dir)

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def start(self, seconds=60):
        env = dict(os.environ, PYTHONPATH=REPO)
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        proc = self.procs.start("worker-pool", [
            sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main",
            "--service_port", str(self.port)], env=env, cwd=REPO)

        def answers():
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        wait_for(answers, "Beam's worker pool", [proc], seconds)
        return self

    def sdk_workers(self):
        """PIDs of the running SDK workers this pool started (its children
        `python -c ...SdkHarness(...)`; never another pool's)."""
        pool = self.procs.procs[0].pid
        pids = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/stat" % pid) as f:
                    state, ppid = f.read().rsplit(")", 1)[1].split()[:2]
                if int(ppid) != pool or state == "Z":
                    continue
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    if b"SdkHarness(" in f.read():
                        pids.append(int(pid))
            except (OSError, ValueError):
                pass
        return pids

    def stop(self):
        # The pool's workers are its children, in its process group.
        self.procs.stop()


@contextlib.contextmanager
def running_with_pool(cluster):
    """`cluster` (FlinkCluster or SparkCluster) started, with Beam's worker pool beside it:
    yields the pool; both are stopped on the way out."""
    pool = WorkerPool(cluster.work_dir)
    try:
        cluster.start()
        pool.start()
        yield pool
    finally:
        pool.stop()
        cluster.stop()


def runner_flags(cluster, jar, pool, parallelism=None):
    """The job's runner flags for `cluster` with Beam's job server `jar` and the EXTERNAL
    environment of `pool` (Flink: `parallelism`, default its slots)."""
    if isinstance(cluster, FlinkCluster):
        runner = ["--runner", "FlinkRunner", "--flink_master", cluster.master,
                  "--flink_version", FLINK_MINOR, "--flink_job_server_jar", jar,
                  "--parallelism", str(parallelism or cluster.slots)]
    else:
        runner = ["--runner", "SparkRunner", "--spark_master_url", cluster.master_url,
                  "--spark_job_server_jar", jar]
    return runner + ["--environment_type", "EXTERNAL", "--environment_config", pool.address]


def run_job_on_local_cluster(kind, job_args):
    """Starts a local `kind` cluster ("flink" or "spark") and Beam's worker pool as the tests
    do, runs `python -m pipeline.datagen` with `job_args` and the runner's flags on it, and
    stops everything it started (also on Ctrl-C); returns the job's exit status. Used by
    examples/flink/run_on_local_cluster.sh and benchmarks/bench_runners.py."""
    work = tempfile.mkdtemp(prefix="t2t-datagen-%s-" % kind)
    try:
        if kind == "flink":
            jar = job_server_jar(FLINK_JOB_SERVER)
            cluster = FlinkCluster(work)
        else:
            jar = job_server_jar(SPARK_JOB_SERVER)
            cluster = SparkCluster(work)
    except Unavailable as e:
        print("cannot run on %s here: %s" % (kind, e), file=sys.stderr)
        return 3
    try:
        start = time.time()
        with running_with_pool(cluster) as pool:
            print("%s cluster and Beam's worker pool up in %.1f s" % (kind, time.time() - start),
                  file=sys.stderr)
            if kind == "flink":
                print("Flink web UI: %s" % cluster.web_ui, file=sys.stderr)
            else:
                print("Spark master UI: http://127.0.0.1:%d" % cluster.ui_port, file=sys.stderr)
            env = dict(os.environ, PYTHONPATH=REPO)
            job = subprocess.Popen([sys.executable, "-m", "pipeline.datagen"] + list(job_args)
                                   + runner_flags(cluster, jar, pool), cwd=REPO, env=env)
            try:
                return job.wait()
            except KeyboardInterrupt:  # the job stops cleanly (exit 130) before the cluster
                job.send_signal(signal.SIGINT)
                return job.wait()
    except KeyboardInterrupt:  # while the cluster started
        return 130
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    # python tests/clusters.py flink|spark JOB_FLAGS...
    sys.exit(run_job_on_local_cluster(sys.argv[1], sys.argv[2:]))
