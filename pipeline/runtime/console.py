"""What the job prints while it runs: its own lines, short, and nothing of Beam's or TF's.

By default the console shows only the job's logger ("datagen"): which pass runs, where the
vocabulary search stands, encode progress, and the final table. Beam's driver and worker
logging (worker start-up, its own option warnings) and TensorFlow's start-up lines are held
back below ERROR; `--log_level warning|info|debug` (`-v`: info) brings them back at that level
for debugging. The settings are undone when the run ends (`library_logging`), so a caller that
runs the job in its own process keeps its logging as it was.

Two settings must be in place before Beam is imported, and are made by the entry points only
(`set_up`: `python -m pipeline.datagen` and `python -m pipeline.tools.inspect` before their
first import of Beam; the worker processes' fork server through
`pipeline.runtime.worker_start`); importing the project changes no logging and no environment.
"""

import contextlib
import importlib
import logging
import os
import re
import sys
import tempfile
from typing import Any, Dict, Iterator, List, Optional, Sequence, TextIO, Tuple

from transforms.contracts.settings import LOG_LEVELS  # noqa: F401 (the flag's choices)

LOG = logging.getLogger("datagen")
LIBRARY_LOGGERS = ("apache_beam", "tensorflow", "absl")
# The loggers of a failing bundle: Beam logs the DoFn's exception there (with its traceback),
# in a worker process or in this one (in-process runners), and raises it in the driver too,
# which reports it (one line for a full disk; the traceback for a bug). Held back unless
# --log_level is given.
WORKER_ERROR_LOGGERS = ("apache_beam.runners.common", "apache_beam.runners.worker")
MAX_LINE = 120  # characters of one progress line, timestamp included
APITOOLS_WARNING = "apitools not found"


class _NoApitoolsWarning(logging.Filter):
    """Drops the one WARNING line importing `apache_beam` logs on the root logger wherever
    `apache-beam[gcp]` is not installed ("apitools not found, and bigquery client libraries
    are not available ...", from its BigQuery client modules): the job reads no BigQuery, so
    the line is noise on every run, in the driver and in every worker."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(APITOOLS_WARNING)


def set_up() -> None:
    """The console of a process of the job, set before it imports Beam (once; a second call
    changes nothing): Beam's "apitools not found" line dropped (`_NoApitoolsWarning`), and
    gRPC's C core (Beam's channels to its workers) quiet below ERROR. gRPC prints its INFO
    lines to stderr when GRPC_VERBOSITY is unset (grpc >= 1.66 leaves absl's default), such
    as "Got goaway" when a worker channel closes at the end of a pass; the variable is read
    when grpc is imported, here and in the worker processes, which inherit it, so it is set
    before either. An explicit GRPC_VERBOSITY is kept."""
    root = logging.getLogger()
    if not any(isinstance(f, _NoApitoolsWarning) for f in root.filters):
        root.addFilter(_NoApitoolsWarning())
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


class _Formatter(logging.Formatter):
    """`HH:MM:SS message` for the job's own progress; warnings and errors say what they are."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(message)s", "%H:%M:%S")
        self._marked = logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        if record.levelno >= logging.WARNING:
            return self._marked.format(record)
        return super().format(record)


class _StderrHandler(logging.StreamHandler):
    """Logs to whatever sys.stderr is when a record is written (callers may replace it)."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _: TextIO) -> None:
        pass


class NoBundleTraceback:
    """A worker process's stderr without the traceback Beam's SDK harness prints there when
    a bundle fails (`sdk_worker._execute`: `print(traceback_string, file=sys.stderr)`): the
    same text reaches the driver as the pass's error, which reports it (one line for a full
    disk, the traceback for a bug). Everything else is written as it comes; `--log_level`
    shows it (the job's worker processes: `pipeline.runtime.local_worker_pool`)."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self._dropped = False

    def write(self, text: str) -> int:
        dropped, self._dropped = self._dropped, False
        if text.startswith("Traceback (most recent call last):"):
            self._dropped = True
            return len(text)
        if dropped and text == "\n":  # print's line end after it
            return len(text)
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def install() -> None:
    """The job's logger writes to stderr, once, whatever the root logger does."""
    if not any(isinstance(h, _StderrHandler) for h in LOG.handlers):
        handler = _StderrHandler()
        handler.setFormatter(_Formatter())
        LOG.addHandler(handler)
        LOG.setLevel(logging.INFO)
        LOG.propagate = False


def quiet_libraries() -> None:
    """Beam's (and the other libraries') loggers silenced from now on: called when the job
    tears a pass down on purpose (a signal, a dead worker, a lost lock), whose channel errors
    and tracebacks in Beam's threads are consequences, not news. The job's own lines stay."""
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


@contextlib.contextmanager
def library_logging(log_level: Optional[str] = None) -> Iterator[None]:
    """Within: Beam's, TensorFlow's and absl's loggers at `log_level` (None: errors only),
    TensorFlow's C++ start-up lines off unless asked for (worker processes inherit the
    environment), and the job's own debug lines with `debug`."""
    level = getattr(logging, (log_level or "error").upper())
    quiet = WORKER_ERROR_LOGGERS if not log_level else ()
    saved = {name: logging.getLogger(name).level for name in LIBRARY_LOGGERS + quiet}
    for name in quiet:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    saved_job = LOG.level
    saved_env = os.environ.get("TF_CPP_MIN_LOG_LEVEL")
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(level)
    if level > logging.INFO and saved_env is None:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    if level <= logging.DEBUG:
        LOG.setLevel(logging.DEBUG)
    shown = None
    if log_level and not logging.getLogger().handlers:
        # Beam logs to its own loggers and leaves the handlers to the program.
        shown = _StderrHandler()
        shown.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s",
                                             "%H:%M:%S"))
        logging.getLogger().addHandler(shown)
    try:
        yield
    finally:
        if shown is not None:
            logging.getLogger().removeHandler(shown)
        for name, old in saved.items():
            logging.getLogger(name).setLevel(old)
        LOG.setLevel(saved_job)
        if saved_env is None:
            os.environ.pop("TF_CPP_MIN_LOG_LEVEL", None)


