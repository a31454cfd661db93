"""Hosts made on this machine for the tests that need several: each a network namespace on a
bridge in a private subnet the test creates (10.231.N.0/24, N free on this machine), with
its own PID, mount and UTS namespaces. Traffic goes only between these hosts and the root
namespace (the bridge's address, .1): no host has a route anywhere else.

- A `Host`'s first process is tests/host_init.py (pid 1 of its PID namespace), which hides
  what the host must not see (tmpfs over /tmp, $HOME, the driver's directories: `hide`) and
  binds back, read-only, the installed environment every host runs from (`keep`: the
  project, its venv and the Python it was made from), as a cluster image would be.
  `Host.run` starts a process inside the host (`nsenter`). `Host.kill` SIGKILLs that first
  process (and each nsenter), and the kernel kills every process of the host at once, a
  host lost whole;
  `Host.start` boots it again (a fresh /tmp, as after a reboot). `link_down`/`link_up` cut
  and restore its cable (the bridge side of its veth pair).
- Names carry `PREFIX`, the owning process id and a letter per network of that process
  (network namespaces `t2tmh-PID-a-w1`, links `tmhPIDaw1`, the bridge `tmhPIDabr`), so
  `sweep_leftovers` can remove what a killed earlier run left (its owner is gone) without
  touching another live run's; `Network.close` removes every namespace, link and process
  it made, by name and pid, also after a failed test.
- `hosts_unavailable()`: why hosts cannot be made here (not root, no `ip`/`unshare`/
  `nsenter`, namespaces refused), or None; `require_hosts()` skips a test with that reason,
  or fails it under CI=true (`require(reason)`: the same for any missing prerequisite).
"""

import contextlib
import fcntl
import itertools
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time

import psutil

PREFIX = "t2tmh"
LINK_PREFIX = "tmh"
TESTS = os.path.dirname(os.path.abspath(__file__))
HOST_INIT = os.path.join(TESTS, "host_init.py")
SUBNETS = "10.231.%d"  # N in 2..254, the first one free here
LOCK = "/run/lock/t2t-multihost.lock"
_letters = itertools.cycle("abcdefghijklmnopqrstuvwxyz")


def _ip(*args, check=True):
    done = subprocess.run(["ip"] + list(args), capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), done.stderr.strip()))
    return done.stdout


