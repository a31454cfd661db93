"""Datasets of a run: which files, in which format, for which split.

A dataset is one source/target pair of line-aligned files, one SGM or IWSLT XML pair, one TSV
file or one TMX file. Line-aligned files are read in place (split into chunks by the scan);
every other dataset, and any file inside an archive (`archive.tgz!path/inside`), is first
converted by the prepare pass into a pair of line-aligned files under the work directory,
with the units that cannot become a pair written to rejects. Datasets are numbered within
their split; the number is part of each pair's shuffle key.
"""

import dataclasses
import errno
import logging
import os
import stat
from typing import Callable, List, Optional, Sequence, cast

from pipeline.output.own_outputs import exclude_own
from pipeline.runtime.errors import DatagenError
from transforms.contracts.config import DatagenConfig
from transforms.contracts.elements import DatasetSpec
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores
from transforms.formats.corpus_formats import FormatError, detect_format, split_archive_path

LOG = logging.getLogger("datagen")

@dataclasses.dataclass
class Dataset:
    split: str
    index: int
    name: str
    format: str
    source: str                   # a path, or `archive!member`
    target: Optional[str] = None  # None for TSV and TMX (both sides in one file)
    # Its corpus (`DatagenConfig.corpora`): with several, each dataset carries its pair, its
    # languages (TMX sides, langid, tags) and TSV columns, so pairs travel as data through
    # the passes. With one corpus only the languages the flags give are set, and the
    # transforms get none of these (`spec`).
    corpus: int = 0
    pair: Optional[str] = None          # "{source_lang}-{target_lang}"
    source_lang: Optional[str] = None
    target_lang: Optional[str] = None
    source_column: Optional[int] = None
    target_column: Optional[int] = None

    @property
    def read_in_place(self) -> bool:
        """Line-aligned plain/compressed files are chunked and read where they are."""
        return self.format == "lines" and "!" not in self.source and "!" not in (self.target or "")

    def spec(self) -> DatasetSpec:
        """The dataset as the element the transforms take (`DatasetSpec`: its fields; its
        corpus's only with several corpora)."""
        spec = dataclasses.asdict(self)
        for key in _CORPUS_FIELDS:
            if self.pair is None:
                del spec[key]
        return cast(DatasetSpec, spec)


_CORPUS_FIELDS = ("corpus", "pair", "source_lang", "target_lang", "source_column",
                  "target_column")


def literal_patterns(patterns: Optional[str], flag: Optional[str] = None,
                     output_dir: Optional[str] = None) -> List[str]:
    """Pattern lists taken as file names, without asking any file system (for --dry_run)."""
    return [p.strip() for p in (patterns or "").split(",") if p.strip()]


def is_local_file(path: str) -> bool:
    """Whether `path` names an existing local file as it is (no glob, no list)."""
    return "://" not in path and os.path.isfile(path)


def split_patterns(patterns: Optional[str]) -> List[str]:
    """The comma-separated parts of a flag's value; a value (or a part) that names an
    existing local file is taken as that file's name, commas and `[` `]` `*` `?` included."""
    whole = (patterns or "").strip()
    if whole and "!" not in whole and is_local_file(file_io.absolute(whole)):
        return [whole]
    return [p.strip() for p in whole.split(",") if p.strip()]