# What libraries print while they are imported, on stderr (fd 2, from C++) and through absl:
# TensorFlow's oneDNN and CPU-feature INFO lines and absl's note before them, Grain's
# "Failed to load jax profiler" (absl, WARNING), Beam's apitools line.
START_UP_LOGGERS = ("absl", "tensorflow", "grain", "jax")
_START_UP_STDERR = re.compile(
    r"^(WARNING: All log messages before absl::InitializeLog\(\) is called are written to "
    r"STDERR|I\d{4} [\d:.]+ +\d+ \w+\.cc:\d+\] .*|To enable the following instructions: .*)$")


@contextlib.contextmanager
def _start_up_held_back() -> Iterator[None]:
    """Within: start-up lines held back, unless the program asked for them. A logger of
    START_UP_LOGGERS whose level the program set keeps it; with TF_CPP_MIN_LOG_LEVEL set, fd 2
    is left alone. Otherwise TF_CPP_MIN_LOG_LEVEL is 1 within (TensorFlow's C++ INFO lines
    off from then on: it reads the variable once), and what C++ code writes to fd 2 goes to
    a temporary file, every line of it that is not one of the known start-up lines written
    back to stderr afterwards. absl logs its first line only after `logging.basicConfig()` when the root
    logger has no handler (a handler the program never asked for): a NullHandler on the root
    logger within keeps it from doing so."""
    root = logging.getLogger()
    loggers = [logging.getLogger(name) for name in START_UP_LOGGERS]
    raised = [lg for lg in loggers if lg.level == logging.NOTSET]
    for lg in raised:
        lg.setLevel(logging.ERROR)
    null = logging.NullHandler() if not root.handlers else None
    if null is not None:
        root.addHandler(null)
    apitools = _NoApitoolsWarning()
    root.addFilter(apitools)
    held = None
    if "TF_CPP_MIN_LOG_LEVEL" not in os.environ:
        # TensorFlow's C++ logging reads it once, at its first line (during the import): its
        # later INFO lines (one per TFRecordDataset) stay off too; warnings still show
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "1"
        sys.stderr.flush()
        held = tempfile.TemporaryFile()
        saved_fd = os.dup(2)
        os.dup2(held.fileno(), 2)
    try:
        yield
    finally:
        if held is not None:
            del os.environ["TF_CPP_MIN_LOG_LEVEL"]
            sys.stderr.flush()
            os.dup2(saved_fd, 2)
            os.close(saved_fd)
            held.seek(0)
            text = held.read().decode("utf-8", "replace")
            held.close()
            kept = [line for line in text.splitlines() if not _START_UP_STDERR.match(line)]
            if kept:
                sys.stderr.write("\n".join(kept) + "\n")
        root.removeFilter(apitools)
        if null is not None:
            root.removeHandler(null)
        for lg in raised:
            if lg.level == logging.ERROR:  # not set by the library meanwhile
                lg.setLevel(logging.NOTSET)