def hosts_unavailable():
    """Why test hosts cannot be made here, or None."""
    if not sys.platform.startswith("linux"):
        return "test hosts need Linux network namespaces"
    if os.geteuid() != 0:
        return "test hosts need root (network namespaces, bridges, mounts)"
    for tool in ("ip", "unshare", "nsenter"):
        if shutil.which(tool) is None:
            return "test hosts need `%s` (iproute2, util-linux)" % tool
    probe = "%s-%d-probe" % (PREFIX, os.getpid())
    try:
        _ip("netns", "add", probe)
        done = subprocess.run(["ip", "netns", "exec", probe, "unshare", "--mount", "--uts",
                               "--pid", "--fork", "--mount-proc", "true"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            return "cannot make namespaces here: unshare: %s" % done.stderr.strip()
    except RuntimeError as e:
        return "cannot make network namespaces here: %s" % e
    finally:
        _ip("netns", "del", probe, check=False)
    return None


def require_hosts():
    """Skips the calling test when hosts cannot be made here; fails it under CI=true."""
    require(hosts_unavailable())


def require(reason):
    """Skips the calling test for `reason` (what is missing here; None: nothing), or fails
    it under CI=true (CI must run it)."""
    import pytest
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true and " + reason)
        pytest.skip(reason)


def owner_gone(pid):
    """Whether the process that made a namespace or link named after `pid` is gone (a pid
    since reused by a process that is not Python counts as gone)."""
    try:
        return "python" not in psutil.Process(pid).name().lower()
    except psutil.Error:
        return True


def _kill_netns_processes(netns, seconds=30):
    """SIGKILLs every process in `netns`; returns once none is left running."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        pids = [int(p) for p in _ip("netns", "pids", netns, check=False).split()]
        if not [pid for pid in pids if _running(pid)]:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def _running(pid):
    """Whether `pid` is a process that has not ended (a zombie has)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def sweep_leftovers():
    """Removes the namespaces and links of earlier runs whose process is gone (a test run
    killed before it could clean up); returns their names."""
    removed = []
    for line in _ip("netns", "list", check=False).splitlines():
        netns = line.split()[0] if line.strip() else ""
        found = re.match(r"%s-(\d+)-" % PREFIX, netns)
        if found and owner_gone(int(found.group(1))):
            _kill_netns_processes(netns)
            _ip("netns", "del", netns, check=False)
            removed.append(netns)
    for line in _ip("-o", "link", "show", check=False).splitlines():
        found = re.match(r"\d+: (%s(\d+)[a-z][a-z0-9]+)[@:]" % LINK_PREFIX, line)
        if found and owner_gone(int(found.group(2))):
            _ip("link", "del", found.group(1), check=False)
            removed.append(found.group(1))
    return removed


def _free_subnet():
    """The first 10.231.N of this machine's that no interface has an address in."""
    used = set(re.findall(r"inet 10\.231\.(\d+)\.", _ip("-4", "-o", "addr", "show")))
    for n in range(2, 255):
        if str(n) not in used:
            return SUBNETS % n
    raise RuntimeError("no free 10.231.N.0/24 subnet on this machine")


class Host:
    """One host of a `Network`: `name`, `ip`, `netns`, `link` (its cable's bridge side)."""

    def __init__(self, network, name, code, number, hide, keep, seed):
        self.network = network
        self.name = name
        self.ip = "%s.%d" % (network.subnet, number)
        self.netns = "%s-%s" % (network.tag_netns, name)
        self.link = "%s%s" % (network.tag_link, code)
        self.hide, self.keep, self.seed = list(hide), list(keep), list(seed)
        self.init = None  # the `unshare` process whose child is the host's pid 1
        self.init_pid = None
        self.procs = []

    def _plug(self):
        _ip("netns", "add", self.netns)
        _ip("link", "add", self.link, "type", "veth", "peer", "name", "eth0", "netns",
            self.netns)
        _ip("link", "set", self.link, "master", self.network.bridge, "up")
        for args in (["addr", "add", self.ip + "/24", "dev", "eth0"],
                     ["link", "set", "eth0", "up"], ["link", "set", "lo", "up"]):
            _ip("-n", self.netns, *args)

    def start(self, seconds=60):
        """Boots the host: a new pid 1 with a fresh view of the disk."""
        argv = ["ip", "netns", "exec", self.netns, "unshare", "--mount", "--uts", "--pid",
                "--fork", "--kill-child", "--mount-proc", "--propagation", "private",
                sys.executable, HOST_INIT, "--hostname", self.name]
        for flag, values in (("--hide", self.hide), ("--keep", self.keep),
                             ("--seed", ["%s:%s" % s for s in self.seed])):
            for value in values:
                argv += [flag, value]
        log = open(self.network.log_path(self.name + "-init"), "ab")
        self.init = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log,
                                     start_new_session=True)
        log.close()
        deadline = time.time() + seconds
        # poll, not select: a test process may hold over 1024 descriptors by then
        waiting = select.poll()
        waiting.register(self.init.stdout, select.POLLIN | select.POLLHUP)
        while time.time() < deadline:
            if waiting.poll(500):
                line = self.init.stdout.readline()
                if line.strip() == b"ready":
                    break
            if self.init.poll() is not None:
                raise RuntimeError("host %s did not boot: %s" % (
                    self.name, self.network.log_tail(self.name + "-init")))
        else:
            raise RuntimeError("host %s did not boot within %d s" % (self.name, seconds))
        self.init.stdout.close()
        self.init_pid = psutil.Process(self.init.pid).children()[0].pid
        return self

    @property
    def alive(self):
        return self.init is not None and self.init.poll() is None

    def run(self, label, argv, env=None):
        """Starts `argv` inside the host (its output in `label`'s log); returns the Popen of
        the `nsenter` that waits for it."""
        assert self.alive, "host %s is down" % self.name
        log = open(self.network.log_path("%s-%s" % (self.name, label)), "ab")
        proc = subprocess.Popen(
            ["nsenter", "--target", str(self.init_pid), "--net", "--mount", "--uts", "--pid",
             "--wd=/", "--"] + list(argv), stdout=log, stderr=subprocess.STDOUT, env=env,
            start_new_session=True)
        log.close()
        proc.label = label
        self.procs.append(proc)
        return proc

    def pids(self):
        """Pids (as the machine sees them) of every running process in the host's network
        namespace."""
        return [int(p) for p in _ip("netns", "pids", self.netns, check=False).split()
                if _running(int(p))]

    def kill(self, seconds=60):
        """Every process of the host killed at once (SIGKILL to its pid 1: the kernel kills
        the rest of its PID namespace), with the `nsenter` of each `run` (outside that
        namespace); returns once none is left, raises if one is after `seconds`.

        The launchers die too because nsenter stops itself when its child stops (SIGSTOP)
        and stays stopped when the child alone is continued: the child, once ended, is then
        a zombie only that nsenter may reap, and pid 1 cannot end before it is reaped (the
        kernel waits for every process of the namespace). Waiting for them here took twice
        `seconds` a host after test_multihost_resume.py's SIGTERM, silently."""
        for pid in [self.init_pid] + [proc.pid for proc in self.procs]:
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for proc in [self.init] + self.procs:
            if proc is not None:
                try:
                    proc.wait(seconds)
                except subprocess.TimeoutExpired:
                    raise RuntimeError("host %s: %s still runs %d s after SIGKILL" % (
                        self.name, " ".join(proc.args[:6]), seconds)) from None
        _kill_netns_processes(self.netns, seconds)
        self.procs, self.init, self.init_pid = [], None, None

    def link_down(self):
        _ip("link", "set", self.link, "down")

    def link_up(self):
        _ip("link", "set", self.link, "up")

    def _unplug(self):
        self.kill()
        _ip("netns", "del", self.netns, check=False)
        _ip("link", "del", self.link, check=False)


class Network:
    """A bridge in a free private subnet, and the hosts on it; the root namespace is .1.

    `work_dir`: where each host's processes log (`log_path`). `hide`, `keep`, `seed`: every
    host's view (tests/host_init.py)."""

    def __init__(self, work_dir, hide=(), keep=(), seed=()):
        self.work_dir = str(work_dir)
        self.view = (list(hide), list(keep), list(seed))
        letter = next(_letters)
        self.tag_netns = "%s-%d-%s" % (PREFIX, os.getpid(), letter)
        self.tag_link = "%s%d%s" % (LINK_PREFIX, os.getpid(), letter)
        self.bridge = self.tag_link + "br"
        self.hosts = {}
        self.subnet = None

    def log_path(self, name):
        return os.path.join(self.work_dir, name + ".log")

    def log_tail(self, name, lines=20):
        try:
            with open(self.log_path(name), errors="replace") as f:
                return "\n".join(f.read().splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def create(self):
        sweep_leftovers()
        os.makedirs(os.path.dirname(LOCK), exist_ok=True)
        with open(LOCK, "w") as lock:  # one subnet per network, also across processes
            fcntl.flock(lock, fcntl.LOCK_EX)
            self.subnet = _free_subnet()
            _ip("link", "add", self.bridge, "type", "bridge")
            _ip("addr", "add", self.subnet + ".1/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        return self

    def add_host(self, name, code, number):
        """A new host `name` at .`number` (its link named with the short `code`), booted."""
        hide, keep, seed = self.view
        host = self.hosts[name] = Host(self, name, code, number, hide, keep, seed)
        host._plug()
        return host.start()

    def close(self):
        """Kills every host's processes, removes its namespace and link, then the bridge."""
        for host in self.hosts.values():
            with contextlib.suppress(Exception):
                host._unplug()
        _ip("link", "del", self.bridge, check=False)
