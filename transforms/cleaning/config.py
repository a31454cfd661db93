"""The `--filters` file: OpusFilter's filter list (and `remove_duplicates` options), checked.

The file is YAML with the same filter entries an OpusFilter `filter` step lists, so a team's
existing configuration can be pasted in:

    filters:
      - LengthFilter: {unit: word, min_length: 1, max_length: 100}
      - LangidFilter: {languages: [en, zh]}
    remove_duplicates: {lowercase: true}   # optional: how --dedup compares pairs

Every filter name and parameter is checked here, when the job starts, by building the
filters (`CleaningConfigError` names the file and the problem on one line); language models
are only loaded by the workers (`PairFilter.setup`). The YAML is read with YAML 1.2's
booleans, as OpusFilter's ruamel.yaml reads it: `no` is Norway's language code, not false.
"""

import dataclasses
import re
from typing import Any, Dict, List, Optional, Tuple

import yaml

from transforms.cleaning import filters as plain
from transforms.cleaning.filters import PairFilter
from transforms.cleaning.dedup import DedupOptions
from transforms.cleaning.decontaminate import reasons as test_overlap_reasons
from transforms.cleaning.near_duplicates import SCOPE_SIDES, MinhashOptions
from transforms.cleaning.errors import CleaningConfigError
from transforms.cleaning.html_tags import HtmlTagFilter
from transforms.cleaning.langid import LangidFilter, LanguageIDFilter

FILTERS = {cls.__name__: cls for cls in (
    plain.LengthFilter, plain.LengthRatioFilter, plain.LongWordFilter,
    plain.AverageWordLengthFilter, plain.AlphabetRatioFilter, plain.CharacterScoreFilter,
    HtmlTagFilter, plain.RegExpFilter, plain.TerminalPunctuationFilter,
    plain.NonZeroNumeralsFilter, plain.RepetitionFilter, LangidFilter, LanguageIDFilter)}
DEDUP_OPTIONS = ("lowercase", "letters_only", "letter_words_only")
DEDUP_MODES = ("none", "pairs", "source", "normalized", "minhash")
TOP_LEVEL = ("filters", "remove_duplicates")


class _Yaml12Loader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
    """PyYAML's safe loader with YAML 1.2 booleans (true/false only)."""


