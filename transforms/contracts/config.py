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
    sampling_temperature: float      # several corpora: T of the languages' shares in the sample
    lang_tags: Optional[str]         # target | none | None (target with several target languages)
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
    corpora: Optional[str]           # a corpora file (`pipeline.driver.corpora`), or None


@dataclasses.dataclass(frozen=True)
class JobConfig:
    """Where the output goes and how the job runs (the driver's own settings)."""
    output_dir: str
    problem: str
    seed: int
    num_train_shards: int
    num_dev_shards: int
    output_format: str               # a name of transforms.shards.record_formats.FORMATS
    mix_shards: bool                 # several pairs: one shuffled set at the mixing rates
    packed_length: int               # pairs packed into records of this many ids (0: off)
    allow_empty: bool
    overwrite: bool
    lock_stale_seconds: float
    progress_seconds: float          # a running pass's progress line comes this often
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
class CorpusConfig:
    """One named corpus of the run: a corpora file's entry (`pipeline.driver.corpora`), or
    the single-pair flags as one corpus (name ""). Its datasets carry its index and languages
    (`pipeline.driver.datasets`); with more than one corpus the languages are required."""
    name: str
    source_lang: Optional[str]
    target_lang: Optional[str]
    weight: float                    # multiplies its share in the mix (1.0)
    inputs: InputConfig              # its train/dev patterns, as the input flags take them
    source_column: int               # its TSV columns
    target_column: int


@dataclasses.dataclass(frozen=True)
class DatagenConfig:
    read: ReadConfig
    vocab: VocabConfig
    inputs: InputConfig
    job: JobConfig
    clean: CleanConfig
    flag_values: Tuple[Tuple[str, Any], ...]  # (flag, value) of every flag, in their order
    corpora: Tuple[CorpusConfig, ...]  # the run's corpora, in order (one for the flags)

    @classmethod
    def from_flags(cls, flags: Mapping[str, Any], **derived: Any) -> "DatagenConfig":
        """The config of the job's flag values ({flag: value}, in the flags' order; checked
        by `pipeline.driver.options`): each field takes the flag of its name, but for the
        fields `derived` names (values made from flags: absolute paths, the kind's part)."""
        values = dict(flags, bisection_rounds=flags["bisection_rounds_per_pass"], **derived)

        def part(part_class):
            return part_class(**{field.name: values[field.name]
                                 for field in dataclasses.fields(part_class)})

        inputs = part(InputConfig)
        corpora = values.get("corpora_parsed") or (CorpusConfig(
            "", values["source_lang"], values["target_lang"], 1.0, inputs,
            values["source_column"], values["target_column"]),)
        return cls(read=part(ReadConfig), vocab=part(VocabConfig), inputs=inputs,
                   job=part(JobConfig), clean=part(CleanConfig),
                   flag_values=tuple(flags.items()), corpora=tuple(corpora))

    @property
    def several_corpora(self) -> bool:
        """Whether the run has more than one corpus: then the vocabulary is one, learnt from
        the temperature-sampled mix, and records carry their language pair."""
        return len(self.corpora) > 1

    def flags(self) -> Dict[str, Any]:
        """{flag: value} of the job's own flags (for the summary and the fingerprint)."""
        return dict(self.flag_values)
