"""DatagenConfig: the settings the passes and transforms read, typed and frozen.

`pipeline.driver.options.datagen_config` builds it once from the parsed flags and the driver hands
it (or its `read` part) down to the transforms, instead of dicts re-defaulted wherever they
were read. So a setting has one name and one default, the flag's (these classes have no
defaults on purpose), and a misspelt setting is an AttributeError at once rather than a
silent `.get` default.

It lives in `transforms` and not in `pipeline` because DoFns carry it to the workers: every
field is a plain value, so it pickles on any runner, and unpickling it imports nothing of
the driver.
"""

import dataclasses
from typing import Optional

from transforms.vocab_kinds import vocab_kind


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


@dataclasses.dataclass(frozen=True)
class VocabConfig:
    """What the vocabulary is and how it is learnt."""
    vocab_type: str
    vocab_size: int
    file_byte_budget: float
    max_subtoken_length: Optional[int]
    vocab_partitions: int
    bisection_lookahead: int
    bisection_rounds: int            # --bisection_rounds_per_pass
    bpe_min_frequency: int
    bpe_eos_token: str

    @property
    def kind(self):
        """The VocabKind (`transforms.vocab_kinds`) of `vocab_type`."""
        return vocab_kind(self.vocab_type)


@dataclasses.dataclass(frozen=True)
class DatagenConfig:
    read: ReadConfig
    vocab: VocabConfig
