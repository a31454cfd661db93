"""Names that become part of a file name under --output_dir: checked before anything runs.

`--problem` is the prefix of every output file (`{problem}-train-...`, the summary, the
marker, the lock, the work directory); `--source_lang`/`--target_lang`, or the extension of
the first input file when they are not given, end the vocab files' names. A name with a path
separator or `..` (`--problem ../escape`) would put files outside --output_dir; an empty one
would make names such as `-train-00000-of-00010` or `vocab.p.8192.subwords.`. Each is one
path component of letters, digits, `_`, `-`, `.`, `@` and `+` (language tags such as `en-US`,
`zh_Hans`, `sr@latin`), not starting with `.` or `-`, at most 100 characters.
"""

import re
from typing import Optional

from pipeline.runtime.runners import DatagenError

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,99}\Z")


def check_name(value: Optional[str], what: str) -> Optional[str]:
    """Raises DatagenError (one line) unless `value` is a safe file-name part; `what` says
    where it came from (`--problem`, or `the extension of FILE`)."""
    if value is None or _NAME.match(value):
        return value
    shown = value if len(value) <= 60 else value[:60] + "..."
    raise DatagenError("%s %r cannot be part of a file name: use letters, digits, _ - . @ + "
                       "(not starting with . or -), at most 100 characters" % (what, shown))
