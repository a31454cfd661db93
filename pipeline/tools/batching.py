"""The `t2t` and `nmt` batching of `pipeline.tools.reader`, on numpy, without TensorFlow.

The readers of ArrayRecord (Grain) and Parquet (pyarrow, Hugging Face datasets) in
`pipeline.tools.batches` hand their pairs here, so every format is batched the same way:
given the same pairs in the same order, these generators yield the batches `make_dataset`
yields (tests/tools/test_batches.py compares them with tf.data on the TFRecord output).
The steps and their order are `reader.py`'s (its docstring says each):

- nmt: drop pairs with an empty side; cut to src_max_len / tgt_max_len; target_input =
  [sos] + target, target_output = target + [eos]; padded with eos_id; with num_buckets > 1,
  tf.data's `group_by_window` (a key's window is emitted when full; at the end the partial
  windows in key order);
- t2t: length = max(len(inputs), len(targets)); keep min_length <= length <= max_length
  (when dropping long sequences); `bucket_by_sequence_length` with T2T's batching scheme,
  padded with 0 to the longest of each batch.

Shuffling is the reader's (a global shuffle in Grain, a buffer for Parquet): it cannot
reproduce tf.data's random stream, only its semantics.
"""

from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, TypeVar

import numpy as np

from pipeline.tools.reader import NMT_KEYS, t2t_batching_scheme

Pair = Tuple[np.ndarray, np.ndarray]  # (inputs, targets) as int32 arrays
Batch = Dict[str, np.ndarray]
Row = Tuple[np.ndarray, np.ndarray, np.ndarray]  # nmt: source, target_input, target_output
T = TypeVar("T")


def pad(rows: Sequence[np.ndarray], value: int) -> np.ndarray:
    """[len(rows), longest] int32, each row followed by `value`."""
    out = np.full((len(rows), max((len(r) for r in rows), default=0)), value, np.int32)
    for i, row in enumerate(rows):
        out[i, :len(row)] = row
    return out


def _group_by_window(items: Iterable[Tuple[int, int, T]]) -> Iterator[List[T]]:
    """tf.data's `group_by_window` for (key, window size, item): a key's window is yielded
    when it holds its size; at the end the rest, in key order."""
    windows: Dict[int, List[T]] = {}
    for key, size, item in items:
        window = windows.setdefault(key, [])
        window.append(item)
        if len(window) >= size:
            yield window
            windows[key] = []
    for key in sorted(windows):
        if windows[key]:
            yield windows[key]


def nmt_batches(pairs: Iterable[Pair], batch_size: int, src_max_len: Optional[int] = None,
                tgt_max_len: Optional[int] = None, num_buckets: int = 1, sos_id: int = 1,
                eos_id: int = 2) -> Iterator[Batch]:
    """tensorflow/nmt's batches (`reader.py`, mode "nmt") of word-id pairs without EOS."""
    sos = np.array([sos_id], np.int32)
    eos = np.array([eos_id], np.int32)

    def rows() -> Iterator[Row]:
        for src, tgt in pairs:
            if not len(src) or not len(tgt):
                continue
            if src_max_len:
                src = src[:src_max_len]
            if tgt_max_len:
                tgt = tgt[:tgt_max_len]
            yield src, np.concatenate((sos, tgt)), np.concatenate((tgt, eos))

    def batch(window: Sequence[Row]) -> Batch:
        src, tgt_in, tgt_out = zip(*window)
        return dict(zip(NMT_KEYS, (pad(src, eos_id), pad(tgt_in, eos_id), pad(tgt_out, eos_id),
                                   np.array([len(s) for s in src], np.int32),
                                   np.array([len(t) for t in tgt_in], np.int32))))

    if num_buckets > 1:
        width = (src_max_len + num_buckets - 1) // num_buckets if src_max_len else 10
        keyed = ((min(num_buckets, max(len(r[0]) // width, len(r[1]) // width)), batch_size, r)
                 for r in rows())
        for window in _group_by_window(keyed):
            yield batch(window)
        return
    pending: List[Row] = []
    for row in rows():
        pending.append(row)
        if len(pending) == batch_size:
            yield batch(pending)
            pending = []
    if pending:
        yield batch(pending)


def t2t_batches(pairs: Iterable[Pair], batch_size: int, max_length: Optional[int] = None,
                min_length: int = 0, min_length_bucket: int = 8,
                length_bucket_step: float = 1.1, drop_long_sequences: bool = True
                ) -> Iterator[Batch]:
    """T2T's length-bucketed batches (`reader.py`, mode "t2t"; batch_size counts tokens)."""
    scheme = t2t_batching_scheme(batch_size, max_length, min_length_bucket, length_bucket_step)
    boundaries, sizes = scheme["boundaries"], scheme["batch_sizes"]
    longest = scheme["max_length"] if drop_long_sequences else 10 ** 9

    def keyed() -> Iterator[Tuple[int, int, Pair]]:
        for inputs, targets in pairs:
            length = max(len(inputs), len(targets))
            if min_length <= length <= longest:
                bucket = int(np.searchsorted(boundaries, length, side="right"))
                yield bucket, sizes[bucket], (inputs, targets)

    for window in _group_by_window(keyed()):
        inputs, targets = zip(*window)
        yield {"inputs": pad(inputs, 0), "targets": pad(targets, 0)}


def select(pairs: Iterable[Pair], num_shards: int = 1, shard_index: int = 0,
           skip_count: Optional[int] = None) -> Iterator[Pair]:
    """`Dataset.shard(num_shards, shard_index)` then `skip(skip_count)`."""
    skip = skip_count or 0
    for i, pair in enumerate(pairs):
        if i % num_shards == shard_index:
            if skip:
                skip -= 1
                continue
            yield pair
