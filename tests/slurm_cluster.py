"""A real SLURM cluster on this machine for the test of README's dask-jobqueue recipe: the
controller in the root namespaces and two compute nodes, each a host of a
tests/network_hosts.py network (network, mount, PID and UTS namespaces of its own):

    ctl  10.231.N.1   slurmctld and munged; the test, sbatch/squeue/scancel, the recipe
    n1   10.231.N.11  slurmd (node n1: its UTS hostname) and munged
    n2   10.231.N.12  the same

Debian's slurmctld, slurmd, slurm-client and munge (run_tests.sh installs them as root).
There is no systemd: every daemon runs in the foreground (`-D`, `-F`) as a process of ours
with a private `SLURM_CONF`, nothing in /etc, and is stopped by pid (the nodes' with their
host: SIGKILL to its pid 1 ends every process of it, batch jobs included).

Why each setting is as it is (each found necessary on this machine):
- munge: one key (`mungekey`) for every daemon; each host runs its own munged on the same
  socket path (`socket`) in its own /tmp, in a directory of mode 0711 (munged refuses 0700).
- slurm.conf (`_config`): root as SlurmUser, no cgroup plugins (proctrack/linuxproc,
  task/none), no accounting, private ports and directories. A node has `CPUs=2` (with
  `SlurmdParameters=config_overrides`, whatever the machine has) and enough RealMemory for
  the recipe's `memory=`: one batch job of the recipe's `cores=2` fills a node, so two jobs
  run on two hosts.
- a node's host mounts a cgroup-v1 hierarchy first (`CGROUP_MOUNT`): `ip netns exec`
  remounted /sys, and slurmd stops when it finds no cgroup file system.
- `shared`: a directory every host sees read-write at the same path (/srv/t2tslurm-...),
  as a cluster's shared file system: the recipe's log directory and the job's output. The
  private directory (`private`: config, key, spools) is under /tmp, which each host has of
  its own (a copy of the config and key is seeded into it when it boots).

Names carry `PREFIX`, this process's id and the network's letter, so `sweep_leftovers`
removes what a killed earlier run left (its daemons here and its directories) without
touching a live run's; the network sweeps its own hosts. `slurm_unavailable()` says what
is missing here, or None.
"""

import contextlib
import glob
import importlib.util
import itertools
import os
import re
import shutil
import socket
import subprocess

import psutil

from clusters import Processes, free_port, wait_for
from multihost_cluster import hidden_dirs, image_dirs
from network_hosts import Network, hosts_unavailable, owner_gone, require

PREFIX = "t2tslurm"
NODES = {"n1": ("n1", 11), "n2": ("n2", 12)}  # name: (link code, address)
TOOLS = {"slurmctld": "slurmctld", "slurmd": "slurmd", "sbatch": "slurm-client",
         "squeue": "slurm-client", "sinfo": "slurm-client", "munged": "munge",
         "mungekey": "munge"}
CGROUP_MOUNT = ("mount -t tmpfs cgroup /sys/fs/cgroup && mkdir /sys/fs/cgroup/systemd && "
                "mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd")
SHARED_ROOT = "/srv"
_numbers = itertools.count()


def slurm_unavailable():
    """What this machine lacks to run the SLURM test, or None."""
    reason = hosts_unavailable()
    if reason is not None:
        return reason
    missing = sorted({package for tool, package in TOOLS.items() if not _which(tool)})
    if missing:
        return ("SLURM needs Debian's %s (run_tests.sh installs them as root with apt-get)"
                % ", ".join(missing))
    if importlib.util.find_spec("dask_jobqueue") is None:
        return "SLURM test needs dask-jobqueue (requirements-test.txt)"
    return None


def require_slurm():
    """Skips the calling test when SLURM cannot run here; fails it under CI=true."""
    require(slurm_unavailable())


def _which(tool):
    return shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin")


