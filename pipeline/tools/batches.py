"""Training batches without TensorFlow: ArrayRecord through Grain, Parquet through pyarrow
(or Hugging Face `datasets`), with `make_dataset`'s `t2t` and `nmt` semantics.

Importing this module imports neither TensorFlow nor Beam, and reading a local output
imports no Beam either (`pipeline.tools.output_files`; tests check `sys.modules` in a fresh
interpreter): a trainer's process pays neither import, and nothing is printed (Grain's
start-up lines are held back, `console.quiet_import`). A gs:// or s3:// source goes through
Beam's FileSystems, as everywhere in the project. Batches are dicts of numpy int32
arrays, keyed as `make_dataset`'s (`pipeline.tools.bucketing` does the batching); a PyTorch
`DataLoader` takes them through an `IterableDataset` (examples/read_parquet_torch.py).

    from pipeline.tools.batches import grain_batches, parquet_batches
    for batch in grain_batches("out", batch_size=4096, mode="t2t", seed=42):
        ...  # batch["inputs"], batch["targets"]: int32 [rows, longest], padded with the pad id

`source`: an output directory (its complete shards of `split`, as its summary lists them;
`problem=` names the problem where the directory holds several), or a glob or list of globs
of shard files (each glob's files sorted), checked complete as `make_dataset` checks them.
Object-store shards are copied to a local temporary directory first (Grain and pyarrow's
file readers want local files here).

Order: with `shuffle=False`, the records in shard-name order, so the batches equal
`make_dataset(..., shuffle=False)`'s on the TFRecord output of the same run.

Packed records (--packed_length; found from the records: the first ArrayRecord record, the
Parquet columns) are batched as `make_dataset` batches them: mode "t2t" only, the
segmentation and position features in the batch too, max_length by default the output's
--packed_length. With
`shuffle=True`: Grain shuffles globally (`MapDataset.shuffle`, random access: the point of
ArrayRecord), Parquet through a buffer of `shuffle_buffer_size` pairs; each epoch reshuffled
from `seed`.
"""

import contextlib
import os
import random
from typing import Any, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from pipeline.runtime import console
from pipeline.tools import bucketing, output_files
from pipeline.tools.bucketing import Batch
from pipeline.tools.mixture import Mixture
from transforms.formats.example_proto import Int64FeaturesWriter
from transforms.formats.packed_examples import PACKED_FEATURES
from transforms.shards.format_base import FEATURES
from transforms.shards.record_formats import ArrayRecordFormat, ParquetFormat, format_of
from transforms.storage import paths

Source = Union[str, Sequence[str]]


def shard_files(source: Source, split: str = "train", require_complete: bool = True,
                problem: Optional[str] = None) -> List[str]:
    """The shard paths of `source` (see the module docstring), in reading order. `problem`:
    the problem to read where an output directory holds several (required there: the error
    says so); with patterns, only that problem's shards among the files they match."""
    from pipeline.tools import reader
    if isinstance(source, str) and _is_directory(source):
        return reader.complete_output_files(source, split, problem)  # an output directory
    patterns = [source] if isinstance(source, str) else list(source)
    files: List[str] = []
    for pattern in patterns:
        matched = output_files.match(pattern)
        if problem is not None:
            matched = [p for p in matched if output_files.problems_of([p]) == [problem]]
        if not matched:
            raise ValueError("no %sfiles match %r" % (
                "" if problem is None else "shard files of problem %s " % problem, pattern))
        files.extend(matched)
    if require_complete:
        output_files.check_complete(files)
    return files


def _is_directory(source: str) -> bool:
    """Whether `source` names an output directory: a local directory (brackets and all), or
    on an object store a path without glob characters that holds a summary."""
    from pipeline.output.layout import SUMMARY_NAME
    if paths.is_local(source):
        return os.path.isdir(source)
    return not any(c in source for c in "*?[") and bool(output_files.match(
        paths.join(output_files.glob_literal(source), SUMMARY_NAME % "*")))


def _check_format(files: Sequence[str], wanted: str) -> None:
    found = sorted({format_of(path).name for path in files} - {wanted})
    if found:
        raise ValueError("these shards are %s, not %s: %s" % (
            ", ".join(found), wanted, ", ".join(p for p in files if format_of(p).name != wanted)))


Example = Tuple[np.ndarray, ...]  # a record's features in `keys` order: (inputs, targets, ...)


def _batches(examples: Iterator[Example], batch_size: int, mode: str, options: Any,
             keys: Sequence[str] = FEATURES, packed_length: int = 0, pad_id: int = 0
             ) -> Iterator[Batch]:
    if mode not in ("nmt", "t2t"):
        raise ValueError("mode must be 'nmt' or 't2t', got %r" % (mode,))
    if tuple(keys) == PACKED_FEATURES:
        if mode == "nmt":
            raise ValueError("the records are packed (--packed_length): several pairs a "
                             "record, for T2T's training; read them with mode='t2t'")
        if options.get("max_length") is None and packed_length:
            options = dict(options, max_length=packed_length)  # as make_dataset
    if mode == "nmt":
        return bucketing.nmt_batches(((e[0], e[1]) for e in examples), batch_size, **options)
    return bucketing.t2t_batches(examples, batch_size, keys=keys, pad_id=pad_id, **options)


