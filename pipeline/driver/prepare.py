"""The prepare step: every dataset as line-aligned files with known facts, or a bad-input error.

Line-aligned text is read in place: `ScanTextFiles` counts its lines and bytes, finds the
seek points the encoder chunks at and checks UTF-8. Every other dataset (TSV, TMX, SGM,
IWSLT, archive members) is converted into two line files by `MaterializeDatasets`. The
driver then checks these facts (`PrepareStep.read_back`) and stops before anything is
written when the input is bad (unless the user asked for rejects).

When every dataset is read in place and a vocabulary is learnt, this step rides along in the
first vocab pass instead of a pipeline of its own (`rides_along`): each pipeline costs about
a second of building, submitting and winding down, a large part of a small job's time, and
the sampler takes the file sizes from the same scan.
"""

import dataclasses
import functools
import logging
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import apache_beam as beam
from apache_beam.typehints.decorators import no_annotations

from pipeline.driver.datasets import Dataset
from pipeline.driver.passes import PassRunner
from pipeline.output.layout import OutputLayout
from pipeline.runtime.errors import DatagenError
from transforms.contracts.config import ReadConfig
from transforms.contracts.elements import DatasetSpec, FileFacts
from transforms.storage import file_io
from transforms.prepare.file_scan import RANGE_BYTES, ScanTextFiles
from transforms.reporting.json_result import WriteJsonResult
from transforms.prepare.materialize import MaterializeDatasets
from transforms.storage.object_stores import ObjectStores

LOG = logging.getLogger("datagen")


@dataclasses.dataclass
class Prepared:
    """A dataset with the line-aligned files the rest of the job reads."""
    ds: DatasetSpec
    source_lines: str
    target_lines: str
    source_facts: FileFacts
    target_facts: FileFacts
    units: int                      # pairs (or units) read from the original input
    rejects_path: Optional[str] = None  # rejects found while materializing
    # what the cleaning step (pipeline.driver.cleaning) dropped, when it dropped anything:
    dropped: Optional[str] = None        # the bitmap of dropped line numbers
    dropped_bytes: Tuple[int, int] = (0, 0)  # bytes of the dropped lines, per side
    cleaning_rejects: Optional[str] = None   # their rejects (with reasons)
    dropped_pairs: int = 0                   # how many lines of each side it dropped


class PrepareInputs(beam.PTransform):
    """Scans the line-aligned files in `paths` and materializes the `structured` datasets.

    Applied to the pipeline; writes the facts to `result_path` and returns the (path, facts)
    of the scanned files, so a vocab pass in the same pipeline can size its samples.
    """

    def __init__(self, paths: List[str], structured: List[DatasetSpec], work_dir: str,
                 read: ReadConfig, result_path: str, ranged: bool = True) -> None:
        super().__init__()
        self._paths = paths
        self._ranged = ranged  # some file may be scanned in byte ranges
        self._structured = structured
        self._work_dir = work_dir
        self._read = read  # transforms.contracts.config.ReadConfig
        self._result_path = result_path

    @no_annotations  # Beam takes PCollection hints only: this one may return None
    def expand(self, pbegin: beam.pvalue.PBegin) -> Optional[beam.PCollection]:
        outputs = {}
        scanned = None
        if self._paths:
            scanned = (pbegin | "Paths" >> beam.Create(self._paths, reshuffle=False)
                       | "Scan" >> ScanTextFiles(self._read.encode_chunk_lines,
                                                 RANGE_BYTES if self._ranged else None))
            outputs["files"] = scanned | "AsList" >> beam.Map(list)
        if self._structured:
            outputs["materialized"] = (
                pbegin | "Datasets" >> beam.Create(self._structured, reshuffle=False)
                | "Materialize" >> MaterializeDatasets(self._work_dir, self._read))
        _ = outputs | "Result" >> WriteJsonResult(self._result_path)
        return scanned


def _apply_prepare(p, transform):
    return p | "Prepare" >> transform


@dataclasses.dataclass(frozen=True)
class RidingPrepare:
    """The prepare stage as it rides along another pass: `add(pipeline)` applies it and
    returns its scan ((path, facts) of the files read in place, or None), `label` says what
    it does ("scan 4 files")."""
    add: Callable[[beam.Pipeline], Optional[beam.PCollection]]
    label: str


def _maybe_over(path: str, size: int) -> bool:
    """Whether `path` may be larger than `size` bytes: a local file's size is known at once
    (a file gone now is its scan's error to report); a store's is not asked on the driver."""
    if not file_io.is_local(path):
        return True
    try:
        return any(found > size for _, found, _ in file_io.match_files(file_io.glob_literal(path)))
    except Exception:
        return False


def every_dataset(datasets: Mapping[str, List[Dataset]]) -> List[Dataset]:
    """{split: [Dataset]} as one list, splits in order."""
    return [ds for split in sorted(datasets) for ds in datasets[split]]


