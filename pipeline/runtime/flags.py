"""Command-line flags checked with public APIs only: a command line split once into a job's or
tool's own flags and Beam's pipeline options (`split_command_line`), and an unknown flag as
one line with the closest known one.

Beam only warns about a flag it does not know and drops it, so a typo (`--vocab_sise 100`)
would run a whole job with the default; a scheduled job must fail at once instead. Used by
the job's options (`pipeline.driver.options`) and by the consumer tools (`pipeline.tools`).
"""

import argparse
import difflib
from typing import Any, Callable, Dict, List, NoReturn, Optional, Sequence, Tuple, Type

from apache_beam.options.pipeline_options import PipelineOptions

from pipeline.runtime.runners import register_runner_options
from pipeline.runtime.errors import DatagenError


class FlagParser(argparse.ArgumentParser):
    """A plain argparse parser (no abbreviations) that keeps the actions added to it
    (`actions`, for the "did you mean" of an unknown flag and for --help's checks) and
    raises DatagenError (exit 2, one line) for a bad value (`--vocab_size abc`) instead of
    printing the usage and exiting the process.

    Beam's option classes add their flags to it through `_add_argparse_args(parser)`, the
    hook Beam documents for defining options, which hands them an argparse parser: they
    call `add_argument` and, for template options, `add_value_provider_argument`, a plain
    flag here (its name and its value's type are all a check needs). A flag added through
    an argument group is kept only when the group's `group_adder` added it."""

    def __init__(self, **kwargs: Any) -> None:
        self.actions: List[argparse.Action] = []  # before super().__init__, which adds -h
        super().__init__(allow_abbrev=False, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.actions.append(action)
        return action

    def add_value_provider_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        return self.add_argument(*args, **kwargs)

    def group_adder(self, title: str) -> Callable[..., argparse.Action]:
        """`add_argument` of a new group of --help named `title`, whose flags are kept in
        `actions` as the parser's own."""
        group = self.add_argument_group(title)

        def add(*args: Any, **kwargs: Any) -> argparse.Action:
            action = group.add_argument(*args, **kwargs)
            self.actions.append(action)
            return action
        return add

    def error(self, message: str) -> NoReturn:
        raise DatagenError(message)


def with_beam_options(parser: FlagParser, argv: Optional[List[str]] = None) -> FlagParser:
    """`parser` with every Beam pipeline option added (each PipelineOptions subclass once, as
    `PipelineOptions.get_all_options` collects them), those of the runner `argv` names
    included: `--runner` is read from this parser's own result, then its module imported
    (`pipeline.runtime.runners.register_runner_options`) and the options it declares added."""
    added: Dict[str, Type[PipelineOptions]] = {}

    def add_new_classes() -> None:
        for cls in PipelineOptions.__subclasses__():
            if str(cls) not in added:
                added[str(cls)] = cls
                cls._add_argparse_args(parser)

    add_new_classes()
    if argv is not None:
        known, _ = parser.parse_known_args(list(argv))
        register_runner_options(getattr(known, "runner", None))
        add_new_classes()
    return parser


def split_command_line(argv: Sequence[str], own: FlagParser, what: str
                       ) -> Tuple[argparse.Namespace, List[str]]:
    """The one parse of a command line: (`own`'s flags, an argparse Namespace; the rest, in
    order, for Beam's `PipelineOptions`). The rest must be Beam's pipeline options
    (`refuse_unknown_flags`), else DatagenError naming the flag; `what`: what `own`'s flags
    are, for that error ("a flag of this job (see --help)")."""
    parsed, rest = own.parse_known_args(list(argv))
    refuse_unknown_flags(rest, what, own)
    return parsed, rest


def refuse_unknown_flags(rest: List[str], what: str, own: Optional[FlagParser] = None) -> None:
    """Raises DatagenError for an argument of `rest` (what a job's or tool's own parser
    `own` left of a command line) that Beam's pipeline options (those of the runner `rest`
    names included: `with_beam_options`) do not take: "unknown flag --x (did you mean
    --y?): neither {what} nor a Beam pipeline option", the closest of `own`'s and Beam's
    flags."""
    parser = with_beam_options(FlagParser(), rest)
    _, unknown = parser.parse_known_args(rest)
    flags = [a for a in unknown if a.startswith("-")]
    if flags:
        known = [s for action in (own.actions if own else []) + parser.actions
                 for s in action.option_strings]
        names = []
        for flag in flags:
            close = difflib.get_close_matches(flag.split("=", 1)[0], known, n=1)
            names.append(flag + (" (did you mean %s?)" % close[0] if close else ""))
        raise DatagenError("unknown flag%s %s: neither %s nor a Beam pipeline option" % (
            "s" if len(flags) > 1 else "", ", ".join(names), what))
    if unknown:
        raise DatagenError("unexpected argument%s %s: every value goes after its --flag" % (
            "s" if len(unknown) > 1 else "", " ".join(repr(a) for a in unknown)))
