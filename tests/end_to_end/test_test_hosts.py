"""The hosts the multi-host tests make (tests/network_hosts.py), checked on their own: what a
host sees and reaches, and that nothing of them outlives a test run, also one that was
killed. Skipped where hosts cannot be made (failed under CI=true)."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request

import psutil
import pytest

from multihost_cluster import hidden_dirs, image_dirs
from network_hosts import PREFIX, Network, _running, require_hosts, sweep_leftovers
from repo_paths import REPO_ROOT, TESTS_DIR

pytestmark = pytest.mark.slow


def _ours(tag):
    """Network namespaces and links whose names hold `tag` (a Network's)."""
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in netns.splitlines() if tag in line] + [
        line.split(":")[1].strip() for line in links.splitlines() if tag in line]


@pytest.fixture
def network(tmp_path):
    require_hosts()
    net = Network(tmp_path, hide=hidden_dirs(str(tmp_path)), keep=image_dirs())
    net.create()
    try:
        yield net
    finally:
        net.close()
    assert _ours(net.tag_netns) == [] and _ours(net.tag_link) == []


def _ends(pid, seconds=120):
    """Whether process `pid` ends within `seconds`."""
    deadline = time.time() + seconds
    while _running(pid) and time.time() < deadline:
        time.sleep(0.1)
    return not _running(pid)


def _run_on(host, script):
    """Output of a Python `script` run on `host` with the image's interpreter."""
    proc = host.run("probe", [sys.executable, "-c", script])
    assert proc.wait(120) == 0, host.network.log_tail(host.name + "-probe")
    with open(host.network.log_path(host.name + "-probe")) as f:
        return f.read().split()


def _leading_to(kept, directory):
    """{path under `directory`: its entries} that a host's `directory` holds when it holds
    nothing but the way to the `kept` directories that lie under it (each kept one itself
    left out: it is the image): a checkout under /tmp is bound back in at its own path."""
    def under(path, outer):
        return path.startswith(outer.rstrip("/") + "/")

    way = {}
    for path in kept:
        if not under(path, directory) or any(under(path, outer) for outer in kept):
            continue  # not under it, or inside another kept directory (the image's venv)
        parts = path[len(directory.rstrip("/")) + 1:].split("/")
        for depth in range(len(parts)):
            at = "/".join([directory.rstrip("/")] + parts[:depth])
            way.setdefault(at, set()).add(parts[depth])
    return {at: sorted(names) for at, names in way.items()}


def test_leading_to_is_the_way_to_kept_directories_only():
    assert _leading_to(["/work/repo", "/usr"], "/tmp") == {}
    assert _leading_to(["/tmp/a/repo", "/tmp/a/repo/.venv", "/tmp/b", "/usr"], "/tmp") == {
        "/tmp": ["a", "b"], "/tmp/a": ["repo"]}


def test_a_host_sees_the_image_read_only_and_nothing_of_the_drivers_disk(network, tmp_path):
    """The host's /tmp holds nothing of the driver's: nothing at all, or, for a checkout
    under /tmp (issue 50, item 18), only the directories on the way to the image's, which
    is bound back in read-only at its own path."""
    mine = tmp_path / "drivers-file"
    mine.write_text("only here")
    kept = [os.path.realpath(k) for k in image_dirs()]
    host = network.add_host("h1", "h1", 11)
    seen = _run_on(host, textwrap.dedent("""
        import json, os, socket
        kept = %r
        way = {}
        for at, dirs, files in os.walk("/tmp"):
            if at in kept:
                dirs[:] = []  # the image itself: read-only, checked below
                continue
            way[at] = sorted(dirs + files)
        print(os.path.exists(%r), json.dumps(way, separators=(",", ":"), sort_keys=True),
              socket.gethostname())
        try:
            open(os.path.join(%r, "x"), "w")
            print("writable")
        except OSError:
            print("read-only")
        import pipeline.datagen, apache_beam
        print(pipeline.datagen.__file__.startswith(%r))
    """ % (kept, str(mine), REPO_ROOT, REPO_ROOT)))
    way = {"/tmp": []}
    way.update(_leading_to(kept, "/tmp"))
    assert seen == ["False", json.dumps(way, separators=(",", ":"), sort_keys=True), "h1",
                    "read-only", "True"], (seen, kept)