def expand_listing(patterns: Optional[str], flag: Optional[str] = None,
                   output_dir: Optional[str] = None,
                   stores: Optional[ObjectStores] = None) -> List[str]:
    """Globs each pattern; `archive!member` names are taken literally (the archive must exist).
    `stores`: the job's ObjectStores (one listing per pattern on an object store).

    Files this job writes under `output_dir` are left out (with a warning naming them: the
    job never reads its own outputs, `pipeline.output.own_outputs`), and a file matched again by
    a later pattern of the same flag is read once (with a warning)."""
    out: List[str] = []
    left_out: List[str] = []
    exclude: Optional[Callable[[str], bool]] = None
    if output_dir:
        own_dir = file_io.absolute(output_dir)

        def exclude_own_output(path: str) -> bool:
            if exclude_own([path], own_dir)[1]:
                left_out.append(path)
                return True
            return False
        exclude = exclude_own_output
    for pattern in split_patterns(patterns):
        try:
            outer, member = split_archive_path(pattern)
        except FormatError as e:
            raise DatagenError(str(e)) from None
        if member is None:
            if is_local_file(file_io.absolute(pattern)):
                path = file_io.absolute(pattern)  # a file's own name: not a glob
                out.extend([] if exclude and exclude(path) else [path])
                continue
            _check_listed(file_io.absolute(pattern), flag)
            try:
                out.extend(file_io.expand_patterns(pattern, stores, exclude))
            except FileNotFoundError as e:
                if left_out:
                    raise DatagenError("%s: it matches only files this job writes in "
                                       "--output_dir (%s)" % (e, _names(left_out))) from None
                raise DatagenError(str(e)) from None
            except OSError as e:  # a directory
                raise DatagenError(str(e)) from None
        else:
            outer = file_io.absolute(outer)
            if not file_io.exists(outer, stores):
                raise DatagenError("no archive %s (for %s)" % (outer, pattern))
            if "://" not in outer and os.path.isdir(outer):
                raise DatagenError("%s is a directory, not an archive (for %s)" % (outer, pattern))
            out.append("%s!%s" % (outer, member))
    for path in out:
        _check_utf8_name(path, flag)
        _check_regular(split_archive_path(path)[0], flag)
        _check_readable(split_archive_path(path)[0], flag)
    if left_out:
        LOG.warning("--%s: %d file%s of this job's own output in --output_dir left out (a "
                    "job never reads its outputs): %s", flag, len(left_out),
                    "" if len(left_out) == 1 else "s", _names(left_out))
    return _once(out, flag)


def _check_utf8_name(path: str, flag: Optional[str]) -> None:
    """Raises DatagenError for a file name that is not valid UTF-8 (Python keeps its bytes as
    surrogates): names travel through Beam's string coder, the summary and the rejects file,
    which take UTF-8 only."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(path).decode("utf-8", "backslashreplace")
        raise DatagenError("--%s %s: the file name is not valid UTF-8; rename the file (e.g. "
                           "convmv -f latin1 -t utf-8)" % (flag, shown)) from None


_NOT_REGULAR = ((stat.S_ISFIFO, "a pipe or FIFO"), (stat.S_ISCHR, "a character device"),
                (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _check_regular(path: str, flag: Optional[str]) -> None:
    """Raises DatagenError for a local input that is not a regular file: the job reads each
    input more than once (the scan, the vocabulary sample, the encode pass), and a pipe
    (`<(...)`, /dev/fd/N), a FIFO or a device gives its bytes once, blocks, or gives others
    on the next read. Checked before anything is opened or written."""
    if not file_io.is_local(path):
        return
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # gone since the listing: the scan reports it
    for test, kind in _NOT_REGULAR:
        if test(mode):
            raise DatagenError("--%s %s is not a regular file (%s): the job reads each input "
                               "more than once; copy it to a file and name that" % (
                                   flag, path, kind))


def _check_listed(pattern: str, flag: Optional[str]) -> None:
    """Raises DatagenError naming the entries a local pattern matches that cannot be read as
    files: dangling symbolic links (`file_io.unlisted_matches`), link loops. Left out, they
    would drop their pairs without a word, or pair the files after them with the wrong
    partners."""
    broken = file_io.unlisted_matches(pattern)
    if not broken:
        return
    more = (", and %d more: %s" % (len(broken) - 1, _names(broken[1:]))
            if len(broken) > 1 else "")
    raise DatagenError("--%s %s is %s%s: fix or remove %s" % (
        flag, broken[0], _why_unreadable(broken[0]), more, "them" if more else "it"))


def _why_unreadable(path: str) -> str:
    """What an entry that `os.path.exists` denies is: a dangling link (and its target), a
    loop of links, or the system's word for it."""
    try:
        os.stat(path)
    except OSError as e:
        if e.errno == errno.ENOENT and os.path.islink(path):
            return "a dangling symbolic link (to %s, which does not exist)" % os.readlink(path)
        if e.errno == errno.ELOOP:
            return "a loop of symbolic links"
        return "unreadable (%s)" % (e.strerror or e)
    return "gone since it was listed"


def _check_readable(path: str, flag: Optional[str]) -> None:
    """Raises DatagenError for a local input this process cannot open (no permission, a
    disk error): one line naming it before anything is written, not a worker's traceback
    in the first pass that reads it."""
    if not file_io.is_local(path):
        return
    try:
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        return  # gone since the listing: the scan reports it
    except OSError as e:
        raise DatagenError("--%s %s cannot be read: %s" % (flag, path, e.strerror or e)) \
            from None


def _names(paths: Sequence[str], most: int = 3) -> str:
    shown = ", ".join(os.path.basename(p.rstrip("/")) for p in paths[:most])
    return shown + (" and %d more" % (len(paths) - most) if len(paths) > most else "")


