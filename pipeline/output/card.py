"""The dataset card: `README.md` in the output directory, in Hugging Face's format, written
at the commit with the other outputs (`pipeline.output.commit.mark_complete`).

Why a card: a directory of shards says nothing of what is in it. Hugging Face's hub and
`datasets` read a `README.md` whose YAML header says the languages, the task, the size
category, the licence and sources, and (`configs`) which files make which split, so that
`datasets.load_dataset(output_dir)` loads a Parquet output as it is: a config per language
pair (the first the default), a split per split, the exact shard names listed (a glob of
`{problem}-train-*` would also match a problem named `p-train`'s shards). TFRecord and
ArrayRecord are no format `datasets` reads, so their card has no `configs`
(`pipeline.tools.reader` / `batches` read them).

Every number comes from the job's own books, the summary (`pipeline.output.books`,
`transforms.encode.length_stats`): nothing is counted again, so the card cannot disagree
with the summary, and it holds no time, path or run id, so a rerun's card is
byte-identical. The samples are `pipeline.output.card_samples`'. The licence and sources
are the corpora file's `license` and `source_datasets` of each entry; none are guessed.

A `README.md` that is not a card of this problem's (no `CARD_MARK` line: the user's own, or
another problem's sharing the directory) is left alone, with a warning.
"""

import html
from typing import Any, Dict, List, Optional, Sequence, Tuple

import yaml

from pipeline.output.card_samples import Sample
from pipeline.output.layout import lang_of, summary_languages
from transforms.contracts.config import CorpusConfig

