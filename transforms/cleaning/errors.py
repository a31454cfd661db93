"""The one error a cleaning configuration raises: it names the file, the filter and the problem."""


class CleaningConfigError(ValueError):
    """A `--filters` file the job cannot run: unknown filter or parameter, wrong type."""
