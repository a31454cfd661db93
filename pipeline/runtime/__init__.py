"""Process machinery: runners and job servers, staging for remote workers, signals, console, local worker processes.

Every other part of pipeline builds on it.

May import: transforms."""