def sweep_leftovers():
    """Kills the daemons and removes the directories of earlier runs whose process is gone;
    returns what it removed."""
    removed = []
    pattern = re.compile(r"%s-(\d+)-" % PREFIX)
    for proc in psutil.process_iter(["pid", "cmdline"]):
        found = pattern.search(" ".join(proc.info["cmdline"] or []))
        if found and owner_gone(int(found.group(1))):
            with contextlib.suppress(psutil.Error):
                proc.kill()
                removed.append(proc.info["pid"])
    for path in glob.glob("/tmp/%s-*" % PREFIX) + glob.glob("%s/%s-*" % (SHARED_ROOT, PREFIX)):
        found = pattern.search(path + "-")
        if found and owner_gone(int(found.group(1))):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


class SlurmCluster:
    """The controller and the nodes above, started by `start()` and removed by `stop()`;
    `work_dir` holds every daemon's log. `seed`: more (source, destination) directories
    copied into each host (a warm compile cache)."""

    def __init__(self, work_dir, seed=()):
        self.work_dir = str(work_dir)
        self.network = None
        self.seed = list(seed)
        self.procs = Processes(self.work_dir)
        self.hosts = {}
        self.private = self.shared = None

    # -- paths and settings ------------------------------------------------------------
    @property
    def config(self):
        return os.path.join(self.private, "etc", "slurm.conf")

    @property
    def key(self):
        return os.path.join(self.private, "etc", "munge.key")

    @property
    def socket(self):
        return os.path.join(self.private, "munge", "munge.sock")

    @property
    def address(self):
        """The controller's address on the hosts' network (the bridge's)."""
        return self.network.subnet + ".1"

    def env(self, **extra):
        """This process's environment with the cluster's SLURM_CONF (sbatch passes the
        submitting environment on to a batch job)."""
        return dict(os.environ, SLURM_CONF=self.config, **extra)

    def _config(self):
        controller = socket.gethostname().split(".")[0]
        nodes = "\n".join(
            "NodeName=%s NodeAddr=%s.%d CPUs=2 RealMemory=16000 State=UNKNOWN"
            % (name, self.network.subnet, number) for name, (_, number) in NODES.items())
        return "\n".join([
            "ClusterName=t2ttest",
            "SlurmctldHost=%s(%s)" % (controller, self.address),
            "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge",
            "AuthInfo=socket=%s" % self.socket,
            "SlurmctldPort=%d" % free_port(), "SlurmdPort=%d" % free_port(),
            "StateSaveLocation=%s" % os.path.join(self.private, "state"),
            "SlurmdSpoolDir=%s" % os.path.join(self.private, "spool"),
            "SlurmctldPidFile=%s" % os.path.join(self.private, "slurmctld.pid"),
            "SlurmdPidFile=%s" % os.path.join(self.private, "slurmd.pid"),
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
            "SlurmdParameters=config_overrides", "ReturnToService=2", "MpiDefault=none",
            nodes,
            "PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""])

    def _write_private(self):
        for sub in ("etc", "state", "spool", "munge"):
            os.makedirs(os.path.join(self.private, sub), exist_ok=True)
        os.chmod(os.path.join(self.private, "munge"), 0o711)
        subprocess.run([_which("mungekey"), "--create", "--keyfile=" + self.key], check=True,
                       capture_output=True)
        with open(self.config, "w") as f:
            f.write(self._config())

    # -- daemons ------------------------------------------------------------------------
    def _munged(self):
        run = os.path.dirname(self.socket)
        return [_which("munged"), "-F", "--key-file=" + self.key, "--socket=" + self.socket,
                "--log-file=" + os.path.join(run, "munged.log"),
                "--pid-file=" + os.path.join(run, "munged.pid"),
                "--seed-file=" + os.path.join(run, "munged.seed")]

    def _node_setup(self):
        """The shell line a node's host runs before its daemons: the cgroup mount, the
        munge socket's directory (mode 0711) and the spool."""
        run = os.path.dirname(self.socket)
        return "%s && mkdir -p %s %s && chmod 711 %s" % (
            CGROUP_MOUNT, run, os.path.join(self.private, "spool"), run)

    def _start_node(self, name, code, number):
        host = self.hosts[name] = self.network.add_host(name, code, number)
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SLURM_CONF": self.config}
        setup = host.run("setup", ["sh", "-c", self._node_setup()], env=env)
        if setup.wait(120) != 0:
            raise RuntimeError("host %s: %s" % (name, self.network.log_tail(name + "-setup")))
        munged = host.run("munged", self._munged(), env=env)
        munged.name = name + "/munged"
        wait_for(lambda: self._socket_in(host), "munged on host " + name, [munged])
        slurmd = host.run("slurmd", [_which("slurmd"), "-D", "-N", name, "-f", self.config],
                          env=env)
        slurmd.name = name + "/slurmd"

    def _socket_in(self, host):
        """Whether `host`'s munged has made its socket (seen through its pid 1's root)."""
        return os.path.exists("/proc/%d/root%s" % (host.init_pid, self.socket))

    def start(self, seconds=300):
        sweep_leftovers()
        tag = "%s-%d-%d" % (PREFIX, os.getpid(), next(_numbers))
        self.private = os.path.join("/tmp", tag)
        self.shared = os.path.join(SHARED_ROOT, tag)
        etc = os.path.join(self.private, "etc")
        self.network = Network(self.work_dir, hide=hidden_dirs(self.work_dir),
                               keep=image_dirs(), seed=[(etc, etc)] + self.seed)
        try:
            os.makedirs(self.shared)
            self.network.create()
            self._write_private()
            env = self.env(PATH="/usr/sbin:" + os.environ.get("PATH", ""))
            munged = self.procs.start("munged", self._munged(), env=env)
            wait_for(lambda: os.path.exists(self.socket), "munged", [munged])
            self.procs.start("slurmctld", [_which("slurmctld"), "-D", "-i", "-f", self.config],
                             env=env)
            for name, (code, number) in NODES.items():
                self._start_node(name, code, number)
            wait_for(self._nodes_idle, "SLURM nodes %s idle in sinfo" % ", ".join(NODES),
                     self._procs(), seconds)
        except BaseException:
            self.stop()
            raise
        return self

    def _procs(self):
        return self.procs.procs + [p for host in self.hosts.values() for p in host.procs
                                   if p.label != "setup"]

    def _slurm(self, *argv):
        done = subprocess.run([_which(argv[0])] + list(argv[1:]), capture_output=True,
                              text=True, env=self.env(), timeout=60)
        if done.returncode != 0:
            raise OSError("%s: %s" % (" ".join(argv), done.stderr.strip()))
        return done.stdout

    def node_states(self):
        """{node name: its state as sinfo shows it (idle, alloc, down, ...)}."""
        return dict(line.split() for line in
                    self._slurm("sinfo", "--noheader", "--Node", "-o", "%N %t").splitlines())

    def _nodes_idle(self):
        return self.node_states() == {name: "idle" for name in NODES}

    def queue(self):
        """The job ids squeue lists (pending, running or completing)."""
        return self._slurm("squeue", "--noheader", "-o", "%i").split()

    def wait_until_queue_empty(self, seconds=300):
        wait_for(lambda: self.queue() == [], "an empty squeue", self._procs(), seconds)

    def ip(self, name):
        return self.hosts[name].ip

    def stop(self):
        """Every host and daemon stopped by pid, every namespace, link and directory
        removed."""
        if self.network is not None:
            self.network.close()
        self.procs.stop()
        for path in (self.private, self.shared):
            if path:
                shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def running_slurm(work_dir, seed=()):
    """A started SlurmCluster, stopped (every daemon, host, link and directory) after."""
    cluster = SlurmCluster(work_dir, seed).start()
    try:
        yield cluster
    finally:
        cluster.stop()

