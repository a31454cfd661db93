"""Progress marks: how far a running pass is, as empty files its stages leave under the run's
work directory, one per unit of work planned or done.

A runner says little about a pass while it runs (the in-process runner nothing, until it
ends), and counters are not read back mid-pass on every runner. A file is: the driver lists
the pass's marks directory (one listing, on a local disk or a bucket alike, as it lists the
encode pass's fragments) and says per stage how many units are done of how many. A mark's
name comes from the unit itself, so a retried bundle writes the same names again and a unit
counts once.

Layout: `{marks dir}/{stage}/{name}`. A learner states its pass's stages as data
(`ProgressStage`, in `transforms.vocab.learners.VocabPass`), so the driver's line follows
whatever stages and rounds a pass has; `stage_progress` reads them against the marks.
"""

import dataclasses
import hashlib
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores, StoreSettings

Marks = Dict[str, List[str]]  # {stage: [mark names]}


class ProgressMarks(NamedTuple):
    """Where a pass's marks go (its own directory under the work directory) and how its
    store is reached; plain values: it pickles to every worker."""
    directory: str
    store_settings: StoreSettings


def mark_name(*parts: Any) -> str:
    """A mark's name from what identifies its unit: short and safe as a file name."""
    return hashlib.sha1(repr(parts).encode("utf-8")).hexdigest()[:16]


def write_mark(marks: ProgressMarks, stores: ObjectStores, stage: str, name: str) -> None:
    """Leaves the mark `name` of `stage` (an empty file)."""
    file_io.write_bytes_atomically(FileSystems.join(marks.directory, stage, name), b"", stores)


class _MarkEachFn(beam.DoFn):
    """Leaves a mark per element (`names(element)`: the marks it stands for); outputs
    nothing."""

    def __init__(self, marks: ProgressMarks, stage: str,
                 names: Callable[[Any], Sequence[str]]) -> None:
        self._marks = marks
        self._stage = stage
        self._names = names

    def setup(self) -> None:
        self._stores = ObjectStores(self._marks.store_settings)

    def process(self, element: Any) -> Iterator[None]:
        for name in self._names(element):
            write_mark(self._marks, self._stores, self._stage, name)
        return iter(())


class MarkEach(beam.PTransform):
    """A leaf beside a stage's output: a mark in `stage` per element, named by
    `names(element)` (a module-level function: it pickles). Fused with the stage that
    produces the elements, a mark appears as each element is produced."""

    def __init__(self, marks: ProgressMarks, stage: str,
                 names: Callable[[Any], Sequence[str]]) -> None:
        super().__init__()
        self._marks = marks
        self._stage = stage
        self._names = names

    def expand(self, elements: beam.PCollection) -> beam.PCollection:
        return elements | beam.ParDo(_MarkEachFn(self._marks, self._stage, self._names))


def read_marks(directory: str, stores: Optional[ObjectStores] = None) -> Marks:
    """{stage: mark names} under `directory`, from one listing (temporaries left out)."""
    prefix = directory.rstrip("/") + "/"
    found: Marks = {}
    pattern = FileSystems.join(file_io.glob_literal(directory), "*", "*")
    for path, _, _ in file_io.match_files(pattern, stores):
        stage, _, name = path[len(prefix):].partition("/")
        if name and "/" not in name and not file_io.is_temporary_name(name):
            found.setdefault(stage, []).append(name)
    return found


@dataclasses.dataclass(frozen=True)
class ProgressStage:
    """A stage of a pass as the log names it (`label`, its units `unit`): its units done are
    the marks of stage `done` whose names start with `prefix`; how many it has is `total`,
    or, when None, the marks of stage `planned` with that prefix (a stage whose units are
    known only once it runs: a file's sample parts, a bisection round's probes)."""
    label: str
    unit: str
    done: str
    total: Optional[int] = None
    planned: Optional[str] = None
    prefix: str = ""


def stage_progress(stages: Sequence[ProgressStage], marks: Marks
                   ) -> List[Tuple[ProgressStage, int, Optional[int]]]:
    """(stage, units done, units in all or None when not known yet) of each stage in order."""
    counted = []
    for stage in stages:
        done = sum(1 for n in marks.get(stage.done, ()) if n.startswith(stage.prefix))
        total = stage.total
        if total is None and stage.planned is not None:
            planned = sum(1 for n in marks.get(stage.planned, ()) if n.startswith(stage.prefix))
            total = planned or None
        counted.append((stage, done, total))
    return counted
