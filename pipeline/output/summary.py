"""The end-of-job summary as a readable table (the JSON summary holds the same facts)."""

from typing import Any, Dict, Optional

from pipeline.output.layout import LENGTHS_REPORT_NAME

# Datasets listed per split (the rest are counted in one line; every dataset's figures are in
# the summary JSON): the table goes to stdout, which schedulers' pipes must not fill.
MAX_DATASET_LINES = 10


def _within(path: str, output_dir: Optional[str]) -> str:
    """`path` relative to the output directory when it is in it (the table stays narrow)."""
    prefix = output_dir.rstrip("/") + "/" if output_dir else None
    return path[len(prefix):] if prefix and path.startswith(prefix) else path


def _records(books: Dict[str, Any]) -> str:
    """The `records` column of a split's or a pair's line: its records written, repeats
    included (--mix_shards), or its pairs written when nothing was repeated."""
    return " %10d" % books.get("records", books["pairs_written"])


def format_summary(summary: Dict[str, Any]) -> str:
    output_dir = summary.get("output_dir") or summary.get("flags", {}).get("output_dir")
    lines = []
    if summary.get("noop"):
        lines.append("Output already complete, nothing done (finished %s). Use --overwrite to redo."
                     % summary.get("finished_at"))
    lines.append("datagen %s: problem %s, seed %s, %s passes, %.1f s" % (
        summary["status"], summary["problem"], summary["seed"], summary["passes"], summary["seconds"]))
    if output_dir:
        lines.append("output: %s" % output_dir)
    lines.append("")
    lines.append("%-8s %10s %10s %10s  %s" % ("vocab", "size", "min_count", "tokens", "file"))
    for name, v in sorted(summary["vocab"].items()):
        if name == "passes":
            continue
        lines.append("%-8s %10d %10s %10s  %s%s" % (
            name, v["size"], v.get("min_count", "-"), v.get("distinct_tokens", "-"),
            _within(v["path"], output_dir),
            " (reused)" if v.get("reused") else " (from %s)" % v["given"] if v.get("given") else ""))
    for name, v in sorted(summary["vocab"].items()):
        mix = v.get("mix") if isinstance(v, dict) else None
        if mix:  # several corpora: each language's share of the sample
            shown = sorted(mix["languages"].items(), key=lambda kv: -kv[1]["share"])
            lines.append("%-8s sample of %d lines at temperature %g: %s%s" % (
                "", mix["sample_lines"], mix["sampling_temperature"], ", ".join(
                    "%s %.1f%%" % (lang, 100 * f["share"])
                    for lang, f in shown[:MAX_DATASET_LINES]),
                " and %d more" % (len(shown) - MAX_DATASET_LINES)
                if len(shown) > MAX_DATASET_LINES else ""))
    tags = summary.get("lang_tags") or {}
    if tags:
        shown_tags = sorted(tags.values(), key=lambda t: t["id"])
        lines.append("%-8s language tags (reserved ids %d-%d): %s%s" % (
            "", shown_tags[0]["id"], shown_tags[-1]["id"],
            " ".join(t["token"] for t in shown_tags[:MAX_DATASET_LINES]),
            " ..." if len(shown_tags) > MAX_DATASET_LINES else ""))
    lines.append("")
    # --mix_shards repeats pairs to give each its rate: the records written, repeats
    # included, get a column of their own (`written` counts each pair once)
    repeats = any("records" in s for s in summary["splits"].values())
    lines.append("%-8s %10s %10s %10s %7s%s" % ("split", "read", "written", "rejected", "shards",
                                               " %10s" % "records" if repeats else ""))
    for split, s in sorted(summary["splits"].items()):
        lines.append("%-8s %10d %10d %10d %7d%s" % (
            split, s["pairs_read"], s["pairs_written"], s["pairs_rejected"], len(s["shards"]),
            _records(s) if repeats else ""))
        datasets = s.get("datasets", {})
        pairs = s.get("language_pairs") or {}
        if pairs:  # several corpora: one line per language pair
            listed = sorted(pairs.items())[:MAX_DATASET_LINES]
            for name, d in listed:
                lines.append("  %-20s %6s %10d %10d %10d %7s%s" % (
                    name[:20], "pair", d["pairs_read"], d["pairs_written"],
                    d["pairs_rejected"], len(d["shards"]) or "-",
                    _records(d) if repeats else ""))
            if len(pairs) > len(listed):
                lines.append("  ... %d more language pairs (each in the summary JSON)"
                             % (len(pairs) - len(listed)))
            datasets = {}
        shown = sorted(datasets.items())[:MAX_DATASET_LINES] if len(datasets) > 1 else []
        for name, d in shown:
            lines.append("  %-20s %6s %10d %10d %10d" % (name[:20], d["format"], d["pairs_read"],
                                                      d["pairs_written"], d["pairs_rejected"]))
        if len(datasets) > len(shown) > 0:
            lines.append("  ... %d more datasets (each in the summary JSON)"
                         % (len(datasets) - len(shown)))
        for reason, n in sorted(s["rejected_by_reason"].items()):
            lines.append("%-8s %32s: %d" % ("", reason, n))
        packing = s.get("packing")
        if packing:
            lines.append("%-8s packed: %d pairs in %d records of %d ids (%.2f a record; "
                         "inputs %.0f%%, targets %.0f%% full; %d over %d)" % (
                             "", packing["pairs"], packing["records"], packing["packed_length"],
                             packing["pairs_per_record"], 100 * packing["fill"]["inputs"],
                             100 * packing["fill"]["targets"], packing["over_length"],
                             packing["packed_length"]))
        if "oov_rate" in s:
            lines.append("%-8s OOV rate: source %.2f%%, target %.2f%%" % (
                "", 100 * s["oov_rate"]["source"], 100 * s["oov_rate"]["target"]))
        if s.get("rejects_file"):
            lines.append("%-8s rejects: %s" % ("", _within(s["rejects_file"], output_dir)))
    reuse = summary.get("resume") or {}
    if reuse.get("chunks_reused") or reuse.get("shards_reused"):  # a rerun after a kill kept
        lines.append("resumed: %d encode chunks reused, %d encoded, %d shards written%s" % (
            reuse.get("chunks_reused", 0), reuse.get("chunks_encoded", 0),  # the killed run's
            reuse.get("shards_written", 0),
            ", %d kept" % reuse["shards_reused"] if reuse.get("shards_reused") else ""))
    warnings = sum(len(d.get("warnings", [])) for s in summary["splits"].values()
                   for d in s.get("datasets", {}).values())
    if warnings:
        lines.append("input warnings: %d (in the summary JSON: splits.*.datasets.*.warnings)"
                     % warnings)
    lengths = summary.get("lengths", {}).get("splits", {})
    if lengths:
        lines.append("")
        width = max([14] + [len(split) + 8 for split in lengths])  # "... targets"
        lines.append("%-*s %6s %6s %6s %6s %9s  %s" % (
            width, "lengths", "p50", "p90", "p99", "max", "chars/id",
            "(characters)" if str(summary.get("flags", {}).get("output_format")).startswith(
                "text") else "(ids with EOS)" if summary["lengths"].get("ids_end_in_eos", True)
            else "(ids, no EOS)"))
        for split, figures in sorted(lengths.items()):
            for side in ("inputs", "targets"):
                f = figures.get(side, {})
                if f.get("max") is None:
                    continue
                lines.append("%-*s %6d %6d %6d %6d %9.2f" % (
                    width, "%s %s" % (split, side), f["p50"], f["p90"], f["p99"], f["max"],
                    f.get("chars_per_token") or 0.0))
        if summary.get("problem"):
            lines.append("length report: " + LENGTHS_REPORT_NAME % summary["problem"])
    lines.append("")
    lines.append("stages: " + ", ".join(
        "%s in the %s pass" % (k, v["ran_with"]) if "ran_with" in v else "%s %.1f s" % (k, v["seconds"])
        for k, v in summary["stages"].items()))
    return "\n".join(lines)
