"""The books of a run: for every split and dataset, pairs read = pairs written + rejected.

Built from what the encode pass reported (records per dataset in each shard, rejects per
dataset and reason, token counts) and what the prepare pass read. A run whose books do not
balance, or that is missing a shard, fails instead of looking complete.
"""

from typing import Any, Dict, Iterable, List, Mapping, Protocol, Sequence

from pipeline.runtime.errors import DatagenError
from transforms.contracts.elements import RejectsReport, ShardReport
from transforms.formats.packed_examples import packing_figures
from transforms.errors import JobError

SplitReport = Dict[str, Any]  # `split_report`: a split's part of the summary (JSON)


class PreparedDataset(Protocol):
    """What the books read of a prepared dataset (`pipeline.driver.prepare.Prepared`)."""

    @property
    def ds(self) -> Mapping[str, Any]: ...

    @property
    def units(self) -> int: ...

    @property
    def source_facts(self) -> Mapping[str, Any]: ...

    @property
    def target_facts(self) -> Mapping[str, Any]: ...


class BooksDoNotBalance(JobError, RuntimeError):
    """The books of an output do not balance: pairs read != written + rejected."""


def _written_by_dataset(split_shards: Iterable[ShardReport], key: str = "by_dataset"
                        ) -> Dict[int, int]:
    """{dataset index: records} of the shards (`key` "copies_by_dataset": the repeated
    records among them, --mix_shards)."""
    written: Dict[int, int] = {}
    for shard in split_shards:
        for index, n in shard.get(key, ()):  # type: ignore[attr-defined]
            written[index] = written.get(index, 0) + n
    return written


def _rejected_by_dataset(rejects: Iterable[RejectsReport], split: str
                         ) -> Dict[int, Dict[str, int]]:
    rejected: Dict[int, Dict[str, int]] = {}
    for report in rejects:
        if report["split"] == split:
            for key, n in report["by_dataset_reason"]:
                index, reason = key.split("\t")
                rejected.setdefault(int(index), {})[reason] = n
    return rejected


def split_report(split: str, prepared: Sequence[PreparedDataset], num_shards: int,
                 shards: Iterable[ShardReport], rejects: Iterable[RejectsReport],
                 tokens: Sequence[int], rejects_file: str, with_oov: bool,
                 packed_length: int = 0) -> SplitReport:
    """The summary of one split; raises BooksDoNotBalance when a pair is unaccounted for.

    `prepared` are the split's datasets (with `ds` and `units` read), `shards`/`rejects` the
    encode pass's reports, `tokens` [source tokens, source OOV, target tokens, target OOV].
    With `packed_length` (--packed_length) the shards hold packed records: each shard lists
    its pairs beside its records, and the split what packing did (`packing`).
    """
    split_shards = sorted((s for s in shards if s["split"] == split), key=lambda s: s["shard"])
    records = _written_by_dataset(split_shards)
    copies = _written_by_dataset(split_shards, "copies_by_dataset")
    written = {index: n - copies.get(index, 0) for index, n in records.items()}
    rejected = _rejected_by_dataset(rejects, split)
    datasets: Dict[str, Dict[str, Any]] = {}
    unbalanced: List[str] = []
    totals: Dict[str, int] = {}
    for p in prepared:
        index = p.ds["index"]
        by_reason = rejected.get(index, {})
        n_written, n_rejected = written.get(index, 0), sum(by_reason.values())
        datasets[p.ds["name"]] = {
            "format": p.ds["format"], "files": [x for x in (p.ds["source"], p.ds["target"]) if x],
            "pairs_read": p.units, "pairs_written": n_written, "pairs_rejected": n_rejected,
            "rejected_by_reason": dict(sorted(by_reason.items()))}
        warnings = [w for facts in (p.source_facts, p.target_facts)
                    for w in (facts or {}).get("warnings", [])]
        if warnings:  # what T2T reads as text but was likely not meant (`text_marks`)
            datasets[p.ds["name"]]["warnings"] = warnings
        if p.units != n_written + n_rejected:
            unbalanced.append("%s: %d read, %d written, %d rejected" % (
                p.ds["name"], p.units, n_written, n_rejected))
        for reason, n in by_reason.items():
            totals[reason] = totals.get(reason, 0) + n
    if unbalanced or len(split_shards) != num_shards:
        raise BooksDoNotBalance("%s: books do not balance: %s; %d of %d shards" % (
            split, "; ".join(unbalanced) or "all datasets balance", len(split_shards), num_shards))
    n_rejected = sum(d["pairs_rejected"] for d in datasets.values())
    report: SplitReport = {
        "pairs_read": sum(d["pairs_read"] for d in datasets.values()),
        "pairs_written": sum(d["pairs_written"] for d in datasets.values()),
        "pairs_rejected": n_rejected, "rejected_by_reason": dict(sorted(totals.items())),
        "rejects_file": rejects_file if n_rejected else None,
        "datasets": datasets,
        "shards": [_shard_entry(s, packed_length) for s in split_shards],
        "tokens": {"source": tokens[0], "target": tokens[2]}}
    if copies:  # --mix_shards: records, repeated ones included
        report["records"] = sum(records.values())
    if packed_length:
        report["packing"] = packing_figures(
            [s["packing"] for s in split_shards if "packing" in s], packed_length)
    pairs = _pair_books(prepared, datasets, split_shards, copies, packed_length)
    if pairs:
        report["language_pairs"] = pairs
    if with_oov:
        report["oov_rate"] = {"source": round(tokens[1] / tokens[0], 6) if tokens[0] else 0.0,
                              "target": round(tokens[3] / tokens[2], 6) if tokens[2] else 0.0}
    return report


