"""A setting is one dataclass field: its flag is declared in the field's metadata.

`setting(help, default, ...)` makes a field of a config part (`transforms.contracts.config`)
or of a kind's settings (`transforms.vocab.*_learning`) that is also a flag of the job: its
name (the field's, unless `flag=` says otherwise), default, help, argparse type or choices,
and what it means to a fingerprint. Everything else is derived from the fields:
`pipeline.driver.options` builds the parser, the defaults and `--help` from them,
`pipeline.driver.fingerprint` its flag lists, `pipeline.driver.kinds` which flags are a
kind's own, `pipeline.driver.flags_doc` the flags' page (docs/flags.md). A new flag is one
field here or in a kind's settings (plus its test, and the page generated again). `derived()` marks a field made from flags (an absolute path, the kind's part),
which is no flag.

The fields have no dataclass defaults on purpose: a config is built from the parsed flags
(`DatagenConfig.from_flags`), so a forgotten setting is an error, not a silent default. The
metadata stays with the class (not the instances), so a config still pickles as plain values.
Pure: argparse types, no Beam, no TensorFlow.
"""

import dataclasses
import importlib
from typing import Any, Callable, List, NamedTuple, Optional, Sequence, Tuple, Union

from transforms.contracts.flag_ranges import INT32_MAX, bounded

FLAG = "flag"            # field metadata key: its `Flag`
DERIVED = "derived"      # field metadata key: made from flags, not a flag

# What a flag means to a fingerprint (`pipeline.driver.fingerprint`).
OUTPUT = "output"            # changes the bytes written
OPERATIONAL = "operational"  # where the output goes, how the job runs or is parallelized
INPUT = "input"              # names input files: compared through the files it names

# Name limits of the parts of file names (`pipeline.output.names` says why these numbers).
NAME_MAX_BYTES = 255
LONGEST_REST = 83  # bytes of the longest name the job writes besides the problem and language
PROBLEM_MAX = 100
LANG_MAX = NAME_MAX_BYTES - LONGEST_REST - PROBLEM_MAX - 8  # 64: 8 bytes to spare
LOG_LEVELS = ("debug", "info", "warning", "error")
MAX_SHARDS = 99999  # T2T's shard names number shards with 5 digits (`-00000-of-00010`)


class Declared(NamedTuple):
    """A value of a flag's declaration (its default, choices or help) that is declared
    elsewhere, in a registry of a package this one may not import (the vocabulary kinds:
    `transforms.codecs.kinds`, which would bring every kind to the encode pass; the record
    formats: `transforms.shards`): `module.attribute`, read when the flags are listed
    (`flag_fields`), never by a worker."""
    module: str
    attribute: str

    def value(self) -> Any:
        return getattr(importlib.import_module(self.module), self.attribute)


@dataclasses.dataclass(frozen=True)
class Flag:
    """A flag of the job, as its setting's field declares it."""
    help: Any                        # str, or Declared
    default: Any = None
    type: Optional[Callable[[str], Any]] = None
    choices: Optional[Sequence[Any]] = None
    switch: bool = False             # a flag without a value (store_true)
    flag: Optional[str] = None       # the flag's name, when it is not the field's
    role: str = OUTPUT               # OUTPUT | OPERATIONAL | INPUT
    vocab: bool = False              # it determines a vocabulary (its fingerprint)
    # left out of fingerprints at its default: a flag added after fingerprints existed, so
    # the outputs made before keep theirs
    new: bool = False
    corpora_replace: bool = False    # a --corpora file names it for each corpus instead
    several_only: bool = False       # means something with several corpora only: else refused
    alias: Optional[Tuple[str, Any]] = None  # a short flag setting a value (-v: info)


def setting(help: Union[str, Declared], default: Any = None, **declared: Any) -> Any:
    """A field that is a flag (`Flag`'s fields as keywords)."""
    return dataclasses.field(metadata={FLAG: Flag(help, default, **declared)})


def derived(what: str) -> Any:
    """A field made from flags by the driver (`what` it is made from), not a flag."""
    return dataclasses.field(metadata={DERIVED: what})


def flag_fields(cls: type) -> List[Tuple[str, str, Flag]]:
    """(field name, flag name, Flag) of every flag field of dataclass `cls`, in order."""
    found = []
    for field in dataclasses.fields(cls):
        flag = field.metadata.get(FLAG)
        if flag is not None:
            flag = dataclasses.replace(flag, **{
                name: value.value() for name, value in vars(flag).items()
                if isinstance(value, Declared)})
            found.append((field.name, flag.flag or field.name, flag))
    return found


def optional_length(value: Any) -> Optional[int]:
    """`--max_subtoken_length none` (or 0) means no limit, as T2T's None; else a length of
    at most INT32_MAX (the index's C code takes no larger one)."""
    if value is None or str(value).lower() in ("none", "0", ""):
        return None
    return _SUBTOKEN_LENGTH(value)


_SUBTOKEN_LENGTH = bounded(int, 0, INT32_MAX)
