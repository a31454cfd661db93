"""The cleaning step: `--filters`, `--dedup` and `--drop_dev_overlap`, between prepare and vocab.

The `--filters` file is read and checked when the job starts (`load_cleaning`: an unknown
filter or parameter is one error line, exit 2, before anything runs). After the prepare step
the cleaning pass (`transforms.clean.clean_pairs.CleanPairs`) reads every prepared dataset in the
encoder's chunks and writes, per dataset with drops, a bitmap of the dropped lines and their
rejects (with reasons) under the work directory. Each `Prepared` then carries them
(`dropped`, `dropped_bytes`, `cleaning_rejects`): the vocab sample reads only the kept lines
(so the vocabulary is learnt from clean text), the encoder skips the dropped ones, and their
rejects join the encode pass's, so the books (pairs read = written + rejected) count every
drop under its reason. With cleaning off nothing here runs and no pass is added.
"""

import dataclasses
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from pipeline.driver.prepare import Prepared
from pipeline.output.layout import OutputLayout
from pipeline.runtime.errors import DatagenError
from transforms.clean.clean_pairs import CleanPairs, DatasetLines, with_chunk_facts
from transforms.cleaning.config import CleaningConfig, parse_cleaning_config
from transforms.cleaning.errors import CleaningConfigError
from transforms.cleaning.near_duplicates import MinhashOptions
from transforms.encode.encode_pairs import plan_chunks
from transforms.reporting.json_result import WriteJsonResult
from transforms.contracts.config import CleanConfig, InputConfig
from transforms.contracts.elements import Chunk
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores


def load_cleaning(clean: CleanConfig, inputs: Union[InputConfig, Sequence[InputConfig]],
                  stores: Optional[ObjectStores] = None,
                  corpus_filters: Sequence[Tuple[str, str, Optional[str]]] = ()) -> CleaningConfig:
    """The run's CleaningConfig from its cleaning flags (`clean`) and its `inputs` (the
    input flags, or every corpus's): --filters read through the file systems, --dedup,
    --drop_dev_overlap, and each corpus's own filters file (`corpus_filters`: per corpus
    number, how messages name its entry, its name and its `filters:` path or None); DatagenError
    (one line, exit 2) when it cannot run."""
    every = [inputs] if isinstance(inputs, InputConfig) else list(inputs)
    text = None
    if clean.filters:
        try:
            text = file_io.read_bytes(file_io.absolute(clean.filters), stores).decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise DatagenError("--filters %s cannot be read: %s" % (clean.filters, e)) from None
    if clean.drop_dev_overlap and not any(i.dev_source or i.dev_tsv or i.dev_tmx for i in every):
        raise DatagenError("--drop_dev_overlap needs dev data (--dev_source/--dev_target, "
                           "--dev_tsv or --dev_tmx)")
    tests: List[str] = []
    if clean.decontaminate:
        try:
            tests = file_io.expand_patterns(clean.decontaminate, stores)
        except OSError as e:
            raise DatagenError("--decontaminate %s: %s" % (clean.decontaminate, e)) from None
    minhash = MinhashOptions(threshold=clean.minhash_threshold, shingle=clean.minhash_shingle,
                             permutations=clean.minhash_permutations,
                             bands=clean.minhash_bands, seed=clean.minhash_seed)
    if clean.minhash_bands > clean.minhash_permutations:
        raise DatagenError("--minhash_bands %d exceeds --minhash_permutations %d"
                           % (clean.minhash_bands, clean.minhash_permutations))
    try:
        config = parse_cleaning_config(text, clean.filters, clean.dedup, clean.drop_dev_overlap,
                                       clean.dedup_scope, minhash, tuple(tests),
                                       clean.decontaminate_ngram)
    except CleaningConfigError as e:
        raise DatagenError("--filters %s" % e if clean.filters else str(e)) from None
    config = with_model_files(config, "--filters %s" % clean.filters, stores)
    own = []
    for number, (where, _, path) in enumerate(corpus_filters):
        if path:
            own.append((number, _corpus_filters(where, path, stores)))
    return dataclasses.replace(config, per_corpus=tuple(own))