_BOOL = "tag:yaml.org,2002:bool"
_Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != _BOOL]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Yaml12Loader.add_implicit_resolver(
    _BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


@dataclasses.dataclass(frozen=True)
class CleaningConfig:
    """What the cleaning stage does: `filters` as (filter name, parameters) in order, and the
    de-duplication (`dedup` None when off and with minhash, which is `minhash`), the test
    files of --decontaminate. Plain values only: it pickles to every worker."""
    filters: Tuple[Tuple[str, Dict[str, Any]], ...] = ()
    dedup: Optional[DedupOptions] = None
    drop_dev_overlap: bool = False
    mode: str = "none"  # --dedup
    minhash: Optional[MinhashOptions] = None
    decontaminate: Tuple[str, ...] = ()  # absolute paths of the test files
    decontaminate_ngram: int = 13
    # (corpus number, its filters): a corpora entry's own file, in place of `filters`
    per_corpus: Tuple[Tuple[int, Tuple[Tuple[str, Dict[str, Any]], ...]], ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.filters or self.per_corpus or self.key_options or self.minhash
                    or self.decontaminate)

    @property
    def extra_reasons(self) -> List[str]:
        """The reasons beside the filters': one per --decontaminate file."""
        return test_overlap_reasons(self.decontaminate)

    def filters_of(self, corpus: Optional[int]) -> Tuple[Tuple[str, Dict[str, Any]], ...]:
        """The filters of corpus number `corpus`'s pairs: its own, else `filters`."""
        return dict(self.per_corpus).get(corpus, self.filters) if corpus is not None \
            else self.filters

    @property
    def key_options(self) -> Optional[DedupOptions]:
        """How pairs are compared when they are grouped by key (--dedup, or
        --drop_dev_overlap alone: then pairs as they are), or None: no grouping."""
        if self.dedup is None and self.drop_dev_overlap:
            return DedupOptions()
        return self.dedup

    def reasons(self) -> List[str]:
        """Every reason a filter of the job's or of a corpus's own may drop a pair with."""
        every = [None] + [number for number, _ in self.per_corpus]
        return list(dict.fromkeys(f.reason for corpus in every
                                  for f in self.build_filters(corpus)))

    def build_filters(self, corpus: Optional[int] = None) -> List[PairFilter]:
        """The filter objects of `corpus` (`filters_of`), in the file's order (their models
        not loaded yet)."""
        return [FILTERS[name](**params) for name, params in self.filters_of(corpus)]


def _filter_entry(entry: Any) -> Tuple[str, Dict[str, Any]]:
    if isinstance(entry, str):  # `- HtmlTagFilter` without parameters
        entry = {entry: None}
    if not isinstance(entry, dict) or not entry:
        raise CleaningConfigError("a filter must be `- FilterName: {parameters}`, not %r"
                                  % (entry,))
    if "module" in entry:
        raise CleaningConfigError("filters from other modules (module: %s) are not offered"
                                  % entry["module"])
    if len(entry) != 1:
        raise CleaningConfigError("one filter per list item, not %s" % ", ".join(map(str, entry)))
    (name, params), = entry.items()
    if name not in FILTERS:
        raise CleaningConfigError("unknown filter %s (known: %s)" % (name, ", ".join(FILTERS)))
    params = {} if params is None else params
    if not isinstance(params, dict):
        raise CleaningConfigError("%s: parameters must be a mapping, not %r" % (name, params))
    built = FILTERS[name](**params)  # every parameter checked now, not on a worker
    if params.get("langid_languages") and params.get("id_method", "langid") == "langid":
        built.setup()  # py3langid's model says which labels exist (0.2 s)
    return name, params


def _dedup_options(mode: str, options: Any, scope: str = "pair") -> Optional[DedupOptions]:
    options = {} if options is None else options
    if not isinstance(options, dict):
        raise CleaningConfigError("remove_duplicates must be a mapping, not %r" % (options,))
    unknown = sorted(set(options) - set(DEDUP_OPTIONS))
    if unknown:
        raise CleaningConfigError("remove_duplicates: unknown option %s (it takes: %s)"
                                  % (", ".join(map(str, unknown)), ", ".join(DEDUP_OPTIONS)))
    for name, value in options.items():
        if not isinstance(value, bool):
            raise CleaningConfigError("remove_duplicates: %s must be true or false, not %r"
                                      % (name, value))
    if mode in ("none", "minhash"):
        return None
    if mode == "normalized":
        return DedupOptions(sides=SCOPE_SIDES[scope], bifixer=True)
    return DedupOptions(sides=(0, 1) if mode == "pairs" else (0,), **options)


def parse_cleaning_config(text: Optional[str], path: Optional[str], dedup: str = "none",
                          drop_dev_overlap: bool = False, scope: str = "pair",
                          minhash: Optional[MinhashOptions] = None,
                          decontaminate: Tuple[str, ...] = (),
                          decontaminate_ngram: int = 13, of_corpus: bool = False
                          ) -> CleaningConfig:
    """The CleaningConfig of the `--filters` file's `text` (None: no file) with `--dedup`
    (`scope`: --dedup_scope; `minhash`: its options with --dedup minhash, else the defaults),
    `--drop_dev_overlap` and `--decontaminate`'s files; CleaningConfigError ("{path}:
    problem") when it cannot run. `of_corpus`: a corpora entry's file, a filter list only
    (de-duplication is the job's)."""
    if dedup not in DEDUP_MODES:
        raise CleaningConfigError("--dedup must be one of %s, not %r"
                                  % (", ".join(DEDUP_MODES), dedup))
    near = None
    if dedup == "minhash":
        near = dataclasses.replace(minhash or MinhashOptions(), scope_sides=SCOPE_SIDES[scope])

    def config(filters: Tuple[Tuple[str, Dict[str, Any]], ...],
               dedup_options: Optional[DedupOptions]) -> CleaningConfig:
        return CleaningConfig(filters, dedup_options, drop_dev_overlap, dedup, near,
                              tuple(decontaminate), decontaminate_ngram)
    if text is None:
        return config((), _dedup_options(dedup, None, scope))
    try:
        try:
            data = yaml.load(text, Loader=_Yaml12Loader)
        except yaml.YAMLError as e:
            raise CleaningConfigError("not YAML: %s" % " ".join(str(e).split())) from None
        if not isinstance(data, dict):
            raise CleaningConfigError("must be a mapping with a `filters:` list")
        unknown = sorted(set(data) - set(TOP_LEVEL))
        if unknown:
            raise CleaningConfigError("unknown key %s (it takes: %s)"
                                      % (", ".join(map(str, unknown)), ", ".join(TOP_LEVEL)))
        if of_corpus and "remove_duplicates" in data:
            raise CleaningConfigError("remove_duplicates is the job's (in --filters), not a "
                                      "corpus's")
        entries = data.get("filters") or []
        if not isinstance(entries, list):
            raise CleaningConfigError("filters must be a list, not %r" % (entries,))
        filters = tuple(_filter_entry(entry) for entry in entries)
        dedup_options = _dedup_options(dedup, data.get("remove_duplicates"), scope)
    except CleaningConfigError as e:
        raise CleaningConfigError("%s: %s" % (path, e)) from None
    return config(filters, dedup_options)