def rides_along(datasets: Mapping[str, List[Dataset]], to_learn: Mapping[str, object]) -> bool:
    """Whether the prepare step runs inside the first vocab pass: every dataset is read in
    place (nothing to materialize first), some vocabulary is learnt, and it is not a mix of
    several corpora (which needs every file's lines to plan its sample)."""
    return bool(to_learn) and all(ds.read_in_place and ds.pair is None
                                  for ds in every_dataset(datasets))


class PrepareStep:
    """Builds the prepare stage and reads its facts back (`layout`: the OutputLayout,
    `read`: the run's ReadConfig)."""

    def __init__(self, layout: OutputLayout, read: ReadConfig,
                 stores: Optional[ObjectStores] = None) -> None:
        self._layout = layout
        self._read = read
        self._stores = stores  # the job's ObjectStores

    def transform(self, datasets: Mapping[str, List[Dataset]]) -> Tuple[PrepareInputs, str]:
        """(the prepare stage of `datasets` as a transform to apply to a pipeline, its label)."""
        every = every_dataset(datasets)
        structured = [ds.spec() for ds in every if not ds.read_in_place]
        paths = sorted({p for ds in every if ds.read_in_place for p in (ds.source, ds.target)
                        if p is not None})  # (a dataset read in place has both files)
        label = ", ".join(part for part in (
            "scan %d files" % len(paths) if paths else "",
            "convert %d datasets" % len(structured) if structured else "") if part)
        return PrepareInputs(paths, structured, self._layout.work("materialized"), self._read,
                             self._layout.work("prepare.json"),
                             any(_maybe_over(path, RANGE_BYTES) for path in paths)), label

    def riding(self, datasets: Mapping[str, List[Dataset]]) -> "RidingPrepare":
        """The prepare stage riding along the first vocab pass (`pipeline.driver.vocab_passes`
        adds it; the job reads its facts back once that pass is done: `read_back`)."""
        transform, label = self.transform(datasets)
        return RidingPrepare(functools.partial(_apply_prepare, transform=transform), label)

    def build(self, datasets: Mapping[str, List[Dataset]]
              ) -> Tuple[str, Callable[[beam.Pipeline], Any]]:
        """(label, build(pipeline)) of the prepare pass on its own."""
        transform, label = self.transform(datasets)
        return "prepare: " + label, lambda p: p | "Prepare" >> transform

    def run(self, run_pass: PassRunner, datasets: Mapping[str, List[Dataset]]
            ) -> Dict[str, List[Prepared]]:
        """Runs the prepare pass; returns {split: [Prepared]} or raises DatagenError."""
        run_pass(*self.build(datasets))
        return self.read_back(datasets)

    def read_back(self, datasets: Mapping[str, List[Dataset]]) -> Dict[str, List[Prepared]]:
        """The prepare stage's facts as {split: [Prepared]}; raises DatagenError on bad input."""
        read = self._read
        result = file_io.read_work_json(self._layout.work("prepare.json"), self._stores)
        facts = dict(result.get("files", []))
        materialized = {(m["split"], m["index"]): m for m in result.get("materialized", [])}
        problems: List[str] = []
        warned = set()
        prepared: Dict[str, List[Prepared]] = {split: [] for split in datasets}
        for ds in every_dataset(datasets):
            if ds.read_in_place:
                assert ds.target is not None  # a dataset read in place has both files
                sf, tf_ = facts[ds.source], facts[ds.target]
                unreadable = [fact["error"] for fact in (sf, tf_) if "error" in fact]
                if unreadable:
                    problems.extend(e for e in unreadable if e not in problems)
                    continue
                for path, fact in ((ds.source, sf), (ds.target, tf_)):
                    if path not in warned:
                        warned.add(path)
                        for warning in fact.get("warnings", []):
                            LOG.warning("%s", warning)
                    if fact["first_invalid_utf8_line"] and read.on_invalid_utf8 == "error":
                        problems.append("%s:%d: invalid UTF-8 (--on_invalid_utf8 reject|replace "
                                        "to go on)" % (path, fact["first_invalid_utf8_line"]))
                if sf["lines"] != tf_["lines"] and read.on_misaligned == "error":
                    problems.append("%s: line counts differ: %s has %d lines, %s has %d lines" % (
                        ds.split, ds.source, sf["lines"], ds.target, tf_["lines"]))
                prepared[ds.split].append(Prepared(ds.spec(), ds.source, ds.target,
                                                   sf, tf_, max(sf["lines"], tf_["lines"])))
            else:
                m = materialized[(ds.split, ds.index)]
                if "error" in m:
                    problems.append(m["error"])
                    continue
                for side in ("source", "target"):
                    for warning in m["facts"][side].get("warnings", []):
                        LOG.warning("%s", warning)
                prepared[ds.split].append(Prepared(
                    ds.spec(), m["source_path"], m["target_path"],
                    m["facts"]["source"], m["facts"]["target"], m["units"], m["rejects_path"]))
        if problems:
            raise DatagenError("bad input, nothing written: " + "; ".join(problems))
        return prepared
