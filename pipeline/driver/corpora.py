"""The corpora file (`--corpora FILE`): many named corpora, each a language pair, in one job.

In the spirit of OpenNMT-py's `data:` section and OpusFilter's configurations::

    corpora:
      - name: en-de
        source_lang: en
        target_lang: de
        train: {source: en-de/train.en, target: en-de/train.de}
        dev: {source: en-de/dev.en, target: en-de/dev.de}
      - name: en-ko
        source_lang: en
        target_lang: ko
        train: {tsv: en-ko/train.tsv}
        weight: 2.0

An input (`train`, `dev`) takes the keys of the input flags of its split: `source` and
`target` (line-aligned, SGM or IWSLT files; `format` as `--train_format`), `tsv` (with the
entry's `source_column`/`target_column`, else the flags'), `tmx` (sides chosen by the entry's
languages); each a pattern, a comma-separated list or a YAML list, archives (`a.tgz!dir/x`)
and buckets as the flags take them. A relative path is relative to the corpora file's
directory. `weight` (default 1) multiplies the entry's share of the vocabulary sample and its
mixing rate (`transforms.pairs.mixing`). `filters` names the entry's own `--filters` file
(relative to the corpora file too), used for its pairs instead of `--filters`.

Every malformed entry is named, with the file and the key, in one error (exit 2) before
anything runs. The single-pair flags are the same as a corpora file of one entry
(`transforms.contracts.config.CorpusConfig`, built by `DatagenConfig.from_flags`).
"""

import argparse
import math
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from pipeline.driver import corpora_yaml
from pipeline.output.names import NAME_MAX_BYTES, check_name, longest_pair_shard_name
from pipeline.runtime.errors import DatagenError
from transforms.contracts.config import CorpusConfig, DatagenConfig, InputConfig
from transforms.formats.corpus_formats import split_archive_path
from transforms.shards.record_formats import SPLITS
from transforms.storage import file_io

ENTRY_KEYS = ("name", "source_lang", "target_lang", "train", "dev", "weight", "source_column",
              "target_column", "license", "source_datasets", "filters")
INPUT_KEYS = ("source", "target", "format", "tsv", "tmx")
FORMATS = ("auto", "lines", "sgm", "iwslt")


class _Problems:
    """The problems found in a corpora file, each naming where (`corpora[2] (en-ko): train`)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.found: List[str] = []

    def add(self, where: str, message: str) -> None:
        self.found.append("%s: %s" % (where, message) if where else message)

    def raise_any(self) -> None:
        if self.found:
            raise DatagenError("--corpora %s: %s" % (self.path, "; ".join(self.found)))


def _resolve(base: str, pattern: str) -> str:
    """`pattern` with a relative path made relative to `base` (the file's directory); an
    archive member's path (after `!`) stays as it is."""
    pattern = pattern.strip()
    outer, member = split_archive_path(pattern)
    if "://" in outer or os.path.isabs(outer) or not base:
        return pattern
    joined = base.rstrip("/") + "/" + outer if "://" in base else os.path.join(base, outer)
    return joined if member is None else "%s!%s" % (joined, member)


def _patterns(value: Any, where: str, problems: _Problems, base: str) -> Optional[str]:
    """A pattern value (a string, or a list of strings) as the flags take it: comma-separated,
    each relative path made relative to the file's directory."""
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(item, str) and item.strip() for item in items):
        problems.add(where, "must be a file pattern or a list of them, not %r" % (value,))
        return None
    parts: List[str] = []
    for item in items:
        # one item naming an existing file with commas in its name stays whole
        whole = _resolve(base, item)
        if "," in item and file_io.is_local(whole) and os.path.isfile(whole):
            parts.append(whole)
        else:
            parts.extend(_resolve(base, p) for p in item.split(",") if p.strip())
    return ",".join(parts)


