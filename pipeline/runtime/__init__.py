"""Process machinery: runners and job servers, staging for remote workers, signals, console, local worker processes.

May import transforms only; every other part of pipeline builds on it."""
