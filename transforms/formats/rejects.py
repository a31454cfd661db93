"""A rejected pair: why it is rejected, its record, and its line in `rejects/{split}.jsonl`.

One place for the three, because the prepare step (`materialize`, for converted datasets)
and the encode step (`encode_pairs`, for line files read in place) both reject pairs, and a
pair must get the same reason and the same JSON line whichever step saw it. Pure Python.
"""

import json
from typing import Optional

from transforms.contracts.elements import DatasetSpec, RejectRecord

REJECT_TEXT_CHARS = 500  # a rejected side is kept up to this many characters
OVER_MAX_LENGTH = "over_max_length"  # --max_length: a side has more ids than that


def max_length_of(split: str, max_length: int) -> int:
    """The --max_length a split's pairs are filtered at (0: none): train only. T2T filters
    by length in training (`data_reader.input_fn` drops long sequences when training, and in
    evaluation only with `hparams.eval_drop_long_sequences`, False by default), so its dev
    set is evaluated whole."""
    return max_length if split == "train" else 0


def pair_reject_reason(source: str, target: str, max_chars: int) -> Optional[str]:
    """Why a pair of stripped sides cannot be written, or None: a side is empty
    (T2T drops such pairs silently), or longer than `max_chars` (--max_line_chars, 0: no
    limit)."""
    if not source or not target:
        return ("empty_pair" if not source and not target
                else "empty_source" if not source else "empty_target")
    if max_chars and max(len(source), len(target)) > max_chars:
        return "line_too_long"
    return None


def reject_record(ds: DatasetSpec, ordinal: int, where: str, reason: str,
                  source: Optional[str], target: Optional[str]) -> RejectRecord:
    """`ds` is the dataset dict; `dataset_index` and `ordinal` give the file's sort order."""
    return {"split": ds["split"], "dataset": ds["name"], "dataset_index": ds["index"],
            "ordinal": ordinal,
            "file": ds["source"] if not ds.get("target") else "%s + %s" % (ds["source"], ds["target"]),
            "where": where, "reason": reason, "source": (source or "")[:REJECT_TEXT_CHARS],
            "target": (target or "")[:REJECT_TEXT_CHARS]}


def reject_line(record: RejectRecord) -> bytes:
    """A reject record as one UTF-8 JSON line (keys sorted, text unescaped)."""
    return (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
