"""DatagenConfig: the settings the passes and transforms read, typed and frozen.

`pipeline.driver.options.parse_command_line` builds it once from the checked flags
(`DatagenConfig.from_flags`) and the driver hands each step and transform the parts it reads,
instead of dicts re-defaulted wherever they were read. So a setting has one name and one default, the flag's (these classes have no
defaults on purpose), and a misspelt setting is an AttributeError at once rather than a
silent `.get` default. Nothing below `pipeline.driver.options` sees the argparse Namespace:
the job's own settings (`JobConfig`) and its input patterns (`InputConfig`) are here too, and
`flag_values` keeps every flag's value, in the flags' order, for the summary and the
fingerprint.

It lives in `transforms` and not in `pipeline` because DoFns carry it to the workers: every
field is a plain value (a kind's settings are a frozen dataclass of its learner's module, its
`loader` a Vocabulary class and options), so it pickles on any runner, and unpickling it
imports nothing of the driver.
"""

import dataclasses
from typing import Any, Dict, Mapping, Optional, Tuple

from transforms.codecs.vocabulary import VocabularyLoader


@dataclasses.dataclass(frozen=True)
class ReadConfig:
    """How input is read and which pairs are rejected (prepare, vocab sample and encode)."""
    on_invalid_utf8: str             # error | reject | replace
    on_misaligned: str               # error | reject
    max_line_chars: int              # 0: no limit
    source_lang: Optional[str]       # TMX xml:lang of the source side
    target_lang: Optional[str]
    source_column: int               # TSV columns
    target_column: int
    encode_chunk_lines: int          # a seek point every this many lines: encode chunks start there
    max_length: int                  # train pairs with a longer side over it are rejected (0: off)


@dataclasses.dataclass(frozen=True)
class VocabConfig:
    """What the vocabulary is and how it is learnt. The kind's own flags are its part,
    `kind_settings` (`pipeline.driver.kinds`); `loader` loads its vocabularies with the
    options they are built with (byte_bpe's EOS token)."""
    vocab_type: str
    vocab_size: int
    file_byte_budget: float
    max_subtoken_length: Optional[int]
    vocab_partitions: int
    bisection_lookahead: int
    bisection_rounds: int            # --bisection_rounds_per_pass
    shared_vocab: bool               # one vocabulary of both sides
    given: Tuple[str, ...]           # absolute paths of given vocabularies (none: learnt)
    loader: VocabularyLoader
    kind_settings: Any               # a frozen dataclass of the kind's own flags, or None


@dataclasses.dataclass(frozen=True)
class InputConfig:
    """The input flags as given (comma-separated patterns; listed by `pipeline.driver.datasets`)."""
    train_source: Optional[str]
    train_target: Optional[str]
    dev_source: Optional[str]
    dev_target: Optional[str]
    train_format: str                # auto | lines | sgm | iwslt
    dev_format: str
    train_tsv: Optional[str]
    dev_tsv: Optional[str]
    train_tmx: Optional[str]
    dev_tmx: Optional[str]


@dataclasses.dataclass(frozen=True)
class JobConfig:
    """Where the output goes and how the job runs (the driver's own settings)."""
    output_dir: str
    problem: str
    seed: int
    num_train_shards: int
    num_dev_shards: int
    output_format: str               # a name of transforms.record_formats.FORMATS
    packed_length: int               # pairs packed into records of this many ids (0: off)
    allow_empty: bool
    overwrite: bool
    lock_stale_seconds: float
    in_process_below_mb: float
    log_level: Optional[str]


@dataclasses.dataclass(frozen=True)
class CleanConfig:
    """Corpus cleaning (`transforms.cleaning`): off with no --filters and --dedup none. The
    --filters file is read and checked by the driver (`pipeline.driver.cleaning`)."""
    filters: Optional[str]           # a YAML file of OpusFilter filters
    dedup: str                       # none | pairs | source
    drop_dev_overlap: bool


@dataclasses.dataclass(frozen=True)
class DatagenConfig:
    read: ReadConfig
    vocab: VocabConfig
    inputs: InputConfig
    job: JobConfig
    clean: CleanConfig
    flag_values: Tuple[Tuple[str, Any], ...]  # (flag, value) of every flag, in their order

    @classmethod
    def from_flags(cls, flags: Mapping[str, Any], **derived: Any) -> "DatagenConfig":
        """The config of the job's flag values ({flag: value}, in the flags' order; checked
        by `pipeline.driver.options`): each field takes the flag of its name, but for the
        fields `derived` names (values made from flags: absolute paths, the kind's part)."""
        values = dict(flags, bisection_rounds=flags["bisection_rounds_per_pass"], **derived)

        def part(part_class):
            return part_class(**{field.name: values[field.name]
                                 for field in dataclasses.fields(part_class)})

        return cls(read=part(ReadConfig), vocab=part(VocabConfig), inputs=part(InputConfig),
                   job=part(JobConfig), clean=part(CleanConfig),
                   flag_values=tuple(flags.items()))

    def flags(self) -> Dict[str, Any]:
        """{flag: value} of the job's own flags (for the summary and the fingerprint)."""
        return dict(self.flag_values)