def _summary_facts(files: Sequence[str], mode: str) -> Tuple[int, int]:
    """(--packed_length, pad id) of the summary beside `files` (`output_files.OutputFacts`), the
    mode checked against it as `make_dataset` checks it."""
    return output_files.output_facts(files, mode)


def _parse(examples: Int64FeaturesWriter, record: bytes, keys: Sequence[str] = FEATURES
           ) -> Example:
    features = examples.parse(record)
    return tuple(np.asarray(features.get(name, ()), np.int32) for name in keys)


@contextlib.contextmanager
def _local(files: Sequence[str]) -> Iterator[List[str]]:
    from transforms.shards.format_base import local_copy
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(local_copy(path)) for path in files]


def mixture_pairs(source: Mixture, num_shards: int = 1, shard_index: int = 0,
                  skip_count: Optional[int] = None, keys: Sequence[str] = FEATURES,
                  shuffle: bool = True, seed: Optional[int] = None) -> Iterator[Example]:
    """(inputs, targets) of a mixture's stream (`pipeline.tools.mixture`), in its order, any
    record format (or the features `keys`: a packed output's `PACKED_FEATURES`);
    `num_shards`, `shard_index`, `skip_count` as `Dataset.shard` / `skip`; `shuffle`,
    `seed` as `Mixture.records` takes them."""
    examples = Int64FeaturesWriter()
    records = source.records(shuffle, seed)
    return bucketing.select((_parse(examples, record, keys) for _, record in records),
                           num_shards, shard_index, skip_count)


def _mixture_batches(source: Mixture, batch_size: int, mode: str, wanted: str,
                     num_shards: int, shard_index: int, skip_count: Optional[int],
                     shuffle: bool, seed: Optional[int], num_epochs: int,
                     options: Any) -> Iterator[Batch]:
    """Batches of a mixture's stream whose shards are all of format `wanted` (packed
    records, with --packed_length, as the summary says), reshuffled as `shuffle` and `seed`
    say; a stream has no epochs (its length is the mixture's `num_records`)."""
    if num_epochs != 1:
        raise ValueError("a Mixture's stream has no epochs (num_epochs=%r): each pair is "
                         "read again and again; bound it with Mixture(num_records=...)"
                         % (num_epochs,))
    _check_format(source.all_files(), wanted)
    packed_length, pad_id = _summary_facts(source.all_files(), mode)
    keys = PACKED_FEATURES if packed_length else FEATURES
    if mode == "t2t" and options.get("drop_long_sequences", True):
        _check_some_record_kept(source, keys, options.get("min_length", 0),
                                options.get("max_length") or packed_length or batch_size)
    return _batches(mixture_pairs(source, num_shards, shard_index, skip_count, keys, shuffle,
                                  seed), batch_size, mode, options, keys, packed_length,
                    pad_id)


def _check_some_record_kept(source: Mixture, keys: Sequence[str], min_length: int,
                            max_length: int) -> None:
    """ValueError when no record of the mixture has a length (T2T's: its longer side) the
    t2t batching keeps: the mixture repeats its pairs without end, so batching would read
    and drop records forever (--packed_length below every pair makes such an output). Reads
    each pair's records up to the first one kept (one record of a usable output)."""
    examples = Int64FeaturesWriter()
    for pair in source.pairs:
        for path in source.files[pair]:
            for record in format_of(path).read_shard(path):
                inputs, targets = _parse(examples, record, keys)[:2]
                if min_length <= max(len(inputs), len(targets)) <= max_length:
                    return
    raise ValueError("%s: no record of the mixture (%s) has a length from min_length %d to "
                     "max_length %d, so every batch would be empty and the mixture, which "
                     "repeats its pairs, never ends: pass a larger max_length" % (
                         source.output_dir, ", ".join(source.pairs), min_length, max_length))


