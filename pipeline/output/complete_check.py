"""Whether an output marked complete still is: every file its summary names is there.

A rerun over `{problem}.DATAGEN_COMPLETE` of the same inputs and flags does nothing; but a
shard deleted by hand (or lost in a copy) since would leave a marker over missing pairs, and
the rerun would say "nothing to do". The summary lists every shard and rejects file and
every vocab file the run wrote; a rerun checks that they exist (names only: no sizes are
recorded) and redoes the output when one is missing or the summary cannot be read.
"""

from typing import Any, Dict, List, Optional

from pipeline.output.layout import OutputLayout
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores


def missing_outputs(layout: OutputLayout, summary: Dict[str, Any],
                    stores: Optional[ObjectStores] = None) -> List[str]:
    """Names (relative to the output directory) of the files `summary` lists that are gone.
    `stores`: the job's ObjectStores; on an object store the output prefix is listed once
    instead of one request per file."""
    names: List[str] = []
    for split in (summary.get("splits") or {}).values():
        names.extend(shard["name"] for shard in split.get("shards") or [])
        if split.get("rejects_file"):
            names.append(split["rejects_file"])
    for vocab in (summary.get("vocab") or {}).values():
        # local only: an object store has no byte_bpe "directory" to ask about
        if isinstance(vocab, dict) and vocab.get("path") and file_io.is_local(vocab["path"]):
            names.append(vocab["path"])
    listed = file_io.list_prefix(layout.output_dir, stores)  # None: not an object store
    missing = []
    for name in names:
        path = name if name.startswith(layout.output_dir) or "://" in name else layout.path(name)
        if not (path in listed if listed is not None else file_io.exists(path)):
            missing.append(name.rsplit("/", 1)[-1])
    return missing


def read_summary(layout: OutputLayout, stores: Optional[ObjectStores] = None
                 ) -> Optional[Dict[str, Any]]:
    """The summary of a complete output, or None when it is missing or not JSON."""
    try:
        summary = file_io.read_json(layout.summary_path, stores)
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) else None
