"""OutputLock: one run at a time per problem and output directory, also on object stores.

Two runs on one output directory delete each other's work directory and markers. The lock
is a lease file `{problem}.datagen.lock` in the output directory holding its owner (host,
pid, start time, a random run id) and a heartbeat time that a background thread refreshes.
A second run finds a fresh lease and stops at once (exit 2, naming the holder); a lease
whose heartbeat is older than `--lock_stale_seconds`, or whose holder is a dead process on
this host (a `kill -9`), is taken over with a warning.

On a local file system a free lease is taken by an exclusive create (a hard link of the
written lease to its name: exactly one of two runs succeeds, at once) and refreshed by an
atomic replace (`file_io.write_bytes_atomically`), so the file never disappears while held.
Object stores have no exclusive create, so there (and to take over a stale lease anywhere)
the lease is taken by writing it, waiting a moment, and reading it back: the run whose id is
there holds it. Two runs that both find no lease and write within the settle time of each
other are sorted out by the read-back; only a run whose check-then-write takes longer than
the settle time can miss the other (a small race, documented in the README). The heartbeat
also reads the lease back: a run that finds someone else's id there has lost the lock and
stops before its next pass or commit.
Staleness compares heartbeat times across hosts, so their clocks must roughly agree.
"""

import datetime
import json
import logging
import os
import socket
import threading
import time
import uuid

from apache_beam.io.filesystems import FileSystems

from transforms import file_io
from pipeline.runners import DatagenError

LOG = logging.getLogger("datagen")
LOCK_NAME = "%s.datagen.lock"  # % problem: problems sharing a directory lock separately
SETTLE_SECONDS = 0.5


def process_alive(pid):
    """Whether a process of this host exists (a permission error means it does)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def describe(lease):
    """The holder of a lease, for messages."""
    return "run %s (host %s, pid %s, started %s, last heartbeat %s)" % (
        lease.get("run_id"), lease.get("host"), lease.get("pid"), lease.get("started_at"),
        lease.get("heartbeat_iso"))


class OutputLock:
    """The lease on `{output_dir}/{problem}.datagen.lock`; use as a context manager."""

    def __init__(self, output_dir, problem, stale_seconds):
        self.path = FileSystems.join(output_dir, LOCK_NAME % problem)
        self.stale_seconds = stale_seconds
        self.interval = max(0.2, min(30.0, stale_seconds / 4.0))
        self.lease = {"run_id": uuid.uuid4().hex, "host": socket.gethostname(),
                      "pid": os.getpid(),
                      "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(
                          timespec="seconds")}
        self.lost_to = None
        self._stop = threading.Event()
        self._thread = None

    # -- reading and judging a lease ------------------------------------------------------
    def _read(self):
        """The lease in the file, None when there is none; an unreadable (half-written) lease
        counts as held right now, so it is judged again after it gets stale."""
        if not file_io.exists(self.path):
            return None
        try:
            return json.loads(file_io.read_bytes(self.path).decode("utf-8"))
        except (OSError, ValueError):
            return {"run_id": "?", "heartbeat_at": time.time(), "heartbeat_iso": "unreadable"}

    def _is_stale(self, lease):
        """Why a lease can be taken over, or None while its holder may still be running."""
        age = time.time() - float(lease.get("heartbeat_at", 0))
        if age > self.stale_seconds:
            return "no heartbeat for %.0f s (--lock_stale_seconds %g)" % (age, self.stale_seconds)
        if lease.get("host") == self.lease["host"] and isinstance(lease.get("pid"), int) \
                and lease["pid"] != os.getpid() and not process_alive(lease["pid"]):
            return "its process %d on this host is gone" % lease["pid"]
        return None

    def _lease_bytes(self):
        now = time.time()
        self.lease["heartbeat_at"] = now
        self.lease["heartbeat_iso"] = datetime.datetime.fromtimestamp(
            now, datetime.timezone.utc).isoformat(timespec="seconds")
        return file_io.json_bytes(self.lease)

    def _write(self):
        file_io.write_bytes_atomically(self.path, self._lease_bytes())

    def _create_local(self):
        """Takes a free local lease; False if a lease appeared. The lease is written to a
        temporary file and hard-linked to its name, which fails if the name exists: an
        exclusive create that never shows a half-written lease."""
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        tmp = "%s.%s.tmp" % (self.path, self.lease["run_id"])
        with open(tmp, "wb") as f:
            f.write(self._lease_bytes())
        try:
            os.link(tmp, self.path)
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)

    def _unwritable(self, error):
        return DatagenError("--output_dir %s: cannot write there (lock %s: %s)" % (
            self.path.rsplit("/", 1)[0], self.path.rsplit("/", 1)[-1],
            " ".join(str(error).split())))

    # -- taking, keeping and releasing ------------------------------------------------------
    def acquire(self):
        """Takes the lease or raises DatagenError naming the run that holds it."""
        held = self._read()
        if held is None and file_io.is_local(self.path):
            try:
                if self._create_local():
                    self._start_heartbeat()
                    return
            except OSError as e:
                raise self._unwritable(e) from None
            held = self._read()  # another run created it just now
        if held is not None:
            stale = self._is_stale(held)
            if not stale:
                raise DatagenError("%s is in use by %s; wait for it to finish, or remove %s "
                                   "if that run is dead" % (self.path, describe(held),
                                                            self.path))
            LOG.warning("taking over the lock %s of %s: %s", self.path, describe(held), stale)
        try:
            self._write()
        except OSError as e:
            raise self._unwritable(e) from None
        try:
            time.sleep(SETTLE_SECONDS)
            now_held = self._read()
        except BaseException:  # interrupted while settling: leave no lease behind
            self.release()
            raise
        if not now_held or now_held.get("run_id") != self.lease["run_id"]:
            raise DatagenError("%s was taken by %s at the same moment" % (
                self.path, describe(now_held or {})))
        self._start_heartbeat()

    def _start_heartbeat(self):
        self._thread = threading.Thread(target=self._heartbeat, name="datagen-lock",
                                        daemon=True)
        self._thread.start()

    def _heartbeat(self):
        """Refreshes the lease until released; notices when another run took it over."""
        while not self._stop.wait(self.interval):
            try:
                held = self._read()
                if held is not None and held.get("run_id") != self.lease["run_id"]:
                    self.lost_to = held
                    LOG.error("lost the lock %s to %s", self.path, describe(held))
                    return
                self._write()
            except Exception as e:  # a flaky store: try again next beat, the lease lasts
                LOG.warning("could not refresh the lock %s: %s", self.path, e)

    def check(self):
        """Raises DatagenError when another run took the lease (this run is now stale)."""
        if self.lost_to is not None:
            raise DatagenError("%s was taken over by %s (no heartbeat from this run for "
                               "--lock_stale_seconds?); stopping" % (
                                   self.path, describe(self.lost_to)))

    def release(self):
        """Stops the heartbeat and deletes the lease if it is still this run's."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            held = self._read()
            if held is not None and held.get("run_id") == self.lease["run_id"]:
                FileSystems.delete([self.path])
        except Exception as e:  # a stale lease is taken over later anyway
            LOG.warning("could not remove the lock %s: %s", self.path, e)

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()
        return False