def _input(value: Any, split: str, where: str, problems: _Problems, base: str
           ) -> Dict[str, Any]:
    """{flag name without the split: value} of one entry's `train` or `dev`."""
    here = "%s: %s" % (where, split)
    if not isinstance(value, dict) or not value:
        problems.add(here, "must be a mapping of inputs ({source: FILE, target: FILE}, "
                           "{tsv: FILE} or {tmx: FILE}), not %r" % (value,))
        return {}
    out: Dict[str, Any] = {}
    for key in value:
        if key not in INPUT_KEYS:
            problems.add(here, "unknown key %r (it takes: %s)" % (key, ", ".join(INPUT_KEYS)))
    for key in ("source", "target", "tsv", "tmx"):
        if value.get(key) is not None:
            out[key] = _patterns(value[key], "%s.%s" % (here, key), problems, base)
    if ("source" in out) != ("target" in out):
        problems.add(here, "source and target go together")
    if not any(key in out for key in ("source", "tsv", "tmx")):
        problems.add(here, "names no input (source and target, tsv or tmx)")
    fmt = value.get("format", "auto")
    if fmt not in FORMATS:
        problems.add("%s.format" % here, "must be one of %s, not %r" % (", ".join(FORMATS), fmt))
    out["format"] = fmt
    return out


def _language(entry: Dict[str, Any], key: str, where: str, problems: _Problems
              ) -> Optional[str]:
    value = entry.get(key)
    if value is None:
        problems.add(where, "%s is required" % key)
        return None
    if not isinstance(value, str):
        problems.add("%s: %s" % (where, key), "must be a language code, not %r" % (value,))
        return None
    try:
        return check_name(value, "%s: %s" % (where, key))
    except DatagenError as e:
        problems.add("", str(e))
        return None


def _card_fields(entry: Dict[str, Any], where: str, problems: _Problems
                 ) -> Tuple[Optional[str], Tuple[str, ...]]:
    """The entry's `license` (a string) and `source_datasets` (a string or a list of them),
    which only the dataset card shows (`pipeline.output.card`)."""
    license, sources = entry.get("license"), entry.get("source_datasets", [])
    if license is not None and not isinstance(license, str):
        problems.add("%s: license" % where, "must be a string, not %r" % (license,))
        license = None
    if isinstance(sources, str):
        sources = [sources]
    if not (isinstance(sources, list) and all(isinstance(s, str) for s in sources)):
        problems.add("%s: source_datasets" % where,
                     "must be a string or a list of strings, not %r" % (sources,))
        sources = []
    return license, tuple(sources)


def _number(entry: Dict[str, Any], key: str, default: Any, where: str, problems: _Problems,
            kind: type) -> Any:
    value = entry.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        problems.add("%s: %s" % (where, key), "must be %s, not %r" % (
            "a number" if kind is float else "an integer", value))
        return default
    return kind(value)


def _entry(entry: Any, i: int, flags: argparse.Namespace, problems: _Problems, base: str
           ) -> Optional[CorpusConfig]:
    name = entry.get("name") if isinstance(entry, dict) else None
    where = "corpora[%d]%s" % (i, " (%s)" % name if isinstance(name, str) else "")
    if not isinstance(entry, dict):
        problems.add(where, "must be a mapping with name, source_lang, target_lang and train, "
                            "not %r" % (entry,))
        return None
    for key in entry:
        if key not in ENTRY_KEYS:
            problems.add(where, "unknown key %r (it takes: %s)" % (key, ", ".join(ENTRY_KEYS)))
    if not isinstance(name, str):
        problems.add(where, "name is required (a name for the corpus), not %r" % (name,))
    else:
        try:
            check_name(name, "%s: name" % where)
        except DatagenError as e:
            problems.add("", str(e))
    source_lang = _language(entry, "source_lang", where, problems)
    target_lang = _language(entry, "target_lang", where, problems)
    if source_lang and source_lang == target_lang:
        problems.add(where, "source_lang and target_lang are both %r" % source_lang)
    weight = _number(entry, "weight", 1.0, where, problems, float)
    if not (weight > 0 and math.isfinite(weight)):
        problems.add("%s: weight" % where, "must be a positive number, not %r" % (weight,))
    columns = tuple(_number(entry, key, getattr(flags, key), where, problems, int)
                    for key in ("source_column", "target_column"))
    if min(columns) < 0 or columns[0] == columns[1]:
        problems.add(where, "source_column and target_column must be different non-negative "
                            "column numbers, not %d and %d" % columns)
    splits = {}
    if "train" not in entry:
        problems.add(where, "train is required")
    for split in SPLITS:
        if entry.get(split) is not None:
            splits[split] = _input(entry[split], split, where, problems, base)
    inputs = InputConfig(**{"%s_%s" % (split, key): splits.get(split, {}).get(key)
                            for split in SPLITS
                            for key in ("source", "target", "tsv", "tmx")},
                         train_format=splits.get("train", {}).get("format", "auto"),
                         dev_format=splits.get("dev", {}).get("format", "auto"), corpora=None)
    license, sources = _card_fields(entry, where, problems)
    filters = entry.get("filters")
    if filters is not None and not (isinstance(filters, str) and filters.strip()):
        problems.add("%s: filters" % where, "must be the path of a filters file, not %r"
                     % (filters,))
        filters = None
    if (inputs.train_tmx or inputs.dev_tmx) and not (source_lang and target_lang):
        return None  # the missing language is named already
    return CorpusConfig(name if isinstance(name, str) else "", source_lang, target_lang,
                        weight, inputs, columns[0], columns[1], license, sources,
                        _resolve(base, filters) if filters else None)


