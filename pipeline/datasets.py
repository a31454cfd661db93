"""Datasets of a run: which files, in which format, for which split.

A dataset is one source/target pair of line-aligned files, one SGM or IWSLT XML pair, one TSV
file or one TMX file. Line-aligned files are read in place (split into chunks by the scan);
every other dataset, and any file inside an archive (`archive.tgz!path/inside`), is first
converted by the prepare pass into a pair of line-aligned files under the work directory,
with the units that cannot become a pair written to rejects. Datasets are numbered within
their split; the number is part of each pair's shuffle key.
"""

import dataclasses
import os
from typing import Optional

from pipeline.runners import DatagenError
from transforms import file_io
from transforms.corpus_formats import FormatError, detect_format, split_archive_path

@dataclasses.dataclass
class Dataset:
    split: str
    index: int
    name: str
    format: str
    source: str                   # a path, or `archive!member`
    target: Optional[str] = None  # None for TSV and TMX (both sides in one file)

    @property
    def read_in_place(self):
        """Line-aligned plain/compressed files are chunked and read where they are."""
        return self.format == "lines" and "!" not in self.source and "!" not in (self.target or "")


def literal_patterns(patterns):
    """Pattern lists taken as file names, without asking any file system (for --dry_run)."""
    return [p.strip() for p in (patterns or "").split(",") if p.strip()]


def expand_listing(patterns, stores=None):
    """Globs each pattern; `archive!member` names are taken literally (the archive must exist).
    `stores`: the job's ObjectStores (one listing per pattern on an object store)."""
    out = []
    for pattern in [p.strip() for p in (patterns or "").split(",") if p.strip()]:
        try:
            outer, member = split_archive_path(pattern)
        except FormatError as e:
            raise DatagenError(str(e)) from None
        if member is None:
            try:
                out.extend(file_io.expand_patterns(pattern, stores))
            except OSError as e:  # no match, a directory
                raise DatagenError(str(e)) from None
        else:
            outer = file_io.absolute(outer)
            if not file_io.exists(outer, stores):
                raise DatagenError("no archive %s (for %s)" % (outer, pattern))
            if "://" not in outer and os.path.isdir(outer):
                raise DatagenError("%s is a directory, not an archive (for %s)" % (outer, pattern))
            out.append("%s!%s" % (outer, member))
    return out


def _name(path):
    return os.path.basename(split_archive_path(path)[1] or path)


def plan_datasets(flags, split, expand=expand_listing):
    """The datasets of `split` ('train' or 'dev') from the job's flags, in a fixed order.

    `expand` turns a comma-separated pattern list into file names (globbing by default).
    """
    sources = expand(getattr(flags, split + "_source"))
    targets = expand(getattr(flags, split + "_target"))
    if len(sources) != len(targets):
        raise DatagenError("%s: %d source files but %d target files (%s vs %s)" % (
            split, len(sources), len(targets), sources, targets))
    chosen = getattr(flags, split + "_format")
    datasets = []
    for src, tgt in zip(sources, targets):
        fmt = detect_format(src) if chosen == "auto" else chosen
        if fmt not in ("lines", "sgm", "iwslt"):
            raise DatagenError("%s: --%s_source/--%s_target take line-aligned, SGM or IWSLT XML "
                               "files, not %s (use --%s_%s)" % (src, split, split, fmt, split, fmt))
        datasets.append(Dataset(split, len(datasets), _name(src), fmt, src, tgt))
    for fmt in ("tsv", "tmx"):
        for path in expand(getattr(flags, "%s_%s" % (split, fmt))):
            datasets.append(Dataset(split, len(datasets), _name(path), fmt, path))
    names = [d.name for d in datasets]
    for d in datasets:
        if names.count(d.name) > 1:
            d.name = "%s#%d" % (d.name, d.index)
    return datasets
