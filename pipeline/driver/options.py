"""DatagenOptions: the job's own flags, parsed apart from Beam's pipeline options.

Every flag is declared once, as a field of a config part (`transforms.contracts.config`) or
of a kind's settings (its plugin's `settings_type`), with its default, help, type and
fingerprint role in the field's metadata (`transforms.contracts.settings`). This module only
derives from them: the parser (`job_flag_parser`), the defaults (`flag_defaults`), the flags
a corpora file replaces, and the checks of combinations.

`parse_flags` splits one command line in two: the job's flags (an argparse Namespace) and
everything else, which becomes Beam's `PipelineOptions`. DatagenOptions is deliberately not a
`PipelineOptions` subclass: Beam sends the options of every such subclass to its workers,
which do not know the job's flags and log "Discarding unparseable args" for each pass.
"""

import argparse
import logging
from typing import Any, Dict, Iterator, List, NamedTuple, Sequence, Tuple

from pipeline.runtime.flags import FlagParser, split_command_line
from pipeline.output.names import LANG_MAX, PROBLEM_MAX, check_name
from pipeline.runtime.errors import DatagenError
from transforms.contracts.config import FLAG_PARTS, DatagenConfig, VocabConfig
from transforms.contracts.settings import Flag, flag_fields
from pipeline.driver.corpora import read_corpora
from pipeline.driver.kinds import KindPlugin, every_plugin, kind_part
from transforms.shards.record_formats import SPLITS, TEXT_FORMATS, FairseqFormat
from transforms.storage import file_io

LOG = logging.getLogger("datagen")


def flag_groups() -> Iterator[Tuple[str, List[Tuple[str, Flag]]]]:
    """(title, [(flag name, Flag)]) of every group of the job's flags, in --help's order:
    each config part's fields (titled by its `flags_title`), each kind's own flags after
    the vocabulary's."""
    for part in FLAG_PARTS:
        yield part.flags_title, [(name, flag) for _, name, flag in flag_fields(part)]
        if part is VocabConfig:
            for kind in every_plugin():
                if kind.settings_type is not None:
                    yield ("--vocab_type %s only" % kind.name,
                           [(name, flag) for _, name, flag in flag_fields(kind.settings_type)])


def declared_flags() -> Iterator[Tuple[str, Flag]]:
    """(flag name, Flag) of every flag of the job, in --help's order (`flag_groups`)."""
    for _, group in flag_groups():
        yield from group


class DatagenOptions:
    """Flags of `python -m pipeline.datagen` (Beam's own, like --runner, are parsed by Beam)."""

    @classmethod
    def _add_argparse_args(cls, parser: FlagParser) -> None:
        for title, group in flag_groups():
            add = parser.group_adder(title)
            for name, flag in group:
                declared: Dict[str, Any] = {"default": flag.default, "help": flag.help}
                if flag.switch:
                    declared["action"] = "store_true"
                if flag.type is not None:
                    declared["type"] = flag.type
                if flag.choices is not None:
                    declared["choices"] = flag.choices
                add("--" + name, **declared)
                if flag.alias:
                    short, value = flag.alias
                    add(short, dest=name, action="store_const", const=value,
                        help="Same as --%s %s." % (name, value))


def job_flag_parser(**kwargs: Any) -> FlagParser:
    """A parser of the job's own flags (DatagenOptions); `kwargs` go to ArgumentParser."""
    parser = FlagParser(**kwargs)
    DatagenOptions._add_argparse_args(parser)
    return parser


def parse_flags(argv: Sequence[str]) -> "tuple[argparse.Namespace, list[str]]":
    """(the job's flags: an argparse Namespace, Beam's arguments: a list) of a command line,
    parsed once (`pipeline.runtime.flags.split_command_line`): every job flag is taken out;
    what is left, in its order, is for `PipelineOptions`, and must be Beam's pipeline
    options (those of the runner --runner names included), else DatagenError ("unknown
    flag --vocab_sise (did you mean --vocab_size?)")."""
    return split_command_line(argv, job_flag_parser(), "a flag of this job (see --help)")


def flag_defaults() -> Dict[str, Any]:
    """{flag: default} of the job's own flags (a new dict: callers may keep it)."""
    return {name: flag.default for name, flag in declared_flags()}


# the flags a corpora file replaces (each entry names its inputs and languages)
CORPORA_REPLACE = tuple(name for name, flag in declared_flags() if flag.corpora_replace)
# the flags that mean something with several corpora only (refused, not ignored, without)
SEVERAL_ONLY = tuple(name for name, flag in declared_flags() if flag.several_only)