def _check_pair_name(corpus: CorpusConfig, i: int,
                     languages: Dict[str, Tuple[str, str, str]], problems: _Problems) -> None:
    """A language pair is named `{source_lang}-{target_lang}` (its shards, books, rates and
    records' `lang_pair`); codes with `-` (`en-US`) let two other pairs of languages have
    one name (`en-US`->`de` and `en`->`US-de`): their records would share shards. Such a
    collision is a problem naming both entries."""
    if not (corpus.source_lang and corpus.target_lang):
        return
    name = "%s-%s" % (corpus.source_lang, corpus.target_lang)
    where = "corpora[%d] (%s)" % (i, corpus.name)
    known = languages.setdefault(name, (where, corpus.source_lang, corpus.target_lang))
    if known[1:] != (corpus.source_lang, corpus.target_lang):
        problems.add(where, "source_lang %r and target_lang %r make the language pair %r, as "
                            "%s's %r and %r do: rename a language code" % (
                                corpus.source_lang, corpus.target_lang, name, *known))


def _check_name_lengths(corpora: Sequence[CorpusConfig], problem: str, output_format: str,
                        problems: _Problems) -> None:
    """A pair's own shards are named with the problem and both languages; the documented
    limits of each (--problem 100 characters, a language 64) together exceed a file name's
    NAME_MAX_BYTES: such a pair is a problem, before anything runs, not ENAMETOOLONG after
    two passes."""
    for i, corpus in enumerate(corpora):
        pair = "%s-%s" % (corpus.source_lang, corpus.target_lang)
        longest = longest_pair_shard_name(problem, pair, output_format)
        if longest > NAME_MAX_BYTES:
            problems.add("corpora[%d] (%s)" % (i, corpus.name), (
                "source_lang and target_lang: with --problem %s (%d characters) the pair "
                "%s's shards get names of %d bytes, over the %d a file name may hold: "
                "shorten the problem or the language codes by %d" % (
                    problem if len(problem) <= 40 else problem[:40] + "...", len(problem),
                    pair, longest, NAME_MAX_BYTES, longest - NAME_MAX_BYTES)))