def _corpus_filters(where: str, path: str, stores: Optional[ObjectStores]
                    ) -> Tuple[Tuple[str, Dict[str, Any]], ...]:
    """The filters of a corpora entry's `filters:` file (`where` names the entry)."""
    where = "%s: filters" % where
    try:
        text = file_io.read_bytes(file_io.absolute(path), stores).decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise DatagenError("%s: %s cannot be read: %s" % (where, path, " ".join(
            str(e).split()))) from None
    try:
        config = parse_cleaning_config(text, path, of_corpus=True)
    except CleaningConfigError as e:
        raise DatagenError("%s: %s" % (where, e)) from None
    return with_model_files(config, "%s: %s" % (where, path), stores).filters


def with_model_files(config: CleaningConfig, where: str,
                     stores: Optional[ObjectStores]) -> CleaningConfig:
    """`config` with each filter's model file (`fasttext_model_path`) made absolute (the
    workers may run elsewhere), DatagenError naming `where` when one does not exist."""
    filters = []
    for (name, params), built in zip(config.filters, config.build_filters()):
        path = getattr(built, "model_path", None)
        if path:
            path = file_io.absolute(path)
            if not file_io.exists(path, stores):
                raise DatagenError("%s: %s: fasttext_model_path %s does not exist"
                                   % (where, built.reason, path))
            params = dict(params, fasttext_model_path=path)
        filters.append((name, params))
    return dataclasses.replace(config, filters=tuple(filters))


def _every(prepared: Dict[str, List[Prepared]]) -> List[Prepared]:
    return [p for split in sorted(prepared) for p in prepared[split]]


