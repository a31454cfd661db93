"""docs/flags.md, generated from the flags' declarations: `python -m pipeline.driver.flags_doc`.

A flag is one `setting(...)` field (`transforms.contracts.settings`); its page is derived from
the fields, as `--help` is (`options.flag_groups`: the same groups, in the same order), so
the reference cannot drift from the code. The tests compare the committed page with this
module's output (tests/pipeline/driver/test_flags_doc.py), so a new or changed flag means
running this again. Markdown tables, one per group: a flag, what it takes (its choices, a
number's range from its `bounded` type, or nothing for a switch), its default and its help.
"""

import sys
from typing import Any, List

from pipeline.driver.options import flag_groups
from transforms.contracts.settings import Flag

HEADER = """# Flags

Every flag of `python -m pipeline.datagen`, generated from the flags' declarations by
`python -m pipeline.driver.flags_doc > docs/flags.md` (a test fails when this page is not
current; `--help` shows the same). The [README](../README.md#common-flags) has the common ones;
the topic pages say how they work together ([formats](formats.md), [vocabularies](vocabularies.md),
[cleaning](cleaning.md), [many language pairs](many-pairs.md), [runners](runners.md),
[operations](operations.md)).
Beam's pipeline options (`--runner`, `--project`, `--setup_file`, a runner's own flags) pass
through to Beam and are not listed here: [runners](runners.md). Flags of another
`--vocab_type` than the run's are errors, not ignored.
"""


def _cell(text: Any) -> str:
    """`text` as one table cell: on one line, its pipes escaped, and outside code spans its
    `<` and `>` too, so that `<s>` or `<2xx>` in a help text shows as written (Markdown would
    take them for HTML)."""
    parts = " ".join(str(text).split()).replace("|", "\\|").split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def _code(value: Any) -> str:
    return "`%s`" % str(value).replace("|", "\\|")


def _takes(flag: Flag) -> str:
    if flag.switch:
        return "switch"
    if flag.choices is not None:
        return " \\| ".join(_code(choice) for choice in flag.choices)
    accepts = getattr(flag.type, "__doc__", None) if flag.type is not None else None
    if accepts and getattr(flag.type, "__name__", "") in ("int", "float"):
        return _cell(accepts)
    return "text"


def _default(flag: Flag) -> str:
    if flag.switch:
        return "off"
    if flag.default is None or flag.default == "":
        return ""
    return _code(flag.default)


def flags_markdown() -> str:
    """The whole page."""
    lines: List[str] = [HEADER]
    for title, group in flag_groups():
        lines += ["## %s" % title, "", "| flag | takes | default | what |", "|---|---|---|---|"]
        for name, flag in group:
            shown = "`--%s`" % name
            if flag.alias:
                shown += " (`%s`: %s)" % flag.alias
            lines.append("| %s | %s | %s | %s |" % (shown, _takes(flag), _default(flag),
                                                   _cell(flag.help)))
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    sys.stdout.write(flags_markdown())


if __name__ == "__main__":
    main()
