"""A rerun over an output directory that already holds a complete output: nothing to do when
it is this run's (same inputs and flags, every file there), an error when it was made from
other inputs or flags (a scheduled rerun must not pass yesterday's output off as today's),
redone when files it lists are gone or a shard is not at its recorded size
(`complete_check`). `--overwrite` skips all of this."""

import logging
from typing import List, Optional, Tuple

from pipeline.driver import fingerprint
from pipeline.output.complete_check import missing_outputs, read_summary
from pipeline.output.layout import OutputLayout
from pipeline.runtime.runners import DatagenError
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores

LOG = logging.getLogger("datagen")


def marked_complete(layout: OutputLayout, overwrite: bool, stores: Optional[ObjectStores] = None
                    ) -> Optional[Tuple[Optional[dict], Optional[List[str]]]]:
    """(its summary or None when unreadable, the names of files it lists that are gone)
    of a complete output here, or None when there is no marker (or `overwrite`)."""
    if overwrite or not file_io.exists(layout.complete_path, stores):
        return None
    summary = read_summary(layout, stores)
    return summary, (None if summary is None else missing_outputs(layout, summary, stores))


def nothing_to_do(layout: OutputLayout, summary: dict, note: str) -> dict:
    """The summary of a complete output left as it is, marked as this run's noop."""
    LOG.info("%s is complete (%s exists): nothing to do%s", layout.output_dir,
             layout.complete_path, note)
    summary["noop"] = True
    return summary


def check_same_fingerprint(layout: OutputLayout, summary: dict, current: dict) -> None:
    """Raises DatagenError when a complete output was made from other inputs or flags than
    the `current` fingerprint says."""
    recorded = summary.get("fingerprint")
    if recorded is None:
        LOG.warning("%s records no fingerprint (written by an older version): cannot "
                    "tell whether its inputs or flags changed", layout.summary_path)
        return
    changes = fingerprint.differences(recorded, current)
    if changes:
        raise DatagenError("%s holds a complete output of other inputs/flags: %s; pass "
                           "--overwrite to replace it" % (layout.output_dir, "; ".join(changes)))


def describe_missing(layout: OutputLayout, summary: Optional[dict],
                     missing: Optional[List[str]]) -> str:
    """Why a marked-complete output is redone, for the log."""
    if summary is None or missing is None:
        return "its summary %s cannot be read" % layout.summary_path
    names = ", ".join(missing[:3]) + (" and %d more" % (len(missing) - 3)
                                      if len(missing) > 3 else "")
    return "%s %s missing or not as the summary records" % (
        names, "is" if len(missing) == 1 else "are")