class CleaningStep:
    """Builds and runs the cleaning pass of the prepared datasets (`layout`: the run's
    OutputLayout, `cleaning`: its CleaningConfig, `on_invalid`: --on_invalid_utf8)."""

    def __init__(self, layout: OutputLayout, clean: CleanConfig,
                 inputs: Union[InputConfig, Sequence[InputConfig]],
                 on_invalid: str, stores: Optional[ObjectStores] = None,
                 corpus_filters: Sequence[Tuple[str, str, Optional[str]]] = ()) -> None:
        self._layout = layout
        self._flags = (clean, inputs)
        self._corpus_filters = corpus_filters  # (entry, name, own filters file) per corpus
        self.config = CleaningConfig()  # none until `load`
        self._on_invalid = on_invalid
        self._stores = stores

    def load(self) -> None:
        """Reads and checks the cleaning flags and the --filters file (`load_cleaning`)."""
        self.config = load_cleaning(*self._flags, self._stores, self._corpus_filters)

    @property
    def active(self) -> bool:
        return self.config.active

    def check_languages(self, datasets: Dict[str, List[Any]], several: bool) -> None:
        """A filter that takes its languages from the datasets (`LangidFilter` without
        `languages`) gets each dataset's pair with several corpora (they travel with the
        datasets), else the flags' (--source_lang/--target_lang, written into its
        parameters); DatagenError when a dataset has none."""
        sets = [None] + [number for number, _ in self.config.per_corpus]
        if not any(f.needs_languages() for corpus in sets
                   for f in self.config.build_filters(corpus)):
            return
        every = [ds for split in sorted(datasets) for ds in datasets[split]]
        if not all(ds.source_lang and ds.target_lang for ds in every):
            taker = next(f.reason for f in self.config.build_filters() if f.needs_languages())
            raise DatagenError("--filters %s: %s has no languages: give them (languages: "
                               "[SRC, TGT]), or --source_lang and --target_lang"
                               % (self._flags[0].filters, taker))
        if several or not every:
            return
        pair = [every[0].source_lang, every[0].target_lang]

        def with_pair(corpus: Optional[int]) -> Tuple[Tuple[str, Dict[str, Any]], ...]:
            return tuple((name, dict(params, languages=pair) if f.needs_languages() else params)
                         for (name, params), f in zip(self.config.filters_of(corpus),
                                                      self.config.build_filters(corpus)))
        self.config = dataclasses.replace(self.config, filters=with_pair(None), per_corpus=tuple(
            (number, with_pair(number)) for number, _ in self.config.per_corpus))

    def build(self, prepared: Dict[str, List[Prepared]]
              ) -> Tuple[str, Callable[[Any], None]]:
        """(label, build(pipeline)) of the cleaning pass."""
        chunks: List[Chunk] = []
        datasets: Dict[str, DatasetLines] = {}
        for p in _every(prepared):
            ds = p.ds
            facts = p.source_facts, p.target_facts
            chunks += [with_chunk_facts(c, *facts)
                       for c in plan_chunks(ds, p.source_lines, p.target_lines, *facts)]
            datasets["%s/%d" % (ds["split"], ds["index"])] = (
                ds, max(facts[0]["lines"], facts[1]["lines"]), p.source_lines, p.target_lines)
        work = self._layout.work
        parts = [", ".join(name for name, _ in self.config.filters)] if self.config.filters else []
        if self.config.per_corpus:
            parts.append("own filters for %d corpora" % len(self.config.per_corpus))
        if self.config.mode != "none":
            parts.append("dedup " + self.config.mode)
        if self.config.decontaminate:
            parts.append("decontaminate %d files" % len(self.config.decontaminate))
        if self.config.drop_dev_overlap:
            parts.append("dev overlap")
        label = "clean %d chunks: %s" % (len(chunks), "; ".join(parts))

        def build(p: Any) -> None:
            import apache_beam as beam
            reports = (p | "Chunks" >> beam.Create(chunks, reshuffle=False)
                       | "Clean" >> CleanPairs(self.config, self._on_invalid, datasets,
                                               work("cleaning")))
            _ = {"cleaned": reports} | "Result" >> WriteJsonResult(work("cleaning.json"))
        return label, build

    def run(self, run_pass: Any, prepared: Dict[str, List[Prepared]]
            ) -> Tuple[Dict[str, List[Prepared]], Dict[str, Any]]:
        """Runs the cleaning pass; returns `prepared` with each dataset's drops attached
        ({split: [Prepared]}) and the summary's `cleaning` facts."""
        run_pass(*self.build(prepared))
        result = file_io.read_work_json(self._layout.work("cleaning.json"), self._stores)
        reports = {(r["split"], r["index"]): r for r in result.get("cleaned", [])}
        cleaned: Dict[str, List[Prepared]] = {}
        dropped: Dict[str, Dict[str, int]] = {}
        for split in sorted(prepared):
            cleaned[split] = []
            for p in prepared[split]:
                report = reports.get((split, p.ds["index"]))
                if report is not None:
                    p = dataclasses.replace(p, dropped=report["bitmap"],
                                            dropped_bytes=tuple(report["dropped_bytes"]),
                                            cleaning_rejects=report["rejects"],
                                            dropped_pairs=sum(n for _, n in report["reasons"]))
                    for reason, n in report["reasons"]:
                        by_reason = dropped.setdefault(split, {})
                        by_reason[reason] = by_reason.get(reason, 0) + n
                cleaned[split].append(p)
        return cleaned, self.summary(dropped)

    def _near_summary(self) -> Dict[str, Any]:
        """The summary's facts of --dedup minhash and --decontaminate (only when on)."""
        facts: Dict[str, Any] = {}
        if self.config.mode in ("normalized", "minhash"):
            facts["dedup_scope"] = self._flags[0].dedup_scope
        minhash = self.config.minhash
        if minhash is not None:
            bands, rows = minhash.layout()
            facts["minhash"] = dict(dataclasses.asdict(minhash), bands=bands, rows=rows)
        if self.config.decontaminate:
            facts["decontaminate"] = {"files": list(self.config.decontaminate),
                                      "ngram": self.config.decontaminate_ngram}
        return facts

    def summary(self, dropped: Dict[str, Dict[str, int]]) -> Dict[str, Any]:
        """The summary's `cleaning`: the filters in order, the dedup and what was dropped."""
        dedup = self.config.dedup
        own = {self._corpus_filters[number][1]: [{name: params} for name, params in filters]
               for number, filters in self.config.per_corpus}
        return {"filters": [{name: params} for name, params in self.config.filters],
                **({"filters_per_corpus": own} if own else {}),
                "dedup": self.config.mode,
                "dedup_options": {} if dedup is None else {
                    k: v for k, v in dataclasses.asdict(dedup).items() if k != "sides" and v},
                **self._near_summary(),
                "drop_dev_overlap": self.config.drop_dev_overlap,
                "dropped": {split: dict(sorted(r.items())) for split, r in dropped.items()}}