def grain_batches(source: Union[Source, Mixture], batch_size: int, mode: str = "nmt",
                  split: str = "train", shuffle: bool = True, seed: Optional[int] = None,
                  num_epochs: int = 1, num_shards: int = 1, shard_index: int = 0,
                  skip_count: Optional[int] = None, require_complete: bool = True,
                  problem: Optional[str] = None,
                  **options: Any) -> Iterator[Batch]:
    """Batches of ArrayRecord shards read with `grain.sources.ArrayRecordDataSource`.
    `options`: the mode's, as `make_dataset` takes them (nmt: src_max_len, tgt_max_len,
    num_buckets, sos_id, eos_id; t2t: max_length, min_length, min_length_bucket,
    length_bucket_step, drop_long_sequences). `problem`: as `shard_files`. Grain is imported
    without its start-up lines (`console.quiet_import`). `seed`: default 0. A `Mixture`
    source is its stream (`Mixture.records`): `shuffle` reshuffles each pair every cycle,
    `seed` (default the mixture's own) seeds the draw and the orders, and num_epochs must
    be 1 (the stream's length is the mixture's `num_records`)."""
    if isinstance(source, Mixture):
        yield from _mixture_batches(source, batch_size, mode, ArrayRecordFormat.name, num_shards,
                                    shard_index, skip_count, shuffle, seed, num_epochs,
                                    options)
        return
    grain = console.quiet_import("grain")

    files = shard_files(source, split, require_complete, problem)
    _check_format(files, ArrayRecordFormat.name)
    packed_length, pad_id = _summary_facts(files, mode)
    examples = Int64FeaturesWriter()
    with _local(files) as local:
        records = grain.MapDataset.source(grain.sources.ArrayRecordDataSource(local))
        keys: Tuple[str, ...] = FEATURES
        if len(records) and "inputs_segmentation" in examples.parse(records[0]):
            keys = PACKED_FEATURES
        records = records[shard_index::num_shards]
        if skip_count:
            records = records[skip_count:]
        for epoch in range(num_epochs):
            epoch_records = records.shuffle((seed or 0) + epoch) if shuffle else records
            pairs = epoch_records.map(lambda record: _parse(examples, record, keys))
            yield from _batches(iter(pairs), batch_size, mode, options, keys, packed_length,
                                pad_id)


def parquet_pairs(files: Sequence[str], keys: Sequence[str] = FEATURES) -> Iterator[Example]:
    """(inputs, targets) of Parquet shards in order, one row group in memory at a time (or
    the features `keys`: `parquet_keys`)."""
    import pyarrow.parquet as pq
    with _local(files) as local:
        for path in local:
            for group in pq.ParquetFile(path).iter_batches(columns=list(keys)):
                columns = [group.column(name) for name in keys]
                offsets = [np.asarray(c.offsets) for c in columns]
                values = [np.asarray(c.values, np.int32) for c in columns]
                for i in range(len(group)):
                    yield tuple(v[o[i]:o[i + 1]] for v, o in zip(values, offsets))


def parquet_keys(files: Sequence[str]) -> Tuple[str, ...]:
    """The features of Parquet shards: `PACKED_FEATURES` when their columns hold them."""
    import pyarrow.parquet as pq
    if not files:
        return FEATURES
    with _local(files[:1]) as local:
        names = pq.ParquetFile(local[0]).schema_arrow.names
    return PACKED_FEATURES if "inputs_segmentation" in names else FEATURES


def parquet_batches(source: Union[Source, Mixture], batch_size: int, mode: str = "nmt",
                    split: str = "train", shuffle: bool = True, seed: Optional[int] = None,
                    num_epochs: int = 1, shuffle_buffer_size: int = 100_000,
                    num_shards: int = 1, shard_index: int = 0,
                    skip_count: Optional[int] = None, require_complete: bool = True,
                    problem: Optional[str] = None, **options: Any) -> Iterator[Batch]:
    """Batches of Parquet shards streamed with pyarrow (`options` and `problem` as
    `grain_batches`; a `Mixture` source as there)."""
    if isinstance(source, Mixture):
        yield from _mixture_batches(source, batch_size, mode, ParquetFormat.name, num_shards,
                                    shard_index, skip_count, shuffle, seed, num_epochs,
                                    options)
        return
    files = shard_files(source, split, require_complete, problem)
    _check_format(files, ParquetFormat.name)
    packed_length, pad_id = _summary_facts(files, mode)
    keys = parquet_keys(files)
    for epoch in range(num_epochs):
        pairs = bucketing.select(parquet_pairs(files, keys), num_shards, shard_index,
                                skip_count)
        if shuffle:
            pairs = bucketing.buffer_shuffled(pairs, shuffle_buffer_size,
                                              random.Random((seed or 0) + epoch))
        yield from _batches(pairs, batch_size, mode, options, keys, packed_length, pad_id)


def dataset_batches(dataset: Any, batch_size: int, mode: str = "nmt", pad_id: int = 0,
                    **options: Any) -> Iterator[Batch]:
    """Batches of a Hugging Face `datasets.Dataset` of our Parquet shards
    (`load_dataset("parquet", data_files=...)`), in its order (shuffle it with
    `dataset.shuffle(seed=...)` first). `pad_id` (mode t2t): the summary's `vocab` entries
    say it (`pad_id`); a Dataset does not carry it."""
    keys = (PACKED_FEATURES if "inputs_segmentation" in dataset.column_names
            else FEATURES)
    rows = dataset.with_format("numpy")
    examples = (tuple(np.asarray(row[key], np.int32) for key in keys) for row in rows)
    return _batches(examples, batch_size, mode, options, keys, pad_id=pad_id)
