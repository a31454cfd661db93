"""Builders of pipeline/driver's objects for the unit tests in tests/pipeline/driver/: the one
place that knows how the steps are constructed (their arguments move as the config is split
per step), so the tests themselves speak only of command lines, files and outcomes.

Every builder takes a DatagenConfig made from a command line (`config`), as a run does.
No builder runs a Beam pipeline: a PassRunner here is a dry run's (a pass is built and
translated, never run).
"""

import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.pipeline import PipelineVisitor

from pipeline.driver.cleaning import CleaningStep, load_cleaning
from pipeline.driver.encode import EncodeStep
from pipeline.driver.job import DatagenJob
from pipeline.driver.job_record import JobRecord
from pipeline.driver.kinds import kind_plugin
from pipeline.driver.options import Command, parse_command_line
from pipeline.driver.passes import PassRunner
from pipeline.driver.prepare import Prepared, PrepareStep
from pipeline.driver.vocab_passes import VocabPassDriver
from pipeline.driver.vocabularies import VocabStep
from pipeline.output.layout import OutputLayout
from transforms.cleaning.config import CleaningConfig
from transforms.contracts.config import DatagenConfig
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores, StoreSettings

DIRECT = ("--runner", "DirectRunner")


def command_line(argv: Sequence[str]) -> Tuple[DatagenConfig, List[str]]:
    """(config, Beam's arguments) of a command line, checked as `python -m pipeline.datagen`
    checks it before any work (`parse_command_line`: unknown flags refused, then the job's
    own flags checked). Raises DatagenError (the command's exit 2) for a bad one."""
    command = parse_command_line(list(argv))
    return command.config, command.beam_args


def write(path, text: str = "") -> str:
    """A file of `text` (UTF-8) at `path`, its directory made; its path as a str."""
    path = str(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def corpus(tmp_path, lines: int = 3, name: str = "train") -> Tuple[str, str]:
    """(source, target): a line-aligned pair of files `{name}.en`, `{name}.de`."""
    return (write(tmp_path / "in" / (name + ".en"),
                  "".join("hello %d\n" % i for i in range(lines))),
            write(tmp_path / "in" / (name + ".de"),
                  "".join("hallo %d\n" % i for i in range(lines))))


def config(tmp_path, *flags: str, train: Optional[Tuple[str, str]] = None) -> DatagenConfig:
    """The config of a run into `tmp_path/out` over `train` (by default, unless `flags`
    name train data, a 3-line corpus under tmp_path), with `flags` added (a later flag wins
    over the defaults given here)."""
    argv = ["--output_dir", str(tmp_path / "out")]
    if train or not {"--train_source", "--train_tsv", "--train_tmx", "--corpora"} & set(flags):
        source, target = train or corpus(tmp_path)
        argv += ["--train_source", source, "--train_target", target]
    return parse_command_line(argv + list(flags)).config


def layout(config: DatagenConfig, run_id: str = "run1") -> OutputLayout:
    """The run's OutputLayout, as DatagenJob makes it."""
    job = config.job
    return OutputLayout(file_io.absolute(job.output_dir), job.problem, config.vocab.vocab_size,
                        run_id, job.output_format)


def stores() -> ObjectStores:
    """The job's object-store clients (made on first use; none for local paths)."""
    return ObjectStores(StoreSettings.from_options(PipelineOptions(list(DIRECT))))


def pass_runner() -> "RecordingPasses":
    """A dry run's PassRunner on DirectRunner: passes are built and translated, not run."""
    return RecordingPasses(PipelineOptions(list(DIRECT) + ["--dry_run", "true"]),
                           lambda: None)


class RecordingPasses(PassRunner):
    """A PassRunner that keeps each pass's label and built pipeline (`passes`), so a test can
    see what a step built: `applied(pipeline)`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.passes: List[Tuple[str, beam.Pipeline]] = []

    def __call__(self, label: str, build: Callable[[beam.Pipeline], Any],
                 progress: Optional[Callable[[float], str]] = None) -> float:
        def recorded(p: beam.Pipeline) -> Any:
            self.passes.append((label, p))
            return build(p)
        return super().__call__(label, recorded, progress)


def applied(pipeline: beam.Pipeline) -> Dict[str, Any]:
    """{full label: PTransform} of every transform applied in `pipeline`."""
    found: Dict[str, Any] = {}

    class Visitor(PipelineVisitor):
        def visit_transform(self, node: Any) -> None:
            found[node.full_label] = node.transform

        def enter_composite_transform(self, node: Any) -> None:
            found[node.full_label] = node.transform

    pipeline.visit(Visitor())
    return found


def created(pipeline: beam.Pipeline, label: str) -> List[Any]:
    """The elements the `beam.Create` labelled `label` starts the pipeline with."""
    return list(applied(pipeline)[label].values)


def prepare_step(config: DatagenConfig, layout: OutputLayout) -> PrepareStep:
    return PrepareStep(layout, config.read, stores())


def cleaning_config(config: DatagenConfig) -> CleaningConfig:
    """The run's cleaning, its --filters file read and checked (DatagenError: one line)."""
    return load_cleaning(config.clean, config.inputs)


def cleaning_step(config: DatagenConfig, layout: OutputLayout) -> CleaningStep:
    """The cleaning step, its --filters file loaded (as the job does first in `run`)."""
    step = CleaningStep(layout, config.clean, config.inputs, config.read.on_invalid_utf8,
                        stores())
    step.load()
    return step


def encode_step(config: DatagenConfig, layout: OutputLayout, run_pass: PassRunner
                ) -> EncodeStep:
    return EncodeStep(layout, config, run_pass, stores())


def vocab_step(config: DatagenConfig, layout: OutputLayout, run_pass: PassRunner) -> VocabStep:
    return VocabStep(config, kind_plugin(config.vocab.vocab_type), layout, run_pass, stores())


def vocab_pass_driver(run_pass: PassRunner) -> VocabPassDriver:
    return VocabPassDriver(run_pass, stores())


def job_record(config: DatagenConfig, layout: OutputLayout, run_pass: PassRunner,
               beam_args: Sequence[str] = DIRECT) -> JobRecord:
    return JobRecord(config, PipelineOptions(list(beam_args)), layout, run_pass, stores())


def datagen_job(config: DatagenConfig, beam_args: Sequence[str] = DIRECT) -> DatagenJob:
    return DatagenJob(Command(config, kind_plugin(config.vocab.vocab_type), list(beam_args)))


def flag_dict(config: DatagenConfig) -> Dict[str, object]:
    """{flag: value} of the run's flags (what the fingerprint and the summary record)."""
    return config.flags()


def facts(lines: int, size: int, every: int = 0) -> Dict[str, object]:
    """A file's facts as the prepare step's scan reports them (`every`: a seek point every
    this many lines, at a made-up offset, 0: only the start)."""
    points = [(n, n * 10) for n in range(0, lines, every)] if every else [(0, 0)]
    return {"bytes": size, "lines": lines, "checkpoints": points,
            "first_invalid_utf8_line": None}


def prepared(split: str, index: int, source: str, target: str, lines: int, every: int = 0,
             **more: object) -> Prepared:
    """A dataset as the prepare step hands it on: line files `source`, `target` of `lines`
    lines each (10 bytes a line)."""
    ds = {"split": split, "index": index, "name": os.path.basename(source), "format": "lines",
          "source": source, "target": target}
    return Prepared(ds, source, target, facts(lines, lines * 10, every),
                    facts(lines, lines * 10, every), lines, **more)  # type: ignore[arg-type]