def _check_general_flags(f: argparse.Namespace) -> None:
    """Refuses impossible combinations of the flags every kind shares (DatagenError, exit 2);
    each numeric flag's range is checked where it is declared (its `bounded` type), the
    names by `pipeline.output.names`, a kind's own flags by its plugin."""
    if not f.output_dir:
        raise DatagenError("--output_dir is required")
    if f.corpora:
        given = [flag for flag in CORPORA_REPLACE if getattr(f, flag)]
        if given:
            raise DatagenError("--corpora names every input and language: leave out %s"
                               % ", ".join("--" + flag for flag in given))
    elif not (f.train_source or f.train_target or f.train_tsv or f.train_tmx):
        raise DatagenError("no training data: pass --train_source/--train_target, "
                           "--train_tsv or --train_tmx (or --corpora)")
    for split in SPLITS:
        if bool(getattr(f, split + "_source")) != bool(getattr(f, split + "_target")):
            raise DatagenError("--%s_source and --%s_target go together" % (split, split))
    if (f.train_tmx or f.dev_tmx) and not (f.source_lang and f.target_lang):
        raise DatagenError("TMX input needs --source_lang and --target_lang (xml:lang of "
                           "the sides)")
    if (f.train_tsv or f.dev_tsv) and f.source_column == f.target_column:
        raise DatagenError("--source_column and --target_column must be different columns")
    acts_on_ids = [flag for flag, on in (("packed_length", f.packed_length),
                                         ("max_length", f.max_length),
                                         ("lang_tags", f.lang_tags not in (None, "none"))) if on]
    if f.output_format in TEXT_FORMATS and acts_on_ids:
        raise DatagenError("--output_format %s writes the pairs' text, no ids: --%s acts on "
                           "ids" % (f.output_format, acts_on_ids[0]))
    if f.keep_order and (f.output_format not in TEXT_FORMATS or f.num_train_shards != 1
                         or f.num_dev_shards != 1 or f.mix_shards):
        raise DatagenError("--keep_order writes the pairs in input order: with "
                           "--output_format text or text.gz, one shard a split "
                           "(--num_train_shards 1) and no --mix_shards")


class Command(NamedTuple):
    """A command line of the job, parsed once: what every step reads from it."""
    config: DatagenConfig            # the job's flags, checked, typed and frozen
    kind: KindPlugin                 # the driver's part of the --vocab_type chosen
    beam_args: List[str]             # the rest, in order: Beam's PipelineOptions


def parse_command_line(argv: Sequence[str]) -> Command:
    """The one place a run's command line is parsed (`parse_flags`, once) and checked
    (DatagenError: one line, exit 2): a flag neither the job's nor Beam's is refused there.

    In order: the general flags; the names that become file names; the kind's own flags
    (its plugin); the paths made absolute (a relative path means the same thing to every
    pass, worker and rerun)."""
    flags, beam_args = parse_flags(argv)
    _check_general_flags(flags)
    defaults = flag_defaults()
    check_name(flags.problem, "--problem", PROBLEM_MAX)
    for flag in ("source_lang", "target_lang"):
        check_name(getattr(flags, flag), "--" + flag, LANG_MAX)
    part = kind_part(flags, defaults)
    if flags.packed_length and not part.kind.codec.ends_in_eos:
        # packed records are T2T's (mode "t2t"), which reads records ending in EOS only;
        # tensorflow/nmt's reader (mode "nmt") adds EOS itself and takes no packed records
        raise DatagenError("--packed_length: packed records are read as T2T reads them, "
                           "records ending in EOS; --vocab_type %s writes records without "
                           "EOS (its reader adds it), so no reader would take them"
                           % part.kind.name)
    if flags.output_format == FairseqFormat.name and (flags.packed_length or flags.mix_shards):
        # fairseq-train batches by length itself and reads one data-bin per language pair
        raise DatagenError("--output_format fairseq writes one pair per record and a "
                           "data-bin per language pair: it takes no --%s"
                           % ("packed_length" if flags.packed_length else "mix_shards"))
    output_dir = file_io.absolute(flags.output_dir)
    given = tuple(file_io.absolute(name) for name in part.given)
    corpora = read_corpora(flags, beam_args) if flags.corpora else None
    several = corpora is not None and len(corpora) > 1
    if several and len(given) > 1:
        raise DatagenError("--%s: several corpora share one vocabulary: give one, not %d"
                           % (part.kind.given_flag, len(given)))
    for flag in SEVERAL_ONLY:
        if not several and getattr(flags, flag) != defaults[flag]:
            raise DatagenError("--%s applies to several corpora (a --corpora file of two or "
                               "more) only" % flag)
    config = DatagenConfig.from_flags(vars(flags), output_dir=output_dir, given=given,
                                      loader=part.loader, kind_settings=part.settings,
                                      corpora_parsed=corpora)
    return Command(config, part.kind, beam_args)


def default_config(**flags: Any) -> DatagenConfig:
    """The DatagenConfig of a run given only `flags` ({flag: value}), every other setting at
    its flag's default, unchecked; for tests and library use, so defaults stay in the flag
    definitions."""
    defaults = flag_defaults()
    unknown = sorted(set(flags) - set(defaults))
    if unknown:
        raise TypeError("no flag --%s" % unknown[0])
    parsed = argparse.Namespace(**dict(defaults, **flags))
    part = kind_part(parsed, defaults)
    return DatagenConfig.from_flags(vars(parsed), given=tuple(part.given), loader=part.loader,
                                    kind_settings=part.settings)
