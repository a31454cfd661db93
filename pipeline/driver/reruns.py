"""A rerun over an output directory that already holds a complete output: nothing to do when
it is this run's (same inputs and flags, every file there), an error when it was made from
other inputs or flags (a scheduled rerun must not pass yesterday's output off as today's),
redone when files it lists are gone or a shard is not at its recorded size
(`complete_check`). `--overwrite` skips all of this."""

import logging
from typing import List, Optional, Tuple

from pipeline.driver import fingerprint
from pipeline.output.complete_check import here, missing_outputs, read_summary, recorded_dir
from pipeline.output.layout import OutputLayout
from pipeline.runtime.errors import DatagenError
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores

LOG = logging.getLogger("datagen")


def marked_complete(layout: OutputLayout, overwrite: bool, stores: Optional[ObjectStores] = None
                    ) -> Optional[Tuple[Optional[dict], Optional[List[Tuple[str, str]]]]]:
    """(its summary or None when unreadable, (name, what is wrong) of each file it lists that
    is gone or not as recorded) of a complete output here, or None when there is no marker
    (or `overwrite`)."""
    if overwrite or not file_io.exists(layout.complete_path, stores):
        return None
    summary = read_summary(layout, stores)
    return summary, (None if summary is None else missing_outputs(layout, summary, stores))


def nothing_to_do(layout: OutputLayout, summary: dict, note: str) -> dict:
    """The summary of a complete output left as it is, marked as this run's noop. An output
    moved or copied here as a whole says so, and its table names the files where they are
    now (the summary file keeps the paths of the run that wrote it)."""
    recorded = recorded_dir(summary)
    moved = recorded is not None and recorded != layout.output_dir.rstrip("/")
    LOG.info("%s is complete (%s exists): nothing to do%s%s", layout.output_dir,
             layout.complete_path, " (written in %s: moved or copied here as a whole)" % recorded
             if moved else "", note)
    if moved:
        summary["moved_from"] = recorded
        summary["output_dir"] = layout.output_dir
        for vocab in (summary.get("vocab") or {}).values():
            if isinstance(vocab, dict) and vocab.get("path"):
                vocab["path"] = here(vocab["path"], layout.output_dir, recorded)
        for split in (summary.get("splits") or {}).values():
            if split.get("rejects_file"):
                split["rejects_file"] = here(split["rejects_file"], layout.output_dir, recorded)
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
                     missing: Optional[List[Tuple[str, str]]]) -> str:
    """Why a marked-complete output is redone, for the log: each file and what is wrong with
    it (`missing`: as `missing_outputs` gives them), the first three."""
    if summary is None or missing is None:
        return "its summary %s cannot be read" % layout.summary_path
    shown = "; ".join("%s %s" % (name, why) for name, why in missing[:3])
    return shown + ("; and %d more" % (len(missing) - 3) if len(missing) > 3 else "")
