"""The product's registries of vocabulary kinds and record formats, as tests take them.

A test over every kind or every format is parametrized from here (`every_kind`,
`every_format`), never from a list written in the test, so a kind or format added to its
registry (`transforms.codecs.kinds.CODEC_KINDS`, `transforms.shards.record_formats.FORMATS`)
is tested without editing one. Where a test needs something of its own per kind or format
(the flags a tiny job of that kind needs, say), its table is held to the registry by
`assert_covers`, which fails naming the kind or format it lacks.
"""

from typing import Iterable, Tuple


def every_kind() -> Tuple[str, ...]:
    """--vocab_type's values, in the registry's order."""
    from transforms.codecs.kinds import KIND_NAMES
    return KIND_NAMES


def every_format() -> Tuple[str, ...]:
    """--output_format's values, in the registry's order."""
    from transforms.shards.record_formats import FORMATS
    return tuple(FORMATS)


def is_text_format(name: str) -> bool:
    """Whether a format's records are the pairs' text (`TextFormat`), not their ids."""
    from transforms.shards.record_formats import FORMATS
    from transforms.shards.text_format import TextFormat
    return isinstance(FORMATS[name], TextFormat)


def assert_covers(table: Iterable[str], registry: Iterable[str], what: str) -> None:
    """Fails naming each name of `registry` that `table` (a test's per-kind or per-format
    data) has no entry for: a new kind or format must be given one."""
    missing = sorted(set(registry) - set(table))
    assert not missing, "%s has no entry for %s: add one" % (what, ", ".join(missing))