def test_hosts_reach_each_other_and_the_driver_reaches_them(network):
    server = network.add_host("srv", "sv", 2)
    client = network.add_host("cli", "cl", 3)
    proc = server.run("http", [sys.executable, "-m", "http.server", "--bind", server.ip, "8000"])
    url = "http://%s:8000/" % server.ip
    seen = _run_on(client, textwrap.dedent("""
        import time, urllib.request
        for _ in range(600):
            try:
                print(urllib.request.urlopen(%r, timeout=5).status)
                break
            except OSError:
                time.sleep(0.1)
    """ % url))
    assert seen == ["200"]
    assert urllib.request.urlopen(url, timeout=30).status == 200
    server.kill()  # every process of the host at once
    assert proc.poll() is not None and server.pids() == []


def test_what_a_killed_run_left_is_removed_by_the_next(tmp_path):
    """A test process killed with -9 leaves its namespaces, links and host processes; the
    next Network's `create` (`sweep_leftovers`) removes them, and nothing of a live run's."""
    require_hosts()
    script = textwrap.dedent("""
        import os, signal, sys, time
        sys.path.insert(0, %r)
        from network_hosts import Network
        net = Network(%r)
        net.create()
        host = net.add_host("h1", "h1", 11)
        host.run("sleep", ["sleep", "600"])
        print(net.tag_netns, net.tag_link, host.init_pid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """ % (TESTS_DIR, str(tmp_path)))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    tag_netns, tag_link, init_pid = done.stdout.split()
    assert _ours(tag_netns) and _ours(tag_link), done.stderr
    assert _running(int(init_pid))
    removed = sweep_leftovers()
    assert tag_netns + "-h1" in removed and _ours(tag_netns) == [] and _ours(tag_link) == []
    assert _ends(int(init_pid))  # its host's pid 1 (the kernel ends it once all else is)
    assert all(name.startswith((PREFIX, "tmh")) for name in removed)


def test_a_host_whose_launcher_stopped_with_its_process_is_killed_at_once(network):
    """A process a host runs is the child of the `nsenter` that started it (outside the
    host's PID namespace). nsenter stops itself when its child stops (SIGSTOP) and continues
    it only when continued itself, so a test that stops a host's processes, signals them and
    continues them (tests/end_to_end/test_multihost_resume.py's SIGTERM) can leave nsenter
    stopped: its child, once it has ended, is a zombie nobody reaps, and the host's pid 1
    cannot end until it is (the kernel waits for every process of the namespace). `kill`
    then waited out its own timeouts, twice 60 s a host, silently. It kills the launchers
    with pid 1: the host is gone when it returns. The guard below is far above what a kill
    takes and below those timeouts, so a silent wait fails the test."""
    host = network.add_host("h1", "h1", 11)
    launcher = host.run("sleep", ["sleep", "600"])
    wait = time.time() + 120
    while time.time() < wait and not [p for p in host.pids() if psutil.Process(p).name()
                                      == "sleep"]:
        time.sleep(0.1)
    [child] = [p for p in host.pids() if psutil.Process(p).name() == "sleep"]
    os.kill(child, signal.SIGSTOP)
    while time.time() < wait and psutil.Process(launcher.pid).status() != psutil.STATUS_STOPPED:
        time.sleep(0.1)
    assert psutil.Process(launcher.pid).status() == psutil.STATUS_STOPPED  # as nsenter does
    os.kill(child, signal.SIGCONT)  # the child alone: its launcher stays stopped
    os.kill(child, signal.SIGTERM)
    assert _ends(child)  # a zombie of the stopped launcher
    assert psutil.Process(launcher.pid).status() == psutil.STATUS_STOPPED
    done = threading.Event()
    killer = threading.Thread(target=lambda: (host.kill(), done.set()), daemon=True)
    killer.start()
    killer.join(45)
    assert done.is_set(), "Host.kill waited on the stopped launcher"
    assert launcher.poll() is not None and host.pids() == []
