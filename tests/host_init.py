"""The first process of a test host (tests/network_hosts.py): pid 1 of the host's own PID
namespace, in its own mount and UTS namespaces, inside its network namespace.

It makes the host's view of the disk, then waits, reaping orphans, until it is killed; when
it dies the kernel kills every process of the host at once (a host lost whole).

    host_init.py --hostname w2 --hide /tmp --hide /root --keep /root/.pyenv/versions/3.11.7
                 --keep /work/repo --seed /tmp/image-cache:/root/.cache/numba

- `--hide DIR`: an empty tmpfs over DIR: the host sees nothing of the machine's DIR (the
  driver's /tmp, work and output directories) and writes into memory of its own.
- `--keep DIR`: DIR as the machine has it, read-only, also when it lies under a hidden
  directory: the installed environment, as a cluster image would hold it. It is opened
  before anything is hidden and bound back from that descriptor.
- `--seed SRC:DEST`: SRC (opened before hiding) copied to DEST in the host's own tmpfs: what
  an image would have baked in (a warm compile cache), not a disk the hosts share.

Prints `ready` once the view is made. Everything is imported first: once /tmp or $HOME is
hidden, a lazy import could not find its file.
"""

import argparse
import ctypes
import os
import shutil
import signal
import socket
import sys

MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC = 1, 32, 4096, 16384
_libc = ctypes.CDLL(None, use_errno=True)


def _mount(source, target, fstype, flags, data=None):
    def b(text):
        return None if text is None else text.encode()
    if _libc.mount(b(source), b(target), b(fstype), flags, b(data)) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, "mount %s on %s: %s" % (source, target, os.strerror(errno)))


def _under(path, directory):
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def make_view(hide, keep, seed):
    keep = sorted({os.path.realpath(k) for k in keep if os.path.isdir(k)})
    kept = {k: os.open(k, os.O_PATH | os.O_DIRECTORY) for k in keep}
    seeds = [(os.open(src, os.O_RDONLY | os.O_DIRECTORY), dest) for src, dest in seed
             if os.path.isdir(src)]
    hidden = []
    for directory in sorted({os.path.realpath(h) for h in hide if os.path.isdir(h)}, key=len):
        if any(_under(directory, outer) for outer in hidden):
            continue  # gone with the directory that holds it
        hidden.append(directory)
        mode = "1777" if directory in ("/tmp", "/var/tmp", "/dev/shm") else "755"
        _mount("tmpfs", directory, "tmpfs", 0, "mode=" + mode)
    for path, fd in kept.items():
        os.makedirs(path, exist_ok=True)  # in a tmpfs when it lies under a hidden directory
        _mount("/proc/self/fd/%d" % fd, path, None, MS_BIND | MS_REC)
        _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
        os.close(fd)
    for fd, dest in seeds:
        shutil.copytree("/proc/self/fd/%d" % fd, dest, dirs_exist_ok=True)
        os.close(fd)


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--hostname", required=True)
    parser.add_argument("--hide", action="append", default=[])
    parser.add_argument("--keep", action="append", default=[])
    parser.add_argument("--seed", action="append", default=[])
    args = parser.parse_args(argv)
    make_view(args.hide, args.keep, [s.split(":", 1) for s in args.seed])
    socket.sethostname(args.hostname)
    os.chdir("/")
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    print("ready", flush=True)
    while True:  # pid 1 adopts the host's orphans: reap them
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        signal.sigwait({signal.SIGCHLD})


if __name__ == "__main__":
    main(sys.argv[1:])