CARD_MARK = "<!-- dataset card of problem %s, written by t2t-beam-datagen -->"
# Hugging Face's size categories, by the pairs written in every split
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                   (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M"),
                   (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B"),
                   (10_000_000_000, "1B<n<10B"))
DATASETS_FORMATS = ("parquet",)  # the record formats `datasets` loads from `configs`
PairFigures = Dict[str, Any]  # a pair's {"name", "languages", "splits": {split: {...}}}


def size_category(pairs: int) -> str:
    for bound, name in SIZE_CATEGORIES:
        if pairs < bound:
            return name
    return "n>10B"


def _lang_of_files(summary: Dict[str, Any]) -> Optional[Tuple[str, str]]:
    """The languages of a one-corpus run without --source_lang/--target_lang: the train
    files' suffixes, as the vocab files are named (`pipeline.output.layout.lang_of`); None
    when the input is one file a side (TSV, TMX): then the card names no language."""
    for dataset in summary["splits"].get("train", {}).get("datasets", {}).values():
        files = dataset.get("files") or []
        if len(files) == 2:
            return lang_of(files[0]), lang_of(files[1])
    return None


def card_pairs(summary: Dict[str, Any], corpora: Sequence[CorpusConfig]) -> List[PairFigures]:
    """Per language pair (one for a one-corpus run): its languages and, per split, its books
    (pairs read, written, rejected by reason), its shards and its length figures."""
    splits = summary["splits"]
    lengths = summary.get("lengths", {})
    if len(corpora) <= 1:
        flags = summary.get("flags", {})
        langs = ((corpora[0].source_lang, corpora[0].target_lang) if corpora
                 and corpora[0].source_lang else
                 (flags.get("source_lang"), flags.get("target_lang")))
        found = langs if langs[0] and langs[1] else _lang_of_files(summary)
        return [{"name": "%s-%s" % found if found else summary["problem"],
                 "languages": list(found or ()), "splits": {
            split: dict(books, lengths=lengths.get("splits", {}).get(split, {}),
                        shard_records=[(s["name"], s["records"]) for s in books["shards"]])
            for split, books in sorted(splits.items())}}]
    out: Dict[str, PairFigures] = {}
    shard_records = {s["name"]: s["records"] for books in splits.values()
                     for s in books["shards"]}
    for corpus in corpora:
        name = "%s-%s" % (corpus.source_lang, corpus.target_lang)
        if name in out:
            continue
        figures: Dict[str, Any] = {}
        for split, books in sorted(splits.items()):
            own = (books.get("language_pairs") or {}).get(name)
            if own is None:
                continue
            figures[split] = dict(
                own, lengths=lengths.get("pairs", {}).get(name, {}).get(split, {}),
                shard_records=[(s, shard_records[s]) for s in own.get("shards", [])])
        out[name] = {"name": name, "languages": [corpus.source_lang, corpus.target_lang],
                     "splits": figures}
    return list(out.values())


def card_header(summary: Dict[str, Any], corpora: Sequence[CorpusConfig],
                pairs: Sequence[PairFigures]) -> Dict[str, Any]:
    """The YAML header's fields (Hugging Face's dataset card metadata)."""
    languages = list(dict.fromkeys(lang for pair in pairs for lang in pair["languages"]))
    written = sum(books["pairs_written"] for books in summary["splits"].values())
    header: Dict[str, Any] = {"language": languages} if languages else {}
    header.update({"multilinguality": "translation" if len(languages) <= 2
                   else "multilingual", "task_categories": ["translation"],
                   "size_categories": [size_category(written)],
                   "pretty_name": summary["problem"]})
    licenses = list(dict.fromkeys(c.license for c in corpora if c.license))
    if licenses:
        header["license"] = licenses[0] if len(licenses) == 1 else licenses
    sources = list(dict.fromkeys(s for c in corpora for s in c.source_datasets))
    if sources:
        header["source_datasets"] = sources
    if summary["flags"].get("output_format") in DATASETS_FORMATS:
        header["configs"] = data_file_configs(summary, pairs)
    return header


def data_file_configs(summary: Dict[str, Any], pairs: Sequence[PairFigures]
                      ) -> List[Dict[str, Any]]:
    """`configs`: one per language pair with shards of its own (the first the default),
    else one `default` over each split's shards (one corpus, or --mix_shards: the records
    carry their `lang_pair`)."""
    own = [pair for pair in pairs
           if any(figures["shard_records"] for figures in pair["splits"].values())]
    if len(pairs) > 1 and len(own) == len(pairs):
        return [dict({"config_name": pair["name"]}, **({"default": True} if i == 0 else {}),
                     data_files=[{"split": split, "path": [n for n, _ in f["shard_records"]]}
                                 for split, f in pair["splits"].items() if f["shard_records"]])
                for i, pair in enumerate(pairs)]
    return [{"config_name": "default", "data_files": [
        {"split": split, "path": sorted(s["name"] for s in books["shards"])}
        for split, books in sorted(summary["splits"].items())]}]


def _cell(text: Any) -> str:
    """A Markdown table cell of any text: HTML-escaped, pipes and line breaks kept inside."""
    return html.escape(str(text)).replace("|", "&#124;").replace("\n", " ").replace("\r", " ")


def _vocabulary_lines(summary: Dict[str, Any]) -> List[str]:
    flags = summary["flags"]
    if not [name for name in summary["vocab"] if name != "passes"]:
        return ["Vocabulary: none (the text output is for a trainer that tokenizes); lengths "
                "are in characters."]
    lines = ["Vocabulary: `%s`%s." % (flags["vocab_type"], ", language tags %s" % " ".join(
        "`%s`" % t["token"] for t in sorted((summary.get("lang_tags") or {}).values(),
                                            key=lambda t: t["id"]))
        if summary.get("lang_tags") else "")]
    for name, v in sorted(summary["vocab"].items()):
        if name != "passes":
            lines.append("- %s: %d entries, file `%s`" % (
                name, v["size"], v["path"].rstrip("/").rsplit("/", 1)[-1]))
    return lines


def pair_section(pair: PairFigures, samples: Dict[str, List[Sample]],
                 dedup: bool) -> List[str]:
    """The body's section of one language pair: its books per split, the duplicate rate,
    the reject reasons, the length percentiles, the length ratio histogram and the
    samples."""
    lines = ["## %s" % pair["name"], "",
             "| split | pairs read | pairs written | pairs rejected | duplicate rate | shards |",
             "|---|---:|---:|---:|---:|---:|"]
    for split, f in pair["splits"].items():
        duplicates = f["rejected_by_reason"].get("duplicate", 0)
        rate = ("%.4f" % (duplicates / f["pairs_read"]) if f["pairs_read"] else "0") \
            if dedup else "not measured"
        lines.append("| %s | %d | %d | %d | %s | %d |" % (
            split, f["pairs_read"], f["pairs_written"], f["pairs_rejected"], rate,
            len(f["shard_records"])))
    lines += ["", "Rejected, by reason:", ""]
    reasons = [(split, reason, n) for split, f in pair["splits"].items()
               for reason, n in sorted(f["rejected_by_reason"].items())]
    lines += ["| split | reason | pairs |", "|---|---|---:|"] + [
        "| %s | %s | %d |" % r for r in reasons] if reasons else ["none"]
    lines += ["", "Lengths, nearest-rank percentiles:", "",
              "| split | side | p50 | p90 | p99 | max |", "|---|---|---:|---:|---:|---:|"]
    for split, f in pair["splits"].items():
        for side in ("inputs", "targets"):
            figures = f["lengths"].get(side) or {}
            if figures.get("max") is not None:
                lines.append("| %s | %s | %d | %d | %d | %d |" % (
                    split, side, figures["p50"], figures["p90"], figures["p99"],
                    figures["max"]))
    lines += ratio_lines(pair)
    for split, drawn in samples.items():
        if drawn:
            lines += ["", "Sample %s pairs (record positions drawn with the seed):" % split, "",
                      "| position | source | target |", "|---:|---|---|"]
            lines += ["| %d | %s | %s |" % (s["position"], _cell(s["source"]),
                                            _cell(s["target"])) for s in drawn]
    return lines + [""]


def ratio_lines(pair: PairFigures) -> List[str]:
    """The length ratio histogram (`length_stats.RATIO_EDGES`' buckets, counted by the
    encode pass): per split, each bucket's pairs and share. A split whose counts do not add
    up to its pairs (chunks replayed from a run before the ratio was counted) says so."""
    lines = ["", "Length ratio, targets/inputs (a bucket holds lo <= ratio < hi):", "",
             "| split | ratio | pairs | share |", "|---|---|---:|---:|"]
    for split, f in pair["splits"].items():
        buckets = f["lengths"].get("ratio_histogram") or []
        total = sum(n for _, n in buckets)
        if total != f["lengths"].get("pairs", 0) or not total:
            lines.append("| %s | not measured | | |" % split)
            continue
        lines += ["| %s | %s | %d | %.4f |" % (split, label, n, n / total)
                  for label, n in buckets]
    return lines


def render_card(summary: Dict[str, Any], corpora: Sequence[CorpusConfig],
                samples: Optional[Dict[str, Dict[str, List[Sample]]]] = None) -> str:
    """The card's text: YAML header, then a section per language pair (`samples`:
    {pair: {split: samples}})."""
    pairs = card_pairs(summary, corpora)
    header = card_header(summary, corpora, pairs)
    fmt = summary["flags"].get("output_format", "tfrecord")
    lines = ["---", yaml.safe_dump(header, sort_keys=False, allow_unicode=True).rstrip(),
             "---", CARD_MARK % summary["problem"], "",
             "# %s" % summary["problem"], "",
             "Sentence pairs for translation in `%s` records, made by t2t-beam-datagen "
             "(seed %d): %d pairs written of %d read. %s" % (
                 fmt, summary["seed"],
                 sum(b["pairs_written"] for b in summary["splits"].values()),
                 sum(b["pairs_read"] for b in summary["splits"].values()),
                 "Load it with `datasets.load_dataset(\"path/to/this/directory\")`"
                 + (" (`name=` a language pair)." if len(pairs) > 1 else ".")
                 if "configs" in header else
                 ("Line-aligned text: each shard's `.%s` and `.%s` files, for Marian, "
                  "OpenNMT-py, Sockeye or fairseq-preprocess." % summary_languages(summary)
                  if fmt.startswith("text") else
                  "`datasets` does not read this format: read it with "
                  "`pipeline.tools.reader` (tf.data) or `pipeline.tools.batches`.")), ""]
    lines += _vocabulary_lines(summary) + [""]
    dedup = (summary.get("cleaning") or {}).get("dedup", "none") != "none"
    for pair in pairs:
        lines += pair_section(pair, (samples or {}).get(pair["name"], {}), dedup)
    return "\n".join(lines)
