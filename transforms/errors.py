"""The one base of the job's own errors, `JobError`, and the errors more than one layer raises.

The job's errors are raised in many layers (a corpus line in `transforms.formats`, a
`--filters` file in `transforms.cleaning`, a store in `transforms.storage`, a pass or a
worker in `pipeline`), and each keeps the built-in class it always had (`ValueError`,
`OSError`, `RuntimeError`), so `except ValueError` around a reader still holds. `JobError`
is beside those bases, in a module that imports nothing, so every layer may import it: a
caller that wants every error the job raises on purpose, and no bug, catches `JobError`.
What the command shows of each (one line, exit 2 or 1) is `pipeline.runtime.errors`' and
`pipeline.datagen`'s, unchanged by this class.
"""


class JobError(Exception):
    """An error the job raises on purpose: bad input, flags or output, a store that does not
    answer, a pass or worker that failed (never a bug's exception)."""


class StoreUnreachable(JobError, OSError):
    """An object store did not answer (no connection, timeouts), unlike an answer refusing
    the request (no such bucket, access denied): raised by `transforms.storage.object_stores`'
    probe, and by `pipeline.tools.reader.complete_output_files` (as `StoreUnreachableError`,
    its older name) within about 30 s instead of Beam's minutes of retries."""