def _shard_entry(shard: ShardReport, packed_length: int) -> Dict[str, Any]:
    """A shard as the summary lists it (with packing, also its pairs)."""
    entry: Dict[str, Any] = {"name": shard["name"], "records": shard["records"],
                             "bytes": shard["bytes"], "crc32c": shard["crc32c"]}
    if packed_length:
        entry["pairs"] = sum(n for _, n in shard["by_dataset"])
    return entry


def _pair_books(prepared: Sequence[PreparedDataset], datasets: Mapping[str, Dict[str, Any]],
                split_shards: Sequence[ShardReport], copies: Mapping[int, int],
                packed_length: int = 0) -> Dict[str, Dict[str, Any]]:
    """With several language pairs, the books per pair: {pair: {pairs_read, pairs_written,
    pairs_rejected, rejected_by_reason (--max_length's over_max_length among them), shards
    (its own shards' names; with --mix_shards none, and `records` its repeated records
    included), with --packed_length `packing` of its own shards}}; {} with one corpus."""
    books: Dict[str, Dict[str, Any]] = {}
    for p in prepared:
        pair = p.ds.get("pair")
        if not pair:
            return {}
        d = datasets[p.ds["name"]]
        entry = books.setdefault(pair, {"pairs_read": 0, "pairs_written": 0,
                                        "pairs_rejected": 0, "rejected_by_reason": {}})
        for figure in ("pairs_read", "pairs_written", "pairs_rejected"):
            entry[figure] += d[figure]
        for reason, n in d["rejected_by_reason"].items():
            entry["rejected_by_reason"][reason] = entry["rejected_by_reason"].get(reason, 0) + n
        if copies:
            entry["records"] = entry.get("records", 0) + d["pairs_written"] + copies.get(
                p.ds["index"], 0)
    for pair, entry in books.items():
        entry["rejected_by_reason"] = dict(sorted(entry["rejected_by_reason"].items()))
        own = [s for s in split_shards if s.get("pair") == pair]
        entry["shards"] = [s["name"] for s in own]
        if packed_length and own:
            entry["packing"] = packing_figures(
                [s["packing"] for s in own if "packing" in s], packed_length)
    return dict(sorted(books.items()))


# -- a split with nothing to write -----------------------------------------------------------
# A scheduled run over an empty download must fail, not publish empty shards as a complete
# output; --allow_empty skips both checks.

