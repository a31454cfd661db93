"""Chunk manifests: what lets a rerun keep the encode chunks a killed run had finished.

A run killed mid-encode (kill -9 of the whole tree, a lost driver, SIGTERM at a SLURM
walltime) has finished some chunks: their fragments are whole files (each written atomically),
but nothing says which chunk wrote all of its own. So a chunk writes its fragments first and
its manifest last, one small JSON file per chunk (`manifest_name`): the run's resume key (a
digest of the output fingerprint: the flags that change the bytes and every input's path, size
and mtime), the chunk itself (which lines, files, offsets and shard range; a path inside the
run's own work directory written as `{run}`, since a rerun has another run id), every fragment
with its byte size and crc32c, and every other output the chunk gave (rejects, token and
length counts) with its counter increments. The manifest's presence means the chunk is whole.

A rerun with the same key reads a chunk's manifest before encoding it (`reusable`): when the
key and the chunk are the same and every fragment is there with its size and checksum, the
outputs are replayed (`replay`) and nothing is encoded; anything else (another key, chunks
cut otherwise, a fragment missing, truncated or changed, a manifest unreadable) is encoded
again, rewriting its fragments under the same names with the same bytes. Verifying reads each
fragment once: the rerun trusts content, never names or timestamps.
"""

import json
from typing import Any, Dict, Iterator, List, NamedTuple, Optional

import google_crc32c
from apache_beam.pvalue import TaggedOutput

from transforms.contracts.elements import Chunk, ChunkLengths
from transforms.reporting.job_metrics import JobCounters
from transforms.storage import file_io, paths
from transforms.storage.object_stores import ObjectStores

MAIN = "records"  # the encode DoFn's main output: ((split, shard), fragment report)
VERSION = 1


class Resume(NamedTuple):
    """Where an encode pass keeps what a rerun may reuse: `key`, the resume key of the run's
    fingerprint; `manifest_dir`, the chunks' manifests; `run_dir`, the run's own work
    directory (its paths in a chunk stand as `{run}`); `look`: whether the directory held
    manifests when the pass started (a first run asks the store for none)."""
    key: str
    manifest_dir: str
    run_dir: str
    look: bool


def manifest_name(chunk: Chunk) -> str:
    """One name per encode chunk of a line-aligned pair: split, dataset and first line."""
    ds = chunk["ds"]
    return "%s-d%d-l%d.json" % (ds["split"], ds["index"], chunk["first_line"])


def chunk_identity(chunk: Chunk, run_dir: str) -> Any:
    """The chunk as JSON would give it back, its run's work directory written `{run}`."""
    text = json.dumps(chunk, sort_keys=True).replace(json.dumps(run_dir)[1:-1], "{run}")
    return json.loads(text)


def fragment_check(data: bytes) -> List[int]:
    """[size, crc32c] of a fragment's bytes, as its manifest records them."""
    return [len(data), google_crc32c.value(data)]


class ChunkRecorder(JobCounters):
    """The encode DoFn's counters, which also keep what one chunk added (`take`), for its
    manifest."""

    def __init__(self) -> None:
        super().__init__()
        self.added: Dict[str, int] = {}

    def inc(self, name: str, n: int = 1) -> None:
        super().inc(name, n)
        if n:
            self.added[name] = self.added.get(name, 0) + n

    def take(self) -> Dict[str, int]:
        added, self.added = self.added, {}
        return added


def _output_json(output: Any, checks: Dict[str, List[int]]) -> list:
    if isinstance(output, TaggedOutput):
        key, value = output.value
        if isinstance(value, ChunkLengths):
            value = [sorted(h.items()) if isinstance(h, dict) else h for h in value]
        return [output.tag, key, value]
    (split, shard), report = output
    name = paths.split(report["path"])[1]
    return [MAIN, [split, shard], dict(report, path=name, check=checks[report["path"]])]


def write_manifest(chunk: Chunk, outputs: List[Any], checks: Dict[str, List[int]],
                   counters: Dict[str, int], resume: Resume, stores: Optional[ObjectStores]) -> None:
    """The chunk's manifest, written whole once its fragments are (`checks`: {fragment path:
    [size, crc32c]}; `outputs`: what the DoFn yields for the chunk)."""
    manifest = {"version": VERSION, "key": resume.key,
                "chunk": chunk_identity(chunk, resume.run_dir),
                "outputs": [_output_json(o, checks) for o in outputs],
                "counters": counters}
    file_io.write_bytes_atomically(paths.join(resume.manifest_dir, manifest_name(chunk)),
                                   json.dumps(manifest, sort_keys=True).encode(), stores)


def _fragment_whole(path: str, check: List[int], stores: Optional[ObjectStores]) -> bool:
    try:
        return fragment_check(file_io.read_bytes(path, stores)) == check
    except OSError:  # gone (BeamIOError is an OSError)
        return False


def reusable(chunk: Chunk, resume: Resume, fragment_dir: str,
             stores: Optional[ObjectStores]) -> Optional[Dict[str, Any]]:
    """The chunk's manifest when every part of it holds (the key, the chunk, each fragment's
    size and crc32c), else None: the chunk is encoded again."""
    try:
        manifest = json.loads(file_io.read_bytes(
            paths.join(resume.manifest_dir, manifest_name(chunk)), stores))
    except (OSError, ValueError):  # none (BeamIOError is an OSError), or cut short
        return None
    if not isinstance(manifest, dict) or manifest.get("version") != VERSION or \
            manifest.get("key") != resume.key or \
            manifest.get("chunk") != chunk_identity(chunk, resume.run_dir):
        return None
    for tag, _, value in manifest["outputs"]:
        if tag == MAIN and not _fragment_whole(paths.join(fragment_dir, value["path"]),
                                               value["check"], stores):
            return None
    return manifest


def replay(manifest: Dict[str, Any], fragment_dir: str) -> Iterator[Any]:
    """The outputs a chunk gave when it was encoded, as the DoFn yields them."""
    for tag, key, value in manifest["outputs"]:
        if tag == MAIN:
            report = {k: v for k, v in value.items() if k != "check"}
            report["path"] = paths.join(fragment_dir, value["path"])
            yield tuple(key), report
        elif isinstance(value, list) and len(value) == 5 and tag == "lengths":
            inputs, targets, pair = ({int(k): n for k, n in h} for h in value[:3])
            yield TaggedOutput(tag, (key, ChunkLengths(inputs, targets, pair, value[3],
                                                       value[4])))
        else:
            yield TaggedOutput(tag, (key, value))


