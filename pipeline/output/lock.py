"""OutputLock: one run at a time per problem and output directory, on disks and object stores.

Two runs on one output directory would delete each other's work and markers. The lock is a
lease object `{problem}.datagen.lock` in the output directory holding its owner (host, pid and
the process's start time, start time, a random run id), a heartbeat time that a background
thread renews, and the holder's terms: its heartbeat interval and its staleness (its
`--lock_stale_seconds`). A second run finds a fresh lease and stops at once (exit 2, naming
the holder). A lease is taken over, with a warning, only when its holder is a dead process
on this host (a `kill -9`), or when its heartbeat is older than the staleness the holder
recorded: a taker's own, shorter `--lock_stale_seconds` cannot shorten it. On this host a
holder whose process is alive is never stale, whatever its heartbeat (a stopped or very
busy run), on every file system. A lease of an older version, without terms, is judged by
the taker's `--lock_stale_seconds`, as it was then.

Every change of the lease is a compare-and-swap on the version the run last saw, so two runs
can never both hold it, whatever the timing (`Lease` below, one per kind of file system):
- taking a free lease is an exclusive create (S3 `If-None-Match: *`, GCS
  `ifGenerationMatch=0`, a local hard link that fails when the name exists);
- taking over a stale lease, and each heartbeat, replaces the lease only if it is still the
  version this run read or wrote (S3 `If-Match: <ETag>`, GCS `ifGenerationMatch=<gen>`, on a
  local disk a read-compare-replace under an exclusive `flock` of the output directory);
- release deletes the lease only if it is still this run's version.
A PUT replaces an object atomically, so the lease is never missing while held. A heartbeat
is one request. A run whose heartbeat finds another version has lost the lock: it stops
before its next pass, aborts the pass it is in, and deletes nothing.

Other Beam file systems (hdfs://, ...) offer neither exclusive create nor a conditional
write: there the lease is written, read back after SETTLE_SECONDS, and the run whose id is
there goes on; two runs that both check-then-write within the settle time are sorted out,
slower ones are not (docs/runners.md, "Object stores"). Staleness compares heartbeat times
across hosts, so their clocks must roughly agree.
"""

import contextlib
import datetime
import fcntl
import hashlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from typing import Any, Callable, Dict, Iterator, Literal, Optional, Protocol, Tuple, cast

from apache_beam.io.filesystems import FileSystems

from pipeline.runtime.interrupts import process_alive, process_start
from pipeline.runtime.errors import DatagenError, one_line
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores, PreconditionFailed, Store

Lease = Dict[str, Any]  # the lease object's JSON: run_id, host, pid, pid_start, started_at,
# heartbeat_at, heartbeat_iso and the holder's terms, heartbeat_seconds and stale_seconds


class LeaseFile(Protocol):
    """One lease file on one kind of file system: every change a compare-and-swap on the
    version last seen (`StoreLease`, `LocalLease`, `SettledLease`)."""

    def create(self, data: bytes) -> Optional[str]: ...

    def read(self) -> Optional[Tuple[bytes, str]]: ...

    def replace(self, data: bytes, version: str) -> str: ...

    def delete(self, version: str) -> None: ...

LOG = logging.getLogger("datagen")
LOCK_NAME = "%s.datagen.lock"  # % problem: problems sharing a directory lock separately
SETTLE_SECONDS = 0.5
TAKE_ATTEMPTS = 5  # a lease changing under us again and again: give up with one line



def recorded_stale_seconds(lease: Lease) -> Optional[float]:
    """The staleness a lease's holder recorded (its --lock_stale_seconds), or None for a
    lease without terms (an older version's) or with unreadable ones."""
    value = lease.get("stale_seconds")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def terms_of(lease: Lease) -> str:
    """The holder's terms, for messages."""
    terms = recorded_stale_seconds(lease)
    return "" if terms is None else ", stale after %g s without a heartbeat" % terms


def describe(lease: Lease) -> str:
    """The holder of a lease, for messages."""
    return "run %s (host %s, pid %s, started %s, last heartbeat %s)" % (
        lease.get("run_id"), lease.get("host"), lease.get("pid"), lease.get("started_at"),
        lease.get("heartbeat_iso"))


