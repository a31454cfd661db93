"""OutputLayout: every name datagen writes in --output_dir, in one place.

Final outputs carry Tensor2Tensor's names. Work in progress lives under `.datagen-work/`,
whose names no reader's `{problem}-train*` glob matches.
"""

import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple

from transforms.formats.checked_decompress import strip_compression_suffix
from transforms.storage import paths
from transforms.shards.format_base import DEFAULT_LANGS
from transforms.shards.record_formats import (DEFAULT_FORMAT, ShardNames, problem_of_head,
                                              record_format)

if TYPE_CHECKING:
    from transforms.codecs.kinds import CodecKind


SUMMARY_NAME = "%s.datagen_summary.json"  # % problem: several problems may share a data_dir
COMPLETE_NAME = "%s.DATAGEN_COMPLETE"
LENGTHS_REPORT_NAME = "%s.lengths.html"  # the length report (`pipeline.output.length_report`)
CARD_NAME = "README.md"  # the dataset card (`pipeline.output.card`): Hugging Face's name
WORK_NAME = ".datagen-work"
REJECTS_NAME = "rejects"  # the directory of the rejected pairs' files
RESUME_PREFIX = "encode-"  # + resume key: `OutputLayout.resume_dir`


def lang_of(path: str) -> str:
    """Language suffix from a file name: `train.en.gz` (or `.xz`, `.zst`, ...) -> `en`, `test.zh.sgm` -> `zh`,
    `corpus.tgz!dir/train.de` -> `de` (compression and format extensions are skipped)."""
    name = strip_compression_suffix(os.path.basename(path.rsplit("!", 1)[-1]))
    for ext in (".sgm", ".xml"):
        if name.endswith(ext):
            name = name[:-len(ext)]
    return name.rsplit(".", 1)[-1] if "." in name else name


def summary_languages(summary: Dict[str, Any]) -> Tuple[str, str]:
    """The (source, target) languages a one-pair output's files end with, as its summary
    records them (`languages`: a text shard's `.en`/`.zh`); `src` and `tgt` for a summary
    written before it recorded them, whose text shards were named so."""
    langs = summary.get("languages")
    if isinstance(langs, list) and len(langs) == 2 and all(isinstance(x, str) for x in langs):
        return langs[0], langs[1]
    return DEFAULT_LANGS


def marked_problem(directory: str, head: str, exists: Callable[[str], bool]
                   ) -> Optional[str]:
    """The problem with a completion marker in `directory` that a shard name's head
    (`parse_shard_name`'s problem) belongs to (a language pair's own shards are
    `{problem}~{src}-{tgt}-{split}-...`: `problem_of_head`); None when it has no marker."""
    problem = problem_of_head(head)
    return problem if exists(paths.join(directory, COMPLETE_NAME % problem)) else None


class OutputLayout:
    """`run_id`: the run's own id (its lock's); its work files live under
    `.datagen-work/{problem}/{run_id}/`, so a run that lost its lock and is still finishing a
    pass can never write into the work files of the run that took the lock over.
    `output_format`: the shards' record format (`--output_format`), which `shards` names."""

    def __init__(self, output_dir: str, problem: str, vocab_size: int,
                 run_id: str = "run", output_format: str = DEFAULT_FORMAT) -> None:
        self.output_dir = output_dir
        self.problem = problem
        self.vocab_size = vocab_size
        self.run_id = run_id
        self.shards = ShardNames(problem, record_format(output_format))

    def name_languages(self, langs: Tuple[str, str]) -> None:
        """The (source, target) languages of a one-pair output, once the run knows them
        (`pipeline.driver.job`): a text shard's files end with them."""
        self.shards = ShardNames(self.problem, self.shards.format, langs)

    def path(self, *names: str) -> str:
        return paths.join(self.output_dir, *names)

    def vocab_path(self, kind: "CodecKind", lang: Optional[str] = None) -> str:
        """`vocab.{problem}.{size}.{suffix}[.lang]`: T2T's name with `subwords`, the other
        kinds' suffixes (`transforms.codecs.kinds`)."""
        name = "vocab.%s.%d.%s" % (self.problem, self.vocab_size, kind.file_suffix)
        return self.path(name + ("." + lang if lang else ""))

    @property
    def summary_path(self) -> str:
        return self.path(SUMMARY_NAME % self.problem)

    @property
    def lengths_report_path(self) -> str:
        return self.path(LENGTHS_REPORT_NAME % self.problem)

    @property
    def card_path(self) -> str:
        return self.path(CARD_NAME)

    @property
    def complete_path(self) -> str:
        return self.path(COMPLETE_NAME % self.problem)

    def rejects_path(self, split: str) -> str:
        return self.path(REJECTS_NAME, "%s-%s.jsonl" % (self.problem, split))

    @property
    def problem_work_dir(self) -> str:
        """Every run's work directories of this problem (leftovers of killed runs too)."""
        return self.path(WORK_NAME, self.problem)

    def resume_dir(self, key: str) -> str:
        """The encode pass's fragments and chunk manifests of runs whose output fingerprint
        gives resume `key`: kept when a run is killed or interrupted, so a rerun of the same
        fingerprint reuses its finished chunks (`pipeline.driver.resume`)."""
        return self.path(WORK_NAME, self.problem, RESUME_PREFIX + key)

    @property
    def work_dir(self) -> str:
        return self.path(WORK_NAME, self.problem, self.run_id)

    def work(self, *names: str) -> str:
        return paths.join(self.work_dir, *names)

    @property
    def vocab_work_dir(self) -> str:
        """The vocab learner's files (its passes' results and marks, the subword token
        indexes: 1.5x the output at the bench's size): a directory of their own, removed as
        soon as the vocabularies are written, before the encode pass fills the disk."""
        return self.work("vocab")
