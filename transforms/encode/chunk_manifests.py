"""Chunk manifests: what lets a rerun keep the encode chunks a killed run had finished.

A run killed mid-encode (kill -9 of the whole tree, a lost driver, SIGTERM at a SLURM
walltime) has finished some chunks, but nothing says which chunk's records are all in whole
fragment files. An encode DoFn gathers its chunks' runs in a fragment group
(`transforms.shards.fragment_groups`) and, each time it writes the group's files (when they
hold --fragment_group_mb, and at the end of a bundle), writes a manifest of the chunks finished
since its last one, last: one small JSON file per group, not per chunk, named after its first
chunk and the lines of them all (`lines_done`: the pass's progress). It holds the run's resume
key (a digest of the output fingerprint: the flags that change the bytes and every input's
path, size and mtime), each fragment file's byte size and crc32c, and per chunk: the chunk
itself (which lines, files, offsets and shard range; a path inside the run's own work
directory written as `{run}`, since a rerun has another run id) and every output the chunk gave
(fragment reports, rejects, token and length counts) with its counter increments. A chunk in
a manifest is whole.

A rerun with the same key reads every manifest once per DoFn (`ManifestIndex`: a listing and a
read per group) before it encodes a chunk: when the key and the chunk are the same and every
fragment file it names is there with its size and checksum, the outputs are replayed (`replay`)
and nothing is encoded; anything else (another key, chunks cut otherwise, a file missing,
truncated or changed, a manifest unreadable) is encoded again, into files of its new group.
Verifying reads each file once: the rerun trusts content, never names or timestamps. What a
kill loses is the chunks of groups not yet written: at most --fragment_group_mb of encoded
bytes per worker, or a bundle's chunks.
"""

import json
import os
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Tuple

import google_crc32c
from apache_beam.io.filesystems import FileSystems
from apache_beam.pvalue import TaggedOutput

from transforms.contracts.elements import Chunk, ChunkLengths
from transforms.reporting.job_metrics import JobCounters
from transforms.storage import file_io, paths
from transforms.storage.object_stores import ObjectStores

MAIN = "records"  # the encode DoFn's main output: ((split, shard), fragment report)
VERSION = 2  # 2: a manifest per group of chunks (`FragmentGroup`)


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


def _output_json(output: Any) -> list:
    if isinstance(output, TaggedOutput):
        key, value = output.value
        if isinstance(value, ChunkLengths):
            value = [sorted(h.items()) if isinstance(h, dict) else h for h in value]
        return [output.tag, key, value]
    (split, shard), report = output
    return [MAIN, [split, shard], dict(report, path=paths.split(report["path"])[1])]


FinishedChunk = Tuple[Chunk, List[Any], Dict[str, int]]
"""(chunk, what the DoFn yielded for it, the counters it added): a chunk whose manifest waits
for its group's files."""


def write_manifest(finished: List[FinishedChunk], checks: Dict[str, List[int]],
                   resume: Resume, stores: Optional[ObjectStores]) -> None:
    """One manifest of the chunks `finished` since an encode DoFn's last one, written once
    every fragment file they name is (`checks`: {fragment path: [size, crc32c]}), named
    after the first chunk and the lines of them all (`lines_done`)."""
    names = {paths.split(report["path"])[1] for _, outputs, _ in finished
             for report in _reports(outputs)}
    manifest = {"version": VERSION, "key": resume.key,
                "checks": {paths.split(path)[1]: check for path, check in checks.items()
                           if paths.split(path)[1] in names},
                "chunks": [{"chunk": chunk_identity(chunk, resume.run_dir),
                            "outputs": [_output_json(o) for o in outputs],
                            "counters": counters} for chunk, outputs, counters in finished]}
    lines = sum(chunk["num_lines"] for chunk, _, _ in finished)
    name = manifest_name(finished[0][0])[:-len(".json")] + "+%d.json" % lines
    file_io.write_bytes_atomically(paths.join(resume.manifest_dir, name),
                                   json.dumps(manifest, sort_keys=True).encode(), stores)