def parse_corpora(text: str, path: str, flags: argparse.Namespace) -> Tuple[CorpusConfig, ...]:
    """The corpora of a corpora file's `text` (read from `path`; relative paths in it are
    relative to its directory); DatagenError naming every malformed entry and key."""
    import yaml
    problems = _Problems(path)
    try:
        data = corpora_yaml.load(text)
    except corpora_yaml.RepeatedKey as e:
        raise DatagenError("--corpora %s: %skey %r given twice (line %d; YAML keeps only the "
                           "last)" % (path, e.where + ": " if e.where else "", e.key, e.line)
                           ) from None
    except yaml.YAMLError as e:
        raise DatagenError("--corpora %s: not YAML: %s"
                           % (path, " ".join(str(e).split()))) from None
    if not isinstance(data, dict) or not isinstance(data.get("corpora"), list):
        raise DatagenError("--corpora %s: must be a mapping with a `corpora:` list of "
                           "entries (name, source_lang, target_lang, train)" % path)
    for key in data:
        if key != "corpora":
            problems.add("", "unknown key %r (the file takes: corpora)" % (key,))
    if not data["corpora"]:
        problems.add("corpora", "lists no corpus")
    base = path.rsplit("/", 1)[0] if "://" in path else os.path.dirname(path)
    corpora: List[CorpusConfig] = []
    seen: Dict[str, int] = {}
    languages: Dict[str, Tuple[str, str, str]] = {}  # {pair name: (entry, source, target)}
    for i, entry in enumerate(data["corpora"]):
        corpus = _entry(entry, i, flags, problems, base)
        if corpus is None:
            continue
        if corpus.name in seen:
            problems.add("corpora[%d] (%s)" % (i, corpus.name),
                         "name already used by corpora[%d]" % seen[corpus.name])
        seen.setdefault(corpus.name, i)
        _check_pair_name(corpus, i, languages, problems)
        corpora.append(corpus)
    if len(corpora) > 1 and not problems.found:  # (indices of corpora: entries')
        _check_name_lengths(corpora, flags.problem, flags.output_format, problems)
    problems.raise_any()
    return tuple(corpora)


def read_corpora(flags: argparse.Namespace, beam_args: Sequence[str]
                 ) -> Tuple[CorpusConfig, ...]:
    """The corpora of `--corpora` (local, or on any Beam file system: its options come from
    `beam_args`); DatagenError when it cannot be read or is malformed."""
    path = file_io.absolute(flags.corpora)
    if not file_io.is_local(path):
        from apache_beam.io.filesystems import FileSystems
        from apache_beam.options.pipeline_options import PipelineOptions
        FileSystems.set_options(PipelineOptions(list(beam_args)))
    try:
        text = file_io.read_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise DatagenError("--corpora %s cannot be read: %s" % (
            flags.corpora, " ".join(str(e).split()))) from None
    return parse_corpora(text, path, flags)


def entry_where(config: DatagenConfig, number: int) -> str:
    """How a corpora file's messages name entry `number` of the run's corpora."""
    return "--corpora %s: corpora[%d] (%s)" % (config.inputs.corpora, number,
                                               config.corpora[number].name)


def corpus_filters(config: DatagenConfig) -> List[Tuple[str, str, Optional[str]]]:
    """Per corpus number: how messages name its entry, its name and its own filters file
    (None: `--filters`); empty without a corpora file."""
    if not config.inputs.corpora:
        return []
    return [(entry_where(config, i), c.name, c.filters) for i, c in enumerate(config.corpora)]


def check_corpora_have_pairs(prepared: Mapping[str, Sequence[Any]], config: DatagenConfig
                             ) -> None:
    """With several corpora, every entry's split must hold pairs, as a single pair's must
    (`pipeline.output.books.check_has_pairs`): an entry with empty files wrote an empty
    shard, reserved its tag and dropped out of a Mixture's rates, exit 0. Checked once the
    prepare step has counted the lines, before anything is written (`--allow_empty`
    skips it, as the single-pair check)."""
    if not config.several_corpora:
        return
    for split in sorted(prepared):
        for number in range(len(config.corpora)):
            own = [p for p in prepared[split] if p.ds.get("corpus") == number]
            if own and not sum(min(p.source_facts["lines"], p.target_facts["lines"])
                               for p in own):
                read = sum(p.units for p in own)
                raise DatagenError("%s: %s: no pairs to write (%s); pass --allow_empty to write "
                                   "empty shards" % (entry_where(config, number), split,
                                                     "the input is empty" if not read else
                                                     "all %d units read were rejected" % read))
