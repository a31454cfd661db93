"""Shard manifests: what lets a rerun keep the shards a killed run had already merged.

A run killed in the encode pass's merge (or in its commit, before the shards moved) has
written some shard files whole into its resume directory (`pipeline.driver.resume`), and
merging them again costs a rerun as much as the first time: every record of the shard is
read, merged and framed again. So after a shard file is written, its manifest follows, one
small JSON file a shard (`{shard name}.json`): the run's resume key, the fragments it was
merged from (each one's name, records and records per dataset: what the encode chunks
reported) and the shard's report (records, bytes, the crc32c of the whole file).

A rerun with the same key (`kept_shard`) takes the shard as it is when its manifest has the
key, the same fragments (the same chunks of the same fingerprint wrote them, so the same
bytes: a chunk encoded again rewrites its fragments byte for byte) and the file is there with
its size and crc32c, read through once; anything else is merged again, under the same name.
Verifying trusts content, never names or timestamps, as the chunk manifests do
(`transforms.encode.chunk_manifests`).
"""

import json
from typing import Any, Dict, List, NamedTuple, Optional, Sequence

import google_crc32c

from transforms.contracts.elements import FragmentReport, ShardReport
from transforms.storage import file_io, paths
from transforms.storage.object_stores import ObjectStores

VERSION = 1
REUSED = "resume.shards_reused"  # the counter of shards kept (the summary's `resume`)
_READ = 1 << 22


class ShardResume(NamedTuple):
    """`key`: the run's resume key; `manifest_dir`: where shard manifests go; `look`: whether
    a killed run left anything to check (a first run asks the store for nothing)."""
    key: str
    manifest_dir: str
    look: bool


def _manifest_path(resume: ShardResume, shard_path: str) -> str:
    return paths.join(resume.manifest_dir, paths.split(shard_path)[1] + ".json")


def fragment_identity(fragments: List[FragmentReport]) -> List[Any]:
    """The fragments a shard is merged from, as JSON gives them back: sorted [name, records,
    records per dataset] (the name without its directory)."""
    return sorted([paths.split(f["path"])[1], f["records"],
                   [list(pair) for pair in f["by_dataset"]]] for f in fragments)


def _file_check(files: Sequence[str], stores: Optional[ObjectStores]) -> Optional[List[Any]]:
    """[size, crc32c hex] of the files in order (a shard's: a text shard is two), streamed;
    None when one cannot be read."""
    checksum, size = google_crc32c.Checksum(), 0
    try:
        for path in files:
            with file_io.open_for_read(path, stores) as f:
                while True:
                    block = f.read(_READ)
                    if not block:
                        break
                    size += len(block)
                    checksum.update(block)
    except OSError:  # gone (BeamIOError is an OSError)
        return None
    return [size, checksum.hexdigest().decode("ascii")]


def kept_shard(resume: ShardResume, shard_path: str, fragments: List[FragmentReport],
               stores: Optional[ObjectStores], files: Sequence[str] = ()
               ) -> Optional[ShardReport]:
    """The report of the shard at `shard_path` when a killed run merged it from these very
    `fragments` and its file checks out; else None (it is merged again). `files`: the
    shard's files when it is more than `shard_path` (a text shard's two, whose size and
    crc32c the report has together: `RecordFormat.files`)."""
    if not resume.look:
        return None
    try:
        manifest = json.loads(file_io.read_bytes(_manifest_path(resume, shard_path), stores))
    except (OSError, ValueError):  # none, or cut short
        return None
    if not isinstance(manifest, dict) or manifest.get("version") != VERSION or \
            manifest.get("key") != resume.key or \
            manifest.get("fragments") != fragment_identity(fragments):
        return None
    report: Dict[str, Any] = manifest.get("report") or {}
    if _file_check(files or [shard_path], stores) != [report.get("bytes"), report.get("crc32c")]:
        return None
    return report  # type: ignore[return-value]  # a ShardReport, as written below


def record_shard(resume: ShardResume, shard_path: str, fragments: List[FragmentReport],
                 report: ShardReport, stores: Optional[ObjectStores]) -> None:
    """The shard's manifest, written whole once its file is."""
    manifest = {"version": VERSION, "key": resume.key,
                "fragments": fragment_identity(fragments), "report": report}
    file_io.write_bytes_atomically(_manifest_path(resume, shard_path),
                                   json.dumps(manifest, sort_keys=True).encode(), stores)
