"""Resume: what of a killed run's encode pass a rerun keeps, and what it sweeps.

Every run's own work files live under `.datagen-work/{problem}/{run id}/` and go at its
start, whoever left them. The encode pass's fragments and chunk manifests instead live in a
directory named by the run's resume key (`OutputLayout.resume_dir`), a digest of the output
fingerprint (the flags that change the bytes, each input's path, size and mtime) and of the
chunking (`--encode_chunk_lines`, operational but where chunks start): a rerun of the same
command over the same inputs finds that directory and its encode DoFns keep each chunk whose
manifest and fragments check out (`transforms.encode.chunk_manifests`). Any other key's
directory is swept at the start, so another fingerprint never reuses a byte; the manifests
carry the key too. A run that loses its lock may still write into the directory, but only
the bytes the new holder would write under the same names (one fingerprint, one chunking).

Merged shards go there too (`shard_dir`), each followed by its manifest (`merged/`): a run
killed in the merge or the commit leaves the shards it merged, and a rerun keeps each one its
manifest and content vouch for (`transforms.encode.shard_manifests`) instead of merging it again.

The directory is kept when a run is interrupted (SIGTERM at a SLURM walltime, Ctrl-C) or
killed; a complete or failed run removes it with the rest of the work directory.

The shard writer deletes a shard's fragment files once the shard is written (temporary disk
near the output's size, not twice it): a kill after the first shard is written costs the
chunks whose files went, which is every chunk with records in that shard, so resume saves the
encoding of a run killed while it encodes, not of one killed in its merge.
"""

import hashlib
import json
import os
from typing import List, Optional

from pipeline.output.layout import RESUME_PREFIX, OutputLayout
from transforms.encode.chunk_manifests import Resume
from transforms.encode.shard_manifests import ShardResume
from transforms.storage import file_io, paths
from transforms.storage.object_stores import ObjectStores

MANIFESTS = "chunks"
FRAGMENTS = "fragments"
SHARDS = "shards"  # merged shard files, before the commit moves them
SHARD_MANIFESTS = "merged"


def resume_key(fingerprint: dict, encode_chunk_lines: int) -> str:
    """16 hex digits naming what determines every chunk's fragments."""
    text = json.dumps([fingerprint, encode_chunk_lines], sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _entries(directory: str, stores: Optional[ObjectStores]) -> Optional[List[str]]:
    """The names directly under `directory` (local disk or an object store), or None for
    another file system."""
    if file_io.is_local(directory):
        try:
            return sorted(os.listdir(directory))
        except FileNotFoundError:
            return []
    listed = file_io.list_prefix(directory, stores)
    if listed is None:
        return None
    base = directory.rstrip("/") + "/"
    return sorted({p[len(base):].split("/", 1)[0] for p in listed if p.startswith(base)})


def sweep_work(layout: OutputLayout, key: str, stores: Optional[ObjectStores]) -> bool:
    """Deletes every work directory of the problem but the resume directory of `key`;
    returns whether that one holds chunk manifests (a killed run's, to be checked)."""
    keep = RESUME_PREFIX + key
    names = _entries(layout.problem_work_dir, stores)
    if names is None:  # neither local nor a store: nothing is kept
        file_io.delete_tree(layout.problem_work_dir, stores)
        return False
    for name in names:
        if name != keep:
            file_io.delete_tree(paths.join(layout.problem_work_dir, name), stores)
    return keeps_chunks(layout, key, stores)


def resume_of(layout: OutputLayout, key: str, look: bool) -> Resume:
    """The encode DoFns' `Resume` of this run."""
    return Resume(key, paths.join(layout.resume_dir(key), MANIFESTS), layout.work_dir, look)


def fragment_dir(layout: OutputLayout, key: str) -> str:
    return paths.join(layout.resume_dir(key), FRAGMENTS)


def shard_dir(layout: OutputLayout, key: str) -> str:
    return paths.join(layout.resume_dir(key), SHARDS)


def shard_resume_of(layout: OutputLayout, key: str, look: bool) -> ShardResume:
    """The shard writer's `ShardResume` of this run."""
    return ShardResume(key, paths.join(layout.resume_dir(key), SHARD_MANIFESTS), look)


def keeps_chunks(layout: OutputLayout, key: str, stores: Optional[ObjectStores]) -> bool:
    """Whether the resume directory holds a finished chunk worth keeping for a rerun."""
    return bool(_entries(paths.join(layout.resume_dir(key), MANIFESTS), stores))