def content_version(data: bytes) -> str:
    """The version of a lease where the file system keeps none: the SHA-256 of its bytes
    (they hold a run id and a heartbeat time, so every write is a new version)."""
    return hashlib.sha256(data).hexdigest()


# -- one lease object on each kind of file system ----------------------------------------------
class StoreLease:
    """The lease on S3 or GCS, through the store's own client (`transforms.storage.object_stores`):
    versions are ETags or generations, every write conditional."""

    def __init__(self, path: str, store: Store) -> None:
        self.path = path
        self._store = store

    def create(self, data: bytes) -> Optional[str]:
        """The new version, or None when a lease exists."""
        try:
            return self._store.put(self.path, data, if_absent=True)
        except PreconditionFailed:
            return None

    def read(self) -> Optional[Tuple[bytes, str]]:
        """(bytes, version), or None when there is no lease."""
        return self._store.get(self.path)

    def replace(self, data: bytes, version: str) -> str:
        """The new version; PreconditionFailed when the lease is not `version` any more."""
        return self._store.put(self.path, data, if_version=version)

    def delete(self, version: str) -> None:
        try:
            self._store.delete(self.path, if_version=version)
        except PreconditionFailed:
            pass


class LocalLease:
    """The lease on a local disk: an exclusive create by hard link (never a half-written
    lease), and replace/delete as read-compare-write under an exclusive `flock` of the output
    directory (every run on this file system takes the same one). A version is the SHA-256
    of the lease's bytes, which hold a run id and a heartbeat time."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._dir = os.path.dirname(path)

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        fd = os.open(self._dir, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the flock

    def create(self, data: bytes) -> Optional[str]:
        os.makedirs(self._dir, exist_ok=True)
        tmp = file_io.temporary_name(self.path)
        with open(tmp, "wb") as f:
            f.write(data)
        try:
            os.link(tmp, self.path)
            return content_version(data)
        except FileExistsError:
            return None
        finally:
            os.unlink(tmp)

    def read(self) -> Optional[Tuple[bytes, str]]:
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        return data, content_version(data)

    def replace(self, data: bytes, version: str) -> str:
        with self._guard():
            now = self.read()
            if now is None or now[1] != version:
                raise PreconditionFailed("%s changed" % self.path)
            file_io.write_bytes_atomically(self.path, data)
        return content_version(data)

    def delete(self, version: str) -> None:
        with self._guard():
            now = self.read()
            if now is not None and now[1] == version:
                os.unlink(self.path)


class SettledLease:
    """The lease on a file system with neither exclusive create nor conditional writes
    (hdfs://, ...): written whole, and taken only when a read-back after SETTLE_SECONDS still
    shows it. Best effort: see the module docstring."""

    def __init__(self, path: str) -> None:
        self.path = path

    def read(self) -> Optional[Tuple[bytes, str]]:
        if not file_io.exists(self.path):
            return None
        data = file_io.read_bytes(self.path)
        return data, content_version(data)

    def _write_settled(self, data: bytes) -> str:
        file_io.write_bytes_atomically(self.path, data)
        time.sleep(SETTLE_SECONDS)
        now = self.read()
        if now is None or now[0] != data:
            raise PreconditionFailed("%s was written by another run" % self.path)
        return now[1]

    def create(self, data: bytes) -> Optional[str]:
        if file_io.exists(self.path):
            return None
        try:
            return self._write_settled(data)
        except PreconditionFailed:
            return None

    def replace(self, data: bytes, version: str) -> str:
        now = self.read()
        if now is None or now[1] != version:
            raise PreconditionFailed("%s changed" % self.path)
        return self._write_settled(data)

    def delete(self, version: str) -> None:
        now = self.read()
        if now is not None and now[1] == version:
            file_io.delete_files([self.path])


def lease_for(path: str, stores: Optional[ObjectStores] = None) -> LeaseFile:
    """The Lease of `path`'s file system (`stores`: the job's ObjectStores)."""
    store = stores.for_path(path) if stores is not None else None
    if store is not None:
        return StoreLease(path, store)
    if file_io.is_local(path):
        return LocalLease(path)
    return SettledLease(path)


class OutputLock:
    """The lease on `{output_dir}/{problem}.datagen.lock`; use as a context manager.

    `on_lost()`, if given, is called once from the heartbeat thread when another run has
    taken the lease (the job uses it to abort the pass it is in)."""

    def __init__(self, output_dir: str, problem: str, stale_seconds: float,
                 stores: Optional[ObjectStores] = None,
                 on_lost: Optional[Callable[[], None]] = None,
                 run_id: Optional[str] = None) -> None:
        self.path = FileSystems.join(output_dir, LOCK_NAME % problem)
        self.stale_seconds = stale_seconds
        self.interval = max(0.2, min(30.0, stale_seconds / 4.0))
        self.lease: Lease = {"run_id": run_id or uuid.uuid4().hex, "host": socket.gethostname(),
                      "pid": os.getpid(), "pid_start": process_start(os.getpid()),
                      "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(
                          timespec="seconds")}
        self.lost_to: Optional[Lease] = None
        self._lost_why = ""  # one line: why this run lost the lease (check() raises it)
        self.version: Optional[str] = None  # the version of the lease this run wrote last
        self._backend = lease_for(self.path, stores)
        self._on_lost = on_lost
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    @property
    def run_id(self) -> str:
        return self.lease["run_id"]

    # -- reading and judging a lease ------------------------------------------------------
    def _read(self) -> Optional[Tuple[Lease, str]]:
        """(lease dict, version) of the lease there, or None."""
        got = self._backend.read()
        if got is None:
            return None
        data, version = got
        try:
            lease = json.loads(data.decode("utf-8"))
            if not isinstance(lease, dict):
                raise ValueError("not an object")
        except ValueError:
            raise DatagenError("%s is not a lease this job wrote (unreadable); remove it if no "
                               "run is using %s" % (self.path, self.path.rsplit("/", 1)[0]))
        return lease, version

    def _holder_alive_here(self, lease: Lease) -> Optional[bool]:
        """For a lease of this host: whether its holder's process is alive (the same process:
        its recorded start time matches, where the lease and this system know one); None for
        another host's lease, or a pid now another process's (judged by heartbeat then)."""
        pid = lease.get("pid")
        if lease.get("host") != self.lease["host"] or not isinstance(pid, int) or pid <= 0:
            return None
        if pid == os.getpid():
            return True
        if not process_alive(pid):
            return False
        recorded, now = lease.get("pid_start"), process_start(pid)
        if recorded is not None and now is not None and recorded != now:
            return None  # the pid was reused: the heartbeat tells
        return True

    def _is_stale(self, lease: Lease) -> Optional[str]:
        """Why a lease can be taken over, or None while its holder may still be running."""
        alive = self._holder_alive_here(lease)
        if alive is False:
            return "its process %d on this host is gone" % lease["pid"]
        if alive:  # never stale, on every file system: its heartbeat may only be late
            return None
        age = time.time() - float(lease.get("heartbeat_at", 0))
        terms = recorded_stale_seconds(lease)
        if terms is None:  # an older version's lease: the taker's flag, as then
            if age > self.stale_seconds:
                return "no heartbeat for %.0f s (--lock_stale_seconds %g; the lease records " \
                       "no terms)" % (age, self.stale_seconds)
            return None
        if age > terms:
            return "no heartbeat for %.0f s (its holder's --lock_stale_seconds %g)" % (
                age, terms)
        return None

    def _lease_bytes(self) -> bytes:
        now = time.time()
        self.lease["heartbeat_seconds"] = self.interval
        self.lease["stale_seconds"] = self.stale_seconds
        self.lease["heartbeat_at"] = now
        self.lease["heartbeat_iso"] = datetime.datetime.fromtimestamp(
            now, datetime.timezone.utc).isoformat(timespec="seconds")
        return file_io.json_bytes(self.lease)

    def _unwritable(self, error: Exception) -> DatagenError:
        return DatagenError("--output_dir %s: cannot write there (lock %s: %s)" % (
            self.path.rsplit("/", 1)[0], self.path.rsplit("/", 1)[-1], one_line(error)))

    # -- taking, keeping and releasing ------------------------------------------------------
    def acquire(self) -> None:
        """Takes the lease or raises DatagenError naming the run that holds it."""
        try:
            for _ in range(TAKE_ATTEMPTS):
                version = self._backend.create(self._lease_bytes())
                if version is not None:
                    self.version = version
                    break
                held = self._read()
                if held is None:  # released between our create and read: try again
                    continue
                lease, version = held
                if lease.get("run_id") == self.run_id:  # our create, its answer lost
                    self.version = version
                    break
                stale = self._is_stale(lease)
                if not stale:
                    raise DatagenError("%s is in use by %s%s; wait for it to finish, or remove "
                                       "%s if that run is dead" % (
                                           self.path, describe(lease), terms_of(lease),
                                           self.path))
                LOG.warning("taking over the lock %s of %s: %s", self.path, describe(lease),
                            stale)
                try:
                    self.version = self._backend.replace(self._lease_bytes(), version)
                    break
                except PreconditionFailed:  # renewed or taken by another run: judge again
                    continue
            else:
                raise DatagenError("%s changed %d times while this run tried to take it; is "
                                   "another run starting?" % (self.path, TAKE_ATTEMPTS))
        except OSError as e:
            raise self._unwritable(e) from None
        self._start_heartbeat()

    def _start_heartbeat(self) -> None:
        self._thread = threading.Thread(target=self._heartbeat, name="datagen-lock",
                                        daemon=True)
        self._thread.start()

    def renew(self) -> bool:
        """One heartbeat: replaces the lease if it is still this run's version. Returns False
        (and records who has it) when another run took it."""
        try:
            self.version = self._backend.replace(self._lease_bytes(),
                                                 cast(str, self.version))  # set by acquire()
            return True
        except PreconditionFailed:
            pass
        held = self._read()
        if held is not None and held[0].get("run_id") == self.run_id:
            self.version = held[1]  # our own write, whose answer was lost: still ours
            return True
        if held is None:
            self._lose({"run_id": "(none: the lease was deleted)"},
                       "%s was deleted while this run held it (was --output_dir removed?)"
                       % self.path)
        else:
            self._lose(held[0], "%s was taken over by %s (no heartbeat from this run for "
                       "--lock_stale_seconds?)" % (self.path, describe(held[0])))
        return False

    def _lose(self, lease: Lease, why: str) -> None:
        self.lost_to = lease
        self._lost_why = why + "; stopping, nothing deleted, nothing marked complete"

    def _heartbeat(self) -> None:
        """Renews the lease until released or lost."""
        while not self._stop.wait(self.interval):
            try:
                if not self.renew():
                    if self._on_lost is not None:
                        self._on_lost()
                    return
            except Exception as e:  # a flaky store: try again next beat, the lease lasts
                LOG.warning("could not renew the lock %s: %s", self.path, one_line(e))

    @property
    def lost(self) -> bool:
        return self.lost_to is not None

    def check(self) -> None:
        """Raises DatagenError when the heartbeat found the lease taken by another run, or
        deleted (this run is now stale)."""
        if self.lost_to is not None:
            raise DatagenError(self._lost_why)

    def confirm(self) -> None:
        """Renews the lease now (one request) and raises DatagenError, as `check`, unless it
        is still this run's: before the commit, whatever the heartbeat saw last (a beat may
        be 30 s away), so that a run whose lock was removed, or whose --output_dir was
        removed or replaced by a file, marks nothing complete."""
        self.check()
        try:
            held = self.renew()
        except (FileNotFoundError, NotADirectoryError) as e:  # --output_dir is a file now
            self._lose({"run_id": "(none: the lease cannot be read)"},
                       "%s cannot be renewed (%s): was --output_dir removed or replaced?"
                       % (self.path, one_line(e)))
            held = False
        except Exception as e:  # a flaky store, a full disk: the lease lasts, as a beat's
            LOG.warning("could not renew the lock %s: %s", self.path, one_line(e))
            held = True
        if not held:
            self.check()

    def release(self) -> None:
        """Stops the heartbeat and deletes the lease if it is still this run's."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.version is None or self.lost_to is not None:
            return
        try:
            self._backend.delete(self.version)
        except Exception as e:  # a stale lease is taken over later anyway
            LOG.warning("could not remove the lock %s: %s", self.path, one_line(e))

    def __enter__(self) -> "OutputLock":
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> Literal[False]:
        self.release()
        return False
