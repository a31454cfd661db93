"""The job's own errors and how they are shown: one line each, never a traceback.

`DatagenError` is a problem with the job's input, flags or output directory that the user can
mend; `pipeline.datagen` prints it as one ERROR line and exits 2. `one_line` makes any
message one line of bounded length (a scheduler's log shows one line per failure). The
storage errors (a store lost, a bucket refused) are `pipeline.runtime.storage_errors`'.
"""

from transforms.errors import JobError


class DatagenError(JobError):
    """A problem with the job's input or flags, reported without a traceback."""


MAX_ERROR_CHARS = 1000  # of one error line: it names the file, it need not quote it all


def one_line(text: object, limit: int = MAX_ERROR_CHARS) -> str:
    """A message as one line: a scheduler's log shows one line per failure. A message longer
    than `limit` characters (a long input line quoted, hundreds of file names) is cut, and
    says how much was left out."""
    line = "; ".join(part.strip() for part in str(text).splitlines() if part.strip())
    if len(line) > limit:
        line = "%s... [%d more characters]" % (line[:limit], len(line) - limit)
    return line