def _reports(outputs: List[Any]) -> Iterator[Dict[str, Any]]:
    for output in outputs:
        if not isinstance(output, TaggedOutput):
            yield output[1]


def lines_done(directory: str, stores: Optional[ObjectStores]) -> int:
    """The lines of the chunks whose manifests are in `directory`, from their names (one
    listing, an object per group): the encode pass's progress where the runner reports no
    counters while it runs."""
    done = 0
    for name in _names(directory, stores):
        if name.endswith(".json") and not file_io.is_temporary_name(name):
            try:
                done += int(name[:-len(".json")].rpartition("+")[2])
            except ValueError:  # a manifest of an older version, named after one chunk
                pass
    return done


def _names(directory: str, stores: Optional[ObjectStores]) -> List[str]:
    listed = file_io.list_prefix(directory, stores)
    if listed is not None:
        return sorted(paths.split(p)[1] for p in listed)
    if file_io.is_local(directory):
        try:
            return sorted(os.listdir(directory))
        except FileNotFoundError:
            return []
    return sorted(paths.split(m.path)[1] for m in FileSystems.match(
        [paths.join(file_io.glob_literal(directory), "*.json")])[0].metadata_list)


class ManifestIndex:
    """The manifests a killed run left, read once (a listing of their directory and a read
    of each: one per group, not per chunk) by each encode DoFn that asks about a chunk."""

    def __init__(self, resume: Resume, fragment_dir: str, stores: Optional[ObjectStores]
                 ) -> None:
        self._resume = resume
        self._fragment_dir = fragment_dir
        self._stores = stores
        self._chunks: Dict[str, Tuple[Dict[str, Any], Dict[str, List[int]]]] = {}
        self._whole: Dict[str, bool] = {}  # fragment name -> its bytes are as recorded
        for name in _names(resume.manifest_dir, stores):
            try:
                manifest = json.loads(file_io.read_bytes(
                    paths.join(resume.manifest_dir, name), stores))
            except (OSError, ValueError):  # gone, or cut short
                continue
            if isinstance(manifest, dict) and manifest.get("version") == VERSION and \
                    manifest.get("key") == resume.key:
                for entry in manifest["chunks"]:
                    self._chunks[manifest_name(entry["chunk"])] = (entry, manifest["checks"])

    def _fragment_whole(self, name: str, check: Optional[List[int]]) -> bool:
        if name not in self._whole:
            try:
                data = file_io.read_bytes(paths.join(self._fragment_dir, name), self._stores)
                self._whole[name] = fragment_check(data) == check
            except OSError:  # gone (BeamIOError is an OSError)
                self._whole[name] = False
        return self._whole[name]

    def reusable(self, chunk: Chunk) -> Optional[Dict[str, Any]]:
        """The chunk's manifest entry when every part of it holds (the key, the chunk, each
        fragment file's size and crc32c), else None: the chunk is encoded again."""
        found = self._chunks.get(manifest_name(chunk))
        if found is None:
            return None
        entry, checks = found
        if entry["chunk"] != chunk_identity(chunk, self._resume.run_dir):
            return None
        for tag, _, value in entry["outputs"]:
            if tag == MAIN and not self._fragment_whole(value["path"],
                                                        checks.get(value["path"])):
                return None
        return entry


def replay(manifest: Dict[str, Any], fragment_dir: str) -> Iterator[Any]:
    """The outputs a chunk gave when it was encoded, as the DoFn yields them."""
    for tag, key, value in manifest["outputs"]:
        if tag == MAIN:
            report = dict(value)
            report["path"] = paths.join(fragment_dir, value["path"])
            yield tuple(key), report
        elif isinstance(value, list) and len(value) in (5, 6) and tag == "lengths":
            # a manifest written before the ratio histogram has none: the card says so
            ratio_items = value[5] if len(value) == 6 else []
            inputs, targets, pair, ratio = ({int(k): n for k, n in h}
                                            for h in value[:3] + [ratio_items])
            yield TaggedOutput(tag, (key, ChunkLengths(inputs, targets, pair, value[3],
                                                       value[4], ratio)))
        else:
            yield TaggedOutput(tag, (key, value))


