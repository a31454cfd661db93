"""The record of a rejected pair, one line of `rejects/{split}.jsonl`."""

REJECT_TEXT_CHARS = 500


def reject_record(ds, ordinal, where, reason, source, target):
    """`ds` is the dataset dict; `dataset_index` and `ordinal` give the file's sort order."""
    return {"split": ds["split"], "dataset": ds["name"], "dataset_index": ds["index"],
            "ordinal": ordinal,
            "file": ds["source"] if not ds.get("target") else "%s + %s" % (ds["source"], ds["target"]),
            "where": where, "reason": reason, "source": (source or "")[:REJECT_TEXT_CHARS],
            "target": (target or "")[:REJECT_TEXT_CHARS]}
