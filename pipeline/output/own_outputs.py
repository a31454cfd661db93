"""Which files in --output_dir are the job's own: never read as input, and the only ones a
run deletes.

With `--train_source 'dir/*.en' --output_dir dir`, a rerun's pattern also matches the vocab
files the first run wrote (`vocab.p.8192.subwords.en`): read as a corpus, they would change
the vocabulary and the pairs. Patterns are therefore expanded with every file this job (of
any problem) writes under --output_dir left out, and the job says which (`exclude_own`).
The names are those of `pipeline.output.layout` and T2T's: vocab files and their sidecars, shards
`{problem}-{split}-NNNNN-of-NNNNN` in any record format (`transforms.shards.record_formats`), the summary, marker, lock, length report, rejects, the
work directory and the temporary names of atomic writes.

The other way round, a run replaces only shards named as T2T names them: a user's
`{problem}-train-notes.txt` in the output directory is left alone (`is_shard_name`).
"""

import os
import re
from typing import TYPE_CHECKING, Iterable, List, Optional, Tuple

from apache_beam.io.filesystems import FileSystems

from pipeline.output.layout import WORK_NAME, OutputLayout
from transforms.shards.record_formats import (DEFAULT_FORMAT, SHARD_NAME_PATTERN, SPLITS, Langs,
                                             ShardNames, record_format)
from transforms.codecs.kinds import CODEC_KINDS

if TYPE_CHECKING:
    from transforms.storage.object_stores import ObjectStores

# vocab.{problem}.{size}.{suffix}[.{lang}] of every vocabulary kind (files, or directories)
_VOCAB_SUFFIXES = "(%s)" % "|".join(re.escape(kind.file_suffix) for kind in CODEC_KINDS)
_OWN_NAMES = re.compile(
    r"(vocab\..+\.\d+\." + _VOCAB_SUFFIXES + r"(\.[^/]+)?"      # vocab files (and dirs)
    r"|\.vocab\..+\.fingerprint\.json"                           # their sidecars
    r"|.+\.(datagen_summary\.json|DATAGEN_COMPLETE|datagen\.lock|lengths\.html|data-bin)"
    r"|" + SHARD_NAME_PATTERN +                                   # shards
    r")(\.tmp-[0-9a-f]{32})?\Z"
    r"|\..+\.tmp-[0-9a-f]{32}\Z")                                  # file_io.temporary_name


def is_problem_file(name: str, problem: str) -> bool:
    """Whether the base name `name` is one of `problem`'s own files directly in the output
    directory, other than its lock: vocab files and their sidecars, shards, summary, marker,
    length report. Another problem's run sharing the directory may be writing any other
    name at this moment, and another run of `problem` may be taking the lock."""
    vocab = r"vocab\.%s\.\d+\.%s(\.[^/]+)?" % (re.escape(problem), _VOCAB_SUFFIXES)
    others = r"%s\.(datagen_summary\.json|DATAGEN_COMPLETE|lengths\.html)" % re.escape(problem)
    if re.match(r"(%s|\.%s\.fingerprint\.json|%s)\Z" % (vocab, vocab, others), name):
        return True
    return any(is_shard_name(name, problem, split) for split in SPLITS)


def is_shard_name(name: str, problem: str, split: str, pairs: Iterable[str] = (),
                  langs: Optional[Iterable[Langs]] = None) -> bool:
    """Whether the base name `name` is a shard of `problem`'s `split` as the job names them
    (in any record format), or one of `pairs`' own shards; a one-pair text shard's file
    ending with one of `langs` ((source, target) pairs; None: any)."""
    return ShardNames(problem, record_format(DEFAULT_FORMAT)).is_shard(name, split, pairs,
                                                                       langs)


def _under(path: str, directory: str) -> bool:
    directory = directory.rstrip("/") + "/"
    return path.startswith(directory)


def is_own_output(path: str, output_dir: str) -> bool:
    """Whether `path` (absolute, or a URL) is a file this job writes under `output_dir`."""
    if not _under(path, output_dir):
        return False
    relative = path[len(output_dir.rstrip("/")) + 1:]
    first = relative.split("/", 1)[0]
    if first in (WORK_NAME, "rejects"):
        return True
    return bool(_OWN_NAMES.match(first))


def exclude_own(paths: Iterable[str], output_dir: str) -> Tuple[List[str], List[str]]:
    """(paths that are not the job's own outputs, the ones left out); local paths are also
    compared through links (`os.path.realpath`)."""
    local = "://" not in output_dir
    dirs = {output_dir, os.path.realpath(output_dir)} if local else {output_dir}
    kept: List[str] = []
    left_out: List[str] = []
    for path in paths:
        names = {path, os.path.realpath(path)} if local and "://" not in path else {path}
        own = any(is_own_output(p, d) for p in names for d in dirs)
        (left_out if own else kept).append(path)
    return kept, left_out


def old_shards(layout: OutputLayout, split: str, stores: "Optional[ObjectStores]" = None,
               pairs: Iterable[str] = (), langs: Iterable[Langs] = ()
               ) -> Tuple[List[str], List[str]]:
    """(the paths of `split`'s shards in the output directory, other files a
    `{problem}-{split}-*` glob matches there): only the first are the job's to replace.
    `stores`: the job's ObjectStores (one listing on an object store). `pairs`: language
    pairs whose own shards (`{problem}~{pair}-{split}-...`) are the job's too (this run's and
    the previous output's: another problem may be named like a pair's shards, and its files
    are not this job's). `langs`: the (source, target) languages a one-pair text shard of
    this run or the previous output ends with (`{problem}-train-00000-of-00001.en`; a user's
    `{problem}-train-00000-of-00001.bak` is not a shard)."""
    from transforms.storage import file_io
    pairs, langs = list(pairs), list(langs)
    shards: List[str] = []
    others: List[str] = []
    directory = file_io.glob_literal(layout.output_dir)
    pattern = FileSystems.join(directory, layout.shards.glob(split))
    for path, _, _ in file_io.match_files(pattern, stores):
        name = path.rstrip("/").rsplit("/", 1)[-1]
        (shards if is_shard_name(name, layout.problem, split, (), langs) else others
         ).append(path)
    if pairs:
        pattern = FileSystems.join(directory, layout.shards.glob(split, "*"))
        for path, _, _ in file_io.match_files(pattern, stores):
            name = path.rstrip("/").rsplit("/", 1)[-1]
            if path not in shards and is_shard_name(name, layout.problem, split, pairs, langs):
                shards.append(path)
    return shards, others
