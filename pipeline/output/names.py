"""Names that become part of a file name under --output_dir: checked before anything runs.

`--problem` is the prefix of every output file (`{problem}-train-...`, the summary, the
marker, the lock, the work directory); `--source_lang`/`--target_lang`, or the extension of
the first input file when they are not given, end the vocab files' names. A name with a path
separator or `..` (`--problem ../escape`) would put files outside --output_dir; an empty one
would make names such as `-train-00000-of-00010` or `vocab.p.8192.subwords.`. Each is one
path component of letters, digits, `_`, `-`, `.`, `@` and `+` (language tags such as `en-US`,
`zh_Hans`, `sr@latin`), not starting with `.` or `-`: a problem name at most PROBLEM_MAX
characters, a language at most LANG_MAX.

The limits are what file systems hold: a name of at most NAME_MAX_BYTES bytes (ext4, XFS,
btrfs, APFS, ZFS), these names being ASCII. The longest name the job writes holds both: a
learnt vocabulary's hidden fingerprint under its temporary name,
`..vocab.{problem}.{size}.subwords.{lang}.fingerprint.json.tmp-<32 hex digits>`, LONGEST_REST
bytes besides the two names with the largest --vocab_size (10 digits). With several
language pairs, a pair's shard names hold the problem and both languages
(`longest_pair_shard_name`), which the documented limits together do not fit: the corpora
file is checked against it before anything runs (`pipeline.driver.corpora`).
"""

import re
from typing import Optional

from pipeline.runtime.errors import DatagenError
from transforms.shards.record_formats import FORMATS, ShardNames
# declared beside the flags they limit (--problem, --source_lang, --target_lang)
from transforms.contracts.settings import (LANG_MAX, LONGEST_REST, MAX_SHARDS,  # noqa: F401
                                          NAME_MAX_BYTES, PROBLEM_MAX)

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@+-]*\Z")


def check_name(value: Optional[str], what: str, most: int = LANG_MAX) -> Optional[str]:
    """Raises DatagenError (one line) unless `value` is a safe file-name part of at most
    `most` characters (PROBLEM_MAX for --problem, LANG_MAX for a language); `what` says
    where it came from (`--problem`, or `the extension of FILE`)."""
    if value is None or (_NAME.match(value) and len(value) <= most):
        return value
    shown = value if len(value) <= 60 else value[:60] + "..."
    raise DatagenError("%s %r cannot be part of a file name: use letters, digits, _ - . @ + "
                       "(not starting with . or -), at most %d characters" % (what, shown, most))


def longest_pair_shard_name(problem: str, pair: str, output_format: str) -> int:
    """Bytes of the longest name a language pair's shard is written under in `output_format`:
    the temporary name (`.{name}.tmp-<32 hex digits>`, `file_io.temporary_name`) of its train
    shard's name (a text format's ends with a language: the longer of the pair's two)."""
    names = ShardNames(problem, FORMATS[output_format])
    name = names.name("train", 0, MAX_SHARDS, pair)
    return max(len(file.encode()) for file in names.files(name)) + len("..tmp-") + 32
