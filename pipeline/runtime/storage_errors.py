"""A disk that is full (or a quota used up, or a file system gone read-only) while the job
writes: one line naming the output directory, exit 2, not a traceback. An object store that
stops answering mid-run for longer than its client's retries last: one line too
(`StoreLost`, exit 1: a rerun starts over once the store is back).

Such an error can reach the driver in three shapes: an `OSError` with its errno (a write by
the driver itself: vocab files, summary, moving shards), an exception chained to one, or,
from a pass, Beam's `RuntimeError` whose text is the worker's error (the worker's exception
object does not cross the runner). The last is recognized by the C library's message for
the errno, which is what `OSError.__str__` writes (`[Errno 28] No space left on device`).
"""

import errno
import os
from typing import List, Optional

from transforms.errors import JobError

STORAGE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG)


def _texts() -> List[str]:
    return ["[Errno %d] %s" % (code, os.strerror(code)) for code in STORAGE_ERRNOS]


def storage_error(exc: Optional[BaseException]) -> Optional[str]:
    """The `[Errno N] message` of a storage failure in `exc` or what it was raised from, else
    None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS:
            return "[Errno %d] %s" % (exc.errno, os.strerror(exc.errno))
        text = str(exc)
        for known in _texts():
            if known in text:
                return known
        exc = exc.__cause__ or exc.__context__
    return None


def storage_message(exc: BaseException, output_dir: str) -> str:
    """The one line a storage failure is reported with."""
    error = storage_error(exc) or str(exc)
    remedy = ("choose another --output_dir" if "[Errno %d]" % errno.EROFS in error
              else "free some space there, or choose another --output_dir")
    return "cannot write under %s: %s (%s); this run marked nothing complete" % (
        output_dir, error, remedy)


# What S3's client (botocore) says when a store does not answer: no connection, timeouts,
# a connection closed before an answer. Each names the endpoint.
_UNANSWERED = ("Could not connect to the endpoint URL", "Connect timeout on endpoint URL",
               "Read timeout on endpoint URL",
               "Connection was closed before we received a valid response from endpoint URL")


class StoreLost(JobError, RuntimeError):
    """The object store stopped answering while the job ran (its client's retries ran
    out): one line, no marker; a rerun starts over."""


def unreachable_store(exc: Optional[BaseException]) -> Optional[str]:
    """The store client's one line about a store that did not answer, in `exc` or what it
    was raised from (a worker's error in a pass's error text too), else None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        for line in str(exc).splitlines():
            if any(text in line for text in _UNANSWERED):
                return line.strip()
        exc = exc.__cause__ or exc.__context__
    return None


def store_lost_message(message: str, output_dir: str) -> str:
    return ("the object store stopped answering: %s; the run stopped and marked nothing "
            "complete under %s (rerun it once the store answers)" % (message, output_dir))