def _no_pairs(split: str, prepared: Mapping[str, Sequence[PreparedDataset]],
              detail: str) -> DatagenError:
    """The DatagenError for a split with nothing to write, naming its inputs."""
    inputs = ", ".join(" + ".join(x for x in (p.ds["source"], p.ds["target"]) if x)
                       for p in prepared[split])
    return DatagenError("%s: no pairs to write: %s, inputs %s; pass --allow_empty to "
                        "write empty shards" % (split, detail, inputs))


def check_has_pairs(prepared: Mapping[str, Sequence[PreparedDataset]]) -> None:
    """Raises DatagenError when a split's input holds no pair (empty files, or nothing left
    after the prepare step's rejects): before anything is written."""
    for split in sorted(prepared):
        pairs = sum(min(p.source_facts["lines"], p.target_facts["lines"])
                    for p in prepared[split])
        if not pairs:
            read = sum(p.units for p in prepared[split])
            raise _no_pairs(split, prepared, "the input is empty" if not read else
                            "all %d units read were rejected" % read)


def check_written(prepared: Mapping[str, Sequence[PreparedDataset]],
                  report: Mapping[str, SplitReport]) -> None:
    """Raises DatagenError, before any output is replaced, when the encode pass wrote no
    pair of a split (every pair rejected); `report`: {split: split_report}."""
    for split in sorted(report):
        if not report[split]["pairs_written"]:
            reasons = ", ".join("%s: %d" % kv
                                for kv in sorted(report[split]["rejected_by_reason"].items()))
            raise _no_pairs(split, prepared, "all %d pairs read were rejected (%s)" % (
                report[split]["pairs_read"], reasons or "none"))


def compare_with_counters(report: Mapping[str, SplitReport], counters: Mapping[str, int]
                          ) -> List[str]:
    """Lines naming where the runner's Beam counters (`transforms.reporting.job_metrics`) disagree with
    the books of `report` ({split: split_report}); empty when they agree or the runner reported
    no counters. The books (the files themselves) are what the job trusts; a runner that
    reports only attempted counts may count a retried bundle twice."""
    differences = []
    for split, books in sorted(report.items()):
        # records are pairs, or packed records with --packed_length
        figures = {"records_written": sum(s["records"] for s in books["shards"]),
                   "pairs_read": books["pairs_read"]}
        for counted, figure in sorted(figures.items()):
            value = counters.get("%s.%s" % (split, counted))
            if value is not None and value != figure:
                differences.append("%s %s: the counters say %d, the books %d" % (
                    split, counted, value, figure))
    return differences


def nothing_usable(report: Mapping[str, SplitReport]) -> List[str]:
    """WARNING lines for what a run wrote but no training will read (`report`: {split:
    split_report}): a language pair of which every pair was rejected (its shards are
    empty, and a `Mixture` leaves it out), and with --packed_length a split or pair of
    which every pair is longer than the packed length (each alone in a record, which T2T's
    reader, whose max_length is then that length, drops)."""
    lines = []
    for split, books in sorted(report.items()):
        for pair, entry in sorted(books.get("language_pairs", {}).items()):
            if entry["pairs_read"] and not entry["pairs_written"]:
                lines.append("%s: language pair %s: all %d pairs read were rejected (%s): its "
                             "shards are empty and a Mixture of the output leaves it out" % (
                                 split, pair, entry["pairs_read"], ", ".join(
                                     "%s: %d" % kv for kv in entry["rejected_by_reason"].items())))
        packed = [(split, books.get("packing"))] + [
            ("%s: language pair %s" % (split, pair), entry.get("packing"))
            for pair, entry in sorted(books.get("language_pairs", {}).items())]
        for where, packing in packed:
            if packing and packing["pairs"] and packing["over_length"] == packing["pairs"]:
                lines.append("%s: every one of its %d pairs is longer than --packed_length %d: "
                             "each is alone in its record, and T2T's reader (max_length %d) "
                             "drops them all" % (where, packing["pairs"],
                                                 packing["packed_length"],
                                                 packing["packed_length"]))
                if where == split:
                    break  # the split's line says it for its pairs
    return lines
