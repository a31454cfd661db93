"""Numeric flags' ranges, declared beside each flag as its argparse `type` (`bounded`).

A number a flag cannot take is a flag error (one line, exit 2), found when the command line
is parsed: never an error of a pass (Beam's coders take 64-bit integers: `Value out of
range`; C code takes no larger int: OverflowError), nor a huge count that hangs the job
(`--num_train_shards 1e20`). Imports nothing of the job, so every options class can use it
(the job's flags, the kinds' flags, the runner options in `pipeline.runtime.runners`).
"""

import argparse
from typing import Any, Callable, Type

INT32_MAX = 2 ** 31 - 1  # ids of a vocabulary (Parquet's list<int32>), SentencePiece's sizes
INT64_MAX = 2 ** 63 - 1  # Beam's integer coders, numpy and the C code a count reaches
MAX_SHOWN = 40  # characters of a refused value quoted in its error


def bounded(kind: Type[Any], low: Any = None, high: Any = None, above: Any = None
            ) -> Callable[[str], Any]:
    """An argparse `type` for a numeric flag: `kind` (int or float) of the value, in
    [low, high] (`above`: greater than it, instead of `low`); a float must be finite. Any
    other value is a flag error naming the range, one line (exit 2), declared beside the
    flag, where Beam or a pass would fail later with a traceback (`Value out of range`, an
    int too large for C), or a huge count would hang the job. The function's name is the
    kind's, so a value that is no number at all reads `invalid int value: 'abc'`."""
    if kind is int:
        low = -INT64_MAX - 1 if low is None and above is None else low
        high = INT64_MAX if high is None else high
    if above is not None:
        bounds = "above %s" % above + ("" if high is None else " and at most %s" % high)
    elif high is None:
        bounds = "at least %s" % low
    else:
        bounds = "from %s to %s" % (low, high)
    what = "an integer" if kind is int else "a finite number"

    def parse(text: str) -> Any:
        value = kind(text)  # ValueError: argparse's "invalid int value"
        if ((above is not None and not value > above) or (low is not None and not value >= low)
                or (high is not None and not value <= high) or value != value
                or value in (float("inf"), float("-inf"))):
            shown = text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "..."
            raise argparse.ArgumentTypeError("must be %s %s, not %s" % (what, bounds, shown))
        return value
    parse.__name__ = kind.__name__
    parse.__doc__ = "%s %s" % (what, bounds)  # what it takes, as docs/flags.md shows it
    return parse