def quiet_import(name: str) -> Any:
    """`importlib.import_module(name)` without the start-up lines the library prints while it
    is imported (`_start_up_held_back`: TensorFlow's, Grain's, absl's, Beam's), for the
    readers, which run in a trainer's process: its console is the trainer's. A module
    imported already is returned as it is."""
    if name in sys.modules:
        return sys.modules[name]
    with _start_up_held_back():
        return importlib.import_module(name)


def _span(values: Sequence[int]) -> str:
    return "%d" % values[0] if len(values) == 1 else "%d..%d" % (values[0], values[-1])


def round_line(round_no: int, sizes: Dict[str, int]) -> str:
    """One line for a bisection round: per vocabulary the min_counts probed and the sizes
    their last refinement iteration gave (`sizes`: {"name:min_count": subtokens}); every
    probe's size of every iteration is in the summary JSON."""
    by_name: Dict[str, List[Tuple[int, int]]] = {}
    for key, size in sizes.items():
        name, min_count = key.rsplit(":", 1)
        by_name.setdefault(name, []).append((int(min_count), size))
    parts = []
    for name, probes in sorted(by_name.items()):
        probes.sort()
        parts.append("%s min_count %s -> %s" % (name, _span([t for t, _ in probes]),
                                                 _span([s for _, s in probes])))
    return "  round %d: %s subtokens" % (round_no, "; ".join(parts))


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 120:
        return "%d s" % seconds
    if seconds < 7200:
        return "%d min %02d s" % divmod(seconds, 60)
    return "%d h %02d min" % (seconds // 3600, seconds % 3600 // 60)


def stages_line(stages: Sequence[Tuple[str, str, int, Optional[int]]], seconds: float) -> str:
    """Where a pass of stages stands (`stages`: (label, unit, done, total or None) in order,
    `transforms.reporting.progress_marks.stage_progress`): the furthest stage started and how far it
    is, then the latest earlier one not finished yet, if any: `round 3: 2 of 4 probes
    learnt, 1 min 10 s so far`; before any unit is done, the first stage."""
    def far(label: str, unit: str, done: int, total: Optional[int]) -> str:
        return "%s: %s of %s %s" % (label, format(done, ","),
                                    format(total, ",") if total else "?", unit)

    started = [i for i, (_, _, done, total) in enumerate(stages) if done or total]
    if not started:
        return "%s: nothing done yet, %s so far" % (
            stages[0][0] if stages else "starting", _duration(seconds))
    current = started[-1]
    parts = [far(*stages[current])]
    behind = [far(*s) for s in stages[:current] if s[3] is None or s[2] < s[3]]
    parts += behind[-1:]  # the latest one not finished (the line stays a console line)
    return "%s, %s so far" % ("; ".join(parts), _duration(seconds))


def progress_line(done: int, total: int, seconds: float, then: str = "",
                  chunks: int = 0) -> str:
    """The encode pass until every pair is encoded: `encoded 350,000 of 760,000 pairs (46%),
    12,300 pairs/s, about 33 s left, 28 s so far`; `then`: what follows (`then 11 shards`), before the time so far. Pairs count once their
    chunk is done, so with none done yet the line says the pass is starting, not "0 of N"
    (a pass of few chunks shows nothing else until it is nearly over): `encode starting:
    760,000 pairs, 76 chunks, none done, 31 s so far` (`chunks`: how many)."""
    after = ", %s" % then if then else ""
    if not done:
        return "encode starting: %s pairs, %s chunk%s, none done%s, %s so far" % (
            format(total, ","), format(chunks, ","), "" if chunks == 1 else "s", after,
            _duration(seconds))
    rate = done / seconds if seconds > 0 else 0.0
    line = "encoded %s of %s pairs (%d%%), %s pairs/s" % (
        format(done, ","), format(total, ","), 100 * done // max(total, 1),
        format(int(rate), ","))
    if rate > 0 and done < total:
        line += ", about %s left" % _duration((total - done) / rate)
    return line + after + ", %s so far" % _duration(seconds)


def shards_line(pairs: int, written: int, shards: int, seconds: float,
                encoded_at: float) -> str:
    """The encode pass once every pair is encoded (at `encoded_at` seconds into the pass):
    the shuffle that groups the fragments by shard until a shard is written, then the shards
    written and the time left at their rate so far."""
    head = "encoded all %s pairs; " % format(pairs, ",")
    if not written:
        return head + "shuffling fragments into %d shards for %s, %s so far" % (
            shards, _duration(seconds - encoded_at), _duration(seconds))
    line = head + "%d of %d shards written" % (written, shards)
    spent = seconds - encoded_at
    if written < shards and spent > 0:
        line += ", about %s left" % _duration((shards - written) * spent / written)
    return line + ", %s so far" % _duration(seconds)
