"""The `t2t` and `nmt` batching of `pipeline.tools.reader`, on numpy, without TensorFlow.

The readers of ArrayRecord (Grain) and Parquet (pyarrow, Hugging Face datasets) in
`pipeline.tools.batches` hand their pairs here, so every format is batched the same way:
given the same pairs in the same order, these generators yield the batches `make_dataset`
yields (tests/end_to_end/test_output_formats.py compares them with tf.data on the TFRecord output).
The steps and their order are `reader.py`'s (its docstring says each); T2T's batching scheme
(`t2t_batching_scheme`) is here, for both.

- nmt: drop pairs with an empty side; cut to src_max_len / tgt_max_len; target_input =
  [sos] + target, target_output = target + [eos]; padded with eos_id; with num_buckets > 1,
  tf.data's `group_by_window` (a key's window is emitted when full; at the end the partial
  windows in key order);
- t2t: length = max(len(inputs), len(targets)); keep min_length <= length <= max_length
  (when dropping long sequences); `bucket_by_sequence_length` with T2T's batching scheme,
  padded with 0 to the longest of each batch; packed records (--packed_length) carry their
  segmentation and position features along, each padded the same way.

Shuffling is the reader's (a global shuffle in Grain, a buffer for Parquet): it cannot
reproduce tf.data's random stream, only its semantics.
"""

import random
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, TypeVar

import numpy as np

NMT_KEYS = ("source", "target_input", "target_output", "source_sequence_length",
            "target_sequence_length")

# T2T's data_reader.batching_scheme: the window size is the largest of these <= 3 * max batch.
_HIGHLY_COMPOSITE_NUMBERS = (
    1, 2, 4, 6, 12, 24, 36, 48, 60, 120, 180, 240, 360, 720, 840, 1260, 1680,
    2520, 5040, 7560, 10080, 15120, 20160, 25200, 27720, 45360, 50400, 55440,
    83160, 110880, 166320, 221760, 277200, 332640, 498960, 554400, 665280,
    720720, 1081080, 1441440, 2162160, 2882880, 3603600, 4324320, 6486480,
    7207200, 8648640, 10810800, 14414400, 17297280, 21621600, 32432400,
    36756720, 43243200, 61261200, 73513440, 110270160)


def t2t_bucket_boundaries(max_length: int, min_length: int = 8,
                          length_bucket_step: float = 1.1) -> List[int]:
    """T2T's `data_reader._bucket_boundaries`: min_length, then x -> max(x + 1,
    int(x * length_bucket_step)) while below max_length."""
    if not length_bucket_step > 1.0:
        raise ValueError("length_bucket_step must be > 1.0, got %r" % (length_bucket_step,))
    x = min_length
    boundaries = []
    while x < max_length:
        boundaries.append(x)
        x = max(x + 1, int(x * length_bucket_step))
    return boundaries


def t2t_batching_scheme(batch_size: int, max_length: Optional[int] = None,
                        min_length_bucket: int = 8, length_bucket_step: float = 1.1
                        ) -> Dict[str, Any]:
    """T2T's `data_reader.batching_scheme` (shard_multiplier = length_multiplier = 1).

    Returns {"boundaries": [...], "batch_sizes": [...] (one more than boundaries),
    "max_length": max_length or batch_size}. batch_size is in tokens.
    """
    max_length = max_length or batch_size
    boundaries = t2t_bucket_boundaries(max_length, min_length_bucket, length_bucket_step)
    batch_sizes = [max(1, batch_size // length) for length in boundaries + [max_length]]
    max_batch_size = max(batch_sizes)
    window_size = max(n for n in _HIGHLY_COMPOSITE_NUMBERS if n <= 3 * max_batch_size)
    divisors = [d for d in range(1, window_size + 1) if window_size % d == 0]
    batch_sizes = [max(d for d in divisors if d <= bs) for bs in batch_sizes]
    return {"boundaries": boundaries, "batch_sizes": batch_sizes, "max_length": max_length}


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


def t2t_batches(pairs: Iterable[Sequence[np.ndarray]], batch_size: int,
                max_length: Optional[int] = None, min_length: int = 0,
                min_length_bucket: int = 8, length_bucket_step: float = 1.1,
                drop_long_sequences: bool = True,
                keys: Sequence[str] = ("inputs", "targets"), pad_id: int = 0
                ) -> Iterator[Batch]:
    """T2T's length-bucketed batches (`reader.py`, mode "t2t"; batch_size counts tokens) of
    `pairs`: (inputs, targets), or with `keys` tuples of those features (packed records:
    `transforms.formats.packed_examples.PACKED_FEATURES`, inputs and targets first).
    Inputs and targets are padded with `pad_id` (the vocabulary's), the packed features
    with 0."""
    scheme = t2t_batching_scheme(batch_size, max_length, min_length_bucket, length_bucket_step)
    boundaries, sizes = scheme["boundaries"], scheme["batch_sizes"]
    longest = scheme["max_length"] if drop_long_sequences else 10 ** 9

    def keyed() -> Iterator[Tuple[int, int, Sequence[np.ndarray]]]:
        for example in pairs:
            length = max(len(example[0]), len(example[1]))
            if min_length <= length <= longest:
                bucket = int(np.searchsorted(boundaries, length, side="right"))
                yield bucket, sizes[bucket], example

    for window in _group_by_window(keyed()):
        yield {key: pad(column, pad_id if i < 2 else 0)
               for i, (key, column) in enumerate(zip(keys, zip(*window)))}


def select(pairs: Iterable[T], num_shards: int = 1, shard_index: int = 0,
           skip_count: Optional[int] = None) -> Iterator[T]:
    """`Dataset.shard(num_shards, shard_index)` then `skip(skip_count)`."""
    skip = skip_count or 0
    for i, pair in enumerate(pairs):
        if i % num_shards == shard_index:
            if skip:
                skip -= 1
                continue
            yield pair


def buffer_shuffled(items: Iterable[T], size: int, rng: random.Random) -> Iterator[T]:
    """tf.data's shuffle buffer: fill `size`, then yield a random one and refill."""
    buffer: List[T] = []
    for item in items:
        if len(buffer) < size:
            buffer.append(item)
            continue
        i = rng.randrange(size)
        yield buffer[i]
        buffer[i] = item
    rng.shuffle(buffer)
    yield from buffer
