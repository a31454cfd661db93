"""The one error a cleaning configuration raises: it names the file, the filter and the problem."""

from transforms.errors import JobError


class CleaningConfigError(JobError, ValueError):
    """A `--filters` file the job cannot run: unknown filter or parameter, wrong type."""