def _once(paths: List[str], flag: Optional[str]) -> List[str]:
    """`paths` without repeats (the same file reached by two patterns, or through a link):
    each file is read once, and the job says which were listed again."""
    seen, kept, repeated = set(), [], []
    for path in paths:
        key = os.path.realpath(path) if "://" not in path and "!" not in path else path
        if key in seen:
            repeated.append(path)
            continue
        seen.add(key)
        kept.append(path)
    if repeated:
        LOG.warning("--%s: %d file%s matched more than once, read once: %s", flag,
                    len(repeated), "" if len(repeated) == 1 else "s", _names(repeated))
    return kept


def _name(path: str) -> str:
    return os.path.basename(split_archive_path(path)[1] or path)


def _empty(ds: Dataset) -> bool:
    """Whether a dataset's files are local files of 0 bytes (no pair, whatever the format)."""
    files = [split_archive_path(ds.source)[0]] + (
        [split_archive_path(ds.target)[0]] if ds.target else [])
    return all(is_local_file(f) and os.path.getsize(f) == 0 for f in files)


def plan_datasets(config: DatagenConfig, split: str,
                  expand: Callable[..., List[str]] = expand_listing) -> List[Dataset]:
    """The datasets of `split` ('train' or 'dev') of every corpus of the run
    (`config.corpora`: the input flags, or a corpora file's entries), in a fixed order:
    corpus by corpus, numbered on across them.

    `expand` turns a comma-separated pattern list into file names (globbing by default).
    """
    datasets: List[Dataset] = []
    several = config.several_corpora
    for number, corpus in enumerate(config.corpora):
        inputs = corpus.inputs

        def listed(key):
            if not config.inputs.corpora:
                return expand(getattr(inputs, key), flag=key, output_dir=config.job.output_dir)
            # a corpora file's input is named as its other problems are: file, entry, key
            flag = "corpora %s: corpora[%d] (%s): %s.%s" % (
                config.inputs.corpora, number, corpus.name, split, key.split("_", 1)[1])
            try:
                return expand(getattr(inputs, key), flag=flag,
                              output_dir=config.job.output_dir)
            except DatagenError as e:
                if str(e).startswith("--corpora "):
                    raise
                raise DatagenError("--%s: %s" % (flag, e)) from None

        sources = listed(split + "_source")
        targets = listed(split + "_target")
        what = "%s %s" % (corpus.name, split) if several else split
        if len(sources) != len(targets):
            raise DatagenError("%s: %d source files but %d target files (%s vs %s)" % (
                what, len(sources), len(targets), _names(sources, 5), _names(targets, 5)))
        chosen = getattr(inputs, split + "_format")
        found: List[Dataset] = []
        for src, tgt in zip(sources, targets):
            fmt = detect_format(src) if chosen == "auto" else chosen
            if fmt not in ("lines", "sgm", "iwslt"):
                raise DatagenError("%s: --%s_source/--%s_target take line-aligned, SGM or IWSLT "
                                   "XML files, not %s (use --%s_%s)" % (src, split, split, fmt,
                                                                        split, fmt))
            found.append(Dataset(split, 0, _name(src), fmt, src, tgt))
        for fmt in ("tsv", "tmx"):
            for path in listed("%s_%s" % (split, fmt)):
                found.append(Dataset(split, 0, _name(path), fmt, path))
        if several and found and not config.job.allow_empty and all(map(_empty, found)):
            # before any pass; an entry whose files hold no pair otherwise (compressed, or
            # all rejected) is refused once they are read (`corpora.check_corpora_have_pairs`)
            raise DatagenError("--corpora %s: corpora[%d] (%s): %s: no pairs to write (every "
                               "file is empty: %s); pass --allow_empty to write empty shards"
                               % (config.inputs.corpora, number, corpus.name, split,
                                  _names([ds.source for ds in found], 5)))
        for ds in found:
            ds.index = len(datasets)
            ds.source_lang, ds.target_lang = corpus.source_lang, corpus.target_lang
            if several:
                ds.name = "%s:%s" % (corpus.name, ds.name)
                ds.corpus, ds.pair = number, "%s-%s" % (corpus.source_lang, corpus.target_lang)
                ds.source_column, ds.target_column = corpus.source_column, corpus.target_column
            datasets.append(ds)
    names = [d.name for d in datasets]
    for d in datasets:
        if names.count(d.name) > 1:
            d.name = "%s#%d" % (d.name, d.index)
    return datasets
