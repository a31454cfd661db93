"""Reading our TFRecords for training: `tf.data` pipelines in tensorflow/nmt's and in
Tensor2Tensor's style.

This module is for training code and imports TensorFlow (the Beam job never imports it).
Files are `tf.data.TFRecordDataset(sorted(tf.io.gfile.glob(pattern)))`: the shards in name
order, read one after another, so with `shuffle=False` the order is the files' order. Each
record is a `tf.train.Example` with int64 list features `inputs` and `targets`; other features
are ignored. Ids come out as int32 (tensorflow/nmt's dtype; T2T's `cast_ints_to_int32`).

Both modes build in eager and in graph mode (a `tf.compat.v1` graph run by a `Session` through
an initializable iterator, as tensorflow/nmt trains; T2T's Estimator `input_fn`): nothing here
iterates a dataset while building it.

Neither mode repeats the data: one pass over the dataset is one epoch, as with
tensorflow/nmt's iterator (re-initialized every epoch). Use `.repeat()` for T2T-style
step-based training.

mode="nmt" -- records of word-vocabulary ids WITHOUT EOS (what `--vocab_type word` writes),
vocabulary ids as in `transforms.codecs.word` (<unk>=0, <s>=1, </s>=2). The pipeline is
tensorflow/nmt's `iterator_utils.get_iterator`, step for step and in its order, except that
the text split and vocabulary lookup are already done (our records hold the ids
`index_table_from_file` would give, since tokenization and ids are the same):

 1. `shard(num_shards, shard_index)` (record i goes to shard i % num_shards);
 2. `skip(skip_count)` if skip_count is not None;
 3. `shuffle(output_buffer_size, random_seed, reshuffle_each_iteration)`; output_buffer_size
    defaults to batch_size * 1000 as in nmt. nmt always shuffles; `shuffle=False` (our addition)
    leaves this step out;
 4. drop pairs whose source or target is empty;
 5. `source[:src_max_len]`, `target[:tgt_max_len]` (when given and non-zero: nmt tests
    `if src_max_len:`, so 0 means no limit);
 6. target_input = [sos_id] + target, target_output = target + [eos_id];
 7. source_sequence_length = len(source), target_sequence_length = len(target_input)
    (= len(target) + 1);
 8. `padded_batch(batch_size)` padding source, target_input and target_output with eos_id (the
    lengths are unpadded scalars). If num_buckets > 1, batching is per bucket with
    `group_by_window(key_func, reduce_func=padded_batch, window_size=batch_size)` where
    bucket_width = ceil(src_max_len / num_buckets) if src_max_len else 10 and
    key = min(num_buckets, max(source_len // bucket_width, target_len // bucket_width))
    with target_len the length of target_input (as in nmt). So there are num_buckets + 1
    keys (0..num_buckets); a batch holds up to batch_size pairs of one key; a key's window is
    emitted when it is full, and the partial windows at the end of the data are emitted too
    (so every pair that passed steps 1-4 is in exactly one batch).

 Elements are dicts (tensorflow/nmt's `BatchedInput` field names)::

    source                  int32 [batch, max_src_len]   padded with eos_id
    target_input            int32 [batch, max_tgt_len]   <s> w1 .. wn, padded with eos_id
    target_output           int32 [batch, max_tgt_len]   w1 .. wn </s>, padded with eos_id
    source_sequence_length  int32 [batch]
    target_sequence_length  int32 [batch]                n + 1

 or, with `as_tuple=True`, tuples in that order (nmt's order). sos_id/eos_id are used for both
 sides (nmt looks them up separately in the source and target tables; with our vocabularies
 both are 1 and 2). nmt pads the source with the SOURCE table's eos id; same here.
 Assumption: nmt's intermediate `.prefetch(output_buffer_size)` calls do not change the
 elements or their order, so they are left out (one `prefetch(AUTOTUNE)` at the end).
 Records written with T2T's convention (ids ending in EOS=1) must not be read in this mode.

mode="t2t" -- T2T-style records (subword ids, each sequence ending in EOS=1, 0 = PAD), batched
by length the way T2T's input pipeline (`data_reader.input_fn`, GPU branch,
`batch_size_means_tokens`, as for all Text2Text problems) does:

 1-3. shard / skip / shuffle as above; output_buffer_size defaults to 1024 (T2T's
    `Problem.dataset` `shuffle_buffer_size`);
 4. length = max(len(inputs), len(targets)) (T2T's `example_length`, EOS included); drop
    examples with length < min_length (default 0) and, if drop_long_sequences (default True,
    T2T's training behaviour), length > max_length. max_length defaults to batch_size (T2T:
    `hparams.max_length or hparams.batch_size`);
 5. `bucket_by_sequence_length` with T2T's `batching_scheme(batch_size, max_length,
    min_length_bucket=8, length_bucket_step=1.1)` (see `t2t_batching_scheme`): boundaries
    8, 9, 10, ..., x -> max(x + 1, int(x * 1.1)), ... below max_length; bucket i holds lengths
    in [boundaries[i-1], boundaries[i]) (last bucket: >= the last boundary), with batch size
    max(1, batch_size // boundaries[i]) (last: batch_size // max_length), rounded down to a
    divisor of T2T's highly composite window size exactly as T2T does. So batch_size counts
    TOKENS: a batch's padded token count (batch rows x longest sequence in it) is at most
    about batch_size. Batches are padded with the pad id (0, T2T's PAD; the vocabulary's own
    as the summary records it: `Vocabulary.pad_id`) to the longest sequence in the batch
    (`inputs` and `targets` padded separately);
 6. if shuffle and batch_shuffle_size (default 512, T2T's `hparams.batch_shuffle_size`):
    the batches are shuffled with that buffer (T2T does this in training).

 Elements: {"inputs": int32 [batch, len_in], "targets": int32 [batch, len_tgt]}.
 Packed records (--packed_length; found from the first record, read in Python, so that
 `make_dataset` builds in graph mode too): the elements also hold
 `inputs_segmentation`, `inputs_position`, `targets_segmentation` and `targets_position`
 (each as long as its side, padded with 0), and max_length defaults to the output's
 --packed_length (from the summary beside the records), as T2T's `Text2TextProblem.max_length`
 is the problem's `packed_length`: a record holding one pair longer than that is dropped in
 training, as T2T drops it. Mode "nmt" refuses packed records.
 Not reproduced: T2T's file-level shuffling and parallel interleave (our shards are already
 globally shuffled by datagen), the random skip at start, `shard_multiplier` /
 `length_multiplier` (multi-GPU data shards: pass the per-step global token budget as
 batch_size), TPU fixed-shape padding, and the 4-D feature reshape of `standardize_shapes`.

Example training loop (nmt mode)::

    import tensorflow as tf
    from pipeline.tools.reader import make_dataset

    train = make_dataset("out/translate_envi-train-*", batch_size=128, mode="nmt",
                         src_max_len=50, tgt_max_len=50, num_buckets=5, random_seed=42)
    for epoch in range(12):
        for batch in train:                    # reshuffled every epoch
            with tf.GradientTape() as tape:
                logits = model(batch["source"], batch["source_sequence_length"],
                               batch["target_input"], batch["target_sequence_length"],
                               training=True)  # [batch, max_tgt_len, tgt_vocab_size]
                weights = tf.sequence_mask(batch["target_sequence_length"],
                                           tf.shape(batch["target_output"])[1],
                                           dtype=logits.dtype)
                xent = tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=batch["target_output"], logits=logits)
                # nmt's loss: summed over tokens, divided by the number of sentences
                loss = tf.reduce_sum(xent * weights) / tf.cast(
                    tf.shape(batch["source"])[0], logits.dtype)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))

Example training loop (t2t mode)::

    train = make_dataset("out/translate_enzh_wmt8k-train-*", batch_size=4096, mode="t2t",
                         random_seed=42).repeat()
    for step, batch in enumerate(train.take(250000)):
        inputs, targets = batch["inputs"], batch["targets"]   # 0-padded, EOS=1 included
        with tf.GradientTape() as tape:
            # decoder input = targets shifted right by one (T2T's shift_right)
            logits = model(inputs, targets, training=True)
            weights = tf.cast(tf.not_equal(targets, 0), logits.dtype)  # weights_nonzero
            xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets,
                                                                  logits=logits)
            loss = tf.reduce_sum(xent * weights) / tf.reduce_sum(weights)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""

import dataclasses
from typing import Any, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from pipeline.runtime import console
from pipeline.tools import output_files
from pipeline.tools.read_options import (Batching, NmtBatching, RecordReading, T2TBatching,
                                         options_of)
from pipeline.tools.bucketing import NMT_KEYS, t2t_batching_scheme, t2t_bucket_boundaries  # noqa: F401
from pipeline.tools.output_files import IncompleteOutputError, check_complete
from transforms.errors import StoreUnreachable

__all__ = ["IncompleteOutputError", "NmtBatching", "RecordReading", "StoreUnreachableError",
           "T2TBatching", "check_complete", "complete_output_files", "file_system_options",
           "make_dataset", "read_dataset", "t2t_batching_scheme", "t2t_bucket_boundaries"]


def _tensorflow() -> Any:
    """TensorFlow, imported without its start-up lines (`console.quiet_import`: they are
    held back unless TF_CPP_MIN_LOG_LEVEL is set)."""
    return console.quiet_import("tensorflow")


def _glob(pattern: str) -> Tuple[List[str], bool]:
    """(sorted matching paths, whether TensorFlow reads them). TensorFlow 2.16+ has no s3://
    (it moved to tensorflow-io): such paths are listed and read through Beam's FileSystems,
    configured by `file_system_options`."""
    tf = _tensorflow()
    try:
        return sorted(tf.io.gfile.glob(pattern)), True
    except tf.errors.UnimplementedError:  # "File system scheme 's3' not implemented"
        return output_files.match(pattern), False


def file_system_options(flags: Iterable[str]) -> None:
    """Hands Beam's file system flags (`["--s3_endpoint_url", URL, ...]`, as the job takes
    them) to FileSystems in this process, for paths TensorFlow cannot read (s3://)."""
    FileSystems = output_files.beam_file_systems()
    from apache_beam.options.pipeline_options import PipelineOptions
    FileSystems.set_options(PipelineOptions(list(flags)))


# The object store of an output directory did not answer (one line: the store's error): the
# job's one store-unreachable error, under the name this module has always given it.
StoreUnreachableError = StoreUnreachable


def complete_output_files(output_dir: str, split: str = "train",
                          problem: Optional[str] = None, verify_checksums: bool = False,
                          flags: Optional[Sequence[str]] = None) -> List[str]:
    """The shard paths of `split` in a complete datagen output directory, in name order, as
    its summary lists them; IncompleteOutputError when the output is not complete: no
    marker, or a shard of any split missing or not at the size the summary records (one
    listing), or with `verify_checksums` (each shard read once) not of its recorded crc32c
    and record count. The one line a trainer needs: `make_dataset(complete_output_files(DIR),
    ...)`. `flags`: Beam's file system flags (as `file_system_options` takes them), given
    here so that an object store is asked first with short timeouts (gs:// is asked always:
    its settings come from the environment); StoreUnreachableError when it does not answer.
    `problem`: the problem to read where the directory holds several (its error says so).

    A local directory without `flags` and `verify_checksums` is read without importing Beam
    (`output_files.local_split_shards`)."""
    from transforms.storage import paths
    if flags is None and not verify_checksums and paths.is_local(output_dir):
        return output_files.local_split_shards(output_dir, split, problem)
    FileSystems = output_files.beam_file_systems()
    from apache_beam.options.pipeline_options import PipelineOptions
    from pipeline.tools import inspect
    from pipeline.runtime.errors import DatagenError
    from transforms.storage.object_stores import ObjectStores, StoreSettings
    stores = None
    if flags is not None:
        file_system_options(flags)
    if flags is not None or output_dir.startswith("gs://"):
        stores = ObjectStores(StoreSettings.from_options(PipelineOptions(list(flags or ()))))
        try:
            inspect.check_store(output_dir, stores)
        except DatagenError as e:
            raise StoreUnreachableError(str(e)) from None
    problem = output_files.find_problem(output_dir, problem)
    summary = output_files.read_summary(output_dir, problem, stores)
    if split not in summary["splits"]:
        raise ValueError("%s: problem %s has no split %r" % (output_dir, problem, split))
    try:
        inspect.check_shards(output_dir, summary, stores, verify_checksums)
    except DatagenError as e:
        raise IncompleteOutputError(str(e)) from None
    return [FileSystems.join(output_dir, s["name"])
            for s in sorted(summary["splits"][split]["shards"], key=lambda s: s["name"])]


def _record_files(file_pattern: Union[str, Sequence[str]], require_complete: bool = True
                  ) -> List[Tuple[str, bool]]:
    """[(path, whether TensorFlow reads it)] of the files of `file_pattern` (a glob or a list
    of globs)."""
    patterns = [file_pattern] if isinstance(file_pattern, str) else list(file_pattern)
    files: List[Tuple[str, bool]] = []
    for pattern in patterns:
        matched, by_tf = _glob(pattern)
        if not matched:
            raise ValueError("no files match %r" % (pattern,))
        files.extend((path, by_tf) for path in matched)
    if require_complete:
        check_complete([path for path, _ in files])
    return files


def _records_dataset(tf: Any, files: List[Tuple[str, bool]]) -> Any:
    """The serialized records of `files` in order: TFRecordDataset where TensorFlow reads
    the files, else a generator reading them through Beam's FileSystems with the project's
    TFRecord reader (checksums checked)."""
    from transforms.shards.record_formats import TFRecordFormat, format_of
    others = sorted({format_of(path).name for path, _ in files} - {TFRecordFormat.name})
    if any(name.startswith("text") for name in others):
        raise ValueError("make_dataset reads TFRecord shards; these are %s: line-aligned "
                         "text, for a trainer that tokenizes (Marian, OpenNMT-py)"
                         % ", ".join(others))
    if others:
        raise ValueError("make_dataset reads TFRecord shards; these are %s: read them with "
                         "pipeline.tools.batches (Grain for array_record, pyarrow for parquet)"
                         % ", ".join(others))
    if all(by_tf for _, by_tf in files):
        return tf.data.TFRecordDataset([path for path, _ in files])

    def records() -> Iterator[bytes]:
        FileSystems = output_files.beam_file_systems()
        from transforms.formats.tfrecord_framing import read_records
        for path, _ in files:
            with FileSystems.open(path, compression_type="uncompressed") as f:
                yield from read_records(f)
    return tf.data.Dataset.from_generator(records, output_signature=tf.TensorSpec((), tf.string))


def _first_record_packed(files: Sequence[Tuple[str, bool]]) -> bool:
    """Whether the records are packed (--packed_length): the first record of the first file
    holding one has the packed features (`transforms.formats.packed_examples`). Read in
    Python with the project's TFRecord framing (`tf.io.gfile` where TensorFlow reads the
    file, else Beam's FileSystems), not by iterating a tf.data.Dataset: the features are
    the dataset's structure, decided while it is built, and graph mode (a TF1 `Session`, an
    Estimator's `input_fn`) cannot iterate one."""
    from transforms.formats.example_proto import Int64FeaturesWriter
    from transforms.formats.tfrecord_framing import read_records
    tf = _tensorflow()
    for path, by_tf in files:
        opened = (tf.io.gfile.GFile(path, "rb") if by_tf else output_files.beam_file_systems()
                  .open(path, compression_type="uncompressed"))
        with opened as f:
            for raw in read_records(f):
                return "inputs_segmentation" in Int64FeaturesWriter().parse(raw)
    return False


def make_dataset(file_pattern: Any, batch_size: int, mode: str = "nmt", **settings: Any
                 ) -> Any:
    """A batched `tf.data.Dataset` over the TFRecord files matching `file_pattern`: the flat
    call, `read_dataset` with its options given as keywords (`read_options.options_of`).

    file_pattern: a glob (or a list of globs; files of each are sorted, lists concatenated);
      any path TensorFlow reads, and s3:// through Beam's FileSystems
      (`file_system_options`). `complete_output_files(output_dir)` gives a complete
      output's shards. Or a `pipeline.tools.mixture.Mixture` (language pairs mixed).
    batch_size: sentence pairs per batch in mode "nmt"; TOKENS per batch in mode "t2t".
    mode: "nmt" or "t2t" (see the module docstring for each pipeline).
    settings: both modes' (`RecordReading`): num_shards, shard_index, skip_count, shuffle,
      random_seed, output_buffer_size, reshuffle_each_iteration, num_parallel_calls,
      require_complete; nmt only (`NmtBatching`): src_max_len, tgt_max_len, num_buckets,
      sos_id, eos_id, as_tuple; t2t only (`T2TBatching`): max_length (default batch_size;
      for packed records the output's --packed_length), min_length (0), min_length_bucket
      (8), length_bucket_step (1.1), drop_long_sequences (True), batch_shuffle_size (512).
    """
    reading, batching = options_of(mode, settings)
    return read_dataset(file_pattern, batch_size, batching, reading)


def read_dataset(file_pattern: Any, batch_size: int, batching: Batching,
                 reading: RecordReading = RecordReading()) -> Any:
    """A batched `tf.data.Dataset` over the records of `file_pattern` (as `make_dataset`
    takes it), read as `reading` says and batched as `batching` says: `NmtBatching()` or
    `T2TBatching()` (the mode is the type)."""
    tf = _tensorflow()
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1, got %r" % (batch_size,))
    mode = batching.mode
    from transforms.formats.packed_examples import PACKED_FEATURES, PAIR_FEATURES
    mixture = hasattr(file_pattern, "tf_records")  # a `pipeline.tools.mixture.Mixture`
    files = (_record_files(file_pattern.all_files(), False) if mixture
             else _record_files(file_pattern, reading.require_complete))
    packed_length, pad_id = output_files.output_facts([path for path, _ in files], mode)
    dataset = (file_pattern.tf_records(tf, reading.shuffle, reading.random_seed) if mixture
               else _records_dataset(tf, files))
    keys = PACKED_FEATURES if _first_record_packed(files) else PAIR_FEATURES
    if keys is PACKED_FEATURES and mode == "nmt":
        raise ValueError("the records are packed (--packed_length): several pairs a record, "
                         "for T2T's training; read them with mode='t2t'")
    dataset = dataset.shard(reading.num_shards, reading.shard_index)
    if reading.skip_count is not None:
        dataset = dataset.skip(reading.skip_count)
    if reading.shuffle:
        buffer_size = reading.output_buffer_size
        dataset = dataset.shuffle(batching.buffer_size(batch_size) if buffer_size is None
                                  else buffer_size, reading.random_seed,
                                  reading.reshuffle_each_iteration)

    spec = {key: tf.io.VarLenFeature(tf.int64) for key in keys}

    def parse(serialized: Any) -> Any:
        features = tf.io.parse_single_example(serialized, spec)
        return tuple(tf.cast(tf.sparse.to_dense(features[key]), tf.int32) for key in keys)

    dataset = dataset.map(parse, num_parallel_calls=reading.num_parallel_calls)
    if isinstance(batching, NmtBatching):
        dataset = _nmt_batches(tf, dataset, batch_size, batching, reading.num_parallel_calls)
    else:
        if keys is PACKED_FEATURES and batching.max_length is None and packed_length:
            # T2T: a packed problem's max_length is its packed_length
            batching = dataclasses.replace(batching, max_length=packed_length)
        dataset = _t2t_batches(tf, dataset, batch_size, keys, batching, reading, pad_id)
    return dataset.prefetch(tf.data.AUTOTUNE)


def _nmt_batches(tf: Any, dataset: Any, batch_size: int, batching: NmtBatching,
                 num_parallel_calls: int) -> Any:
    src_max_len, tgt_max_len = batching.src_max_len, batching.tgt_max_len
    num_buckets, sos_id, eos_id = batching.num_buckets, batching.sos_id, batching.eos_id
    dataset = dataset.filter(lambda src, tgt: tf.logical_and(tf.size(src) > 0,
                                                             tf.size(tgt) > 0))
    if src_max_len:
        dataset = dataset.map(lambda src, tgt: (src[:src_max_len], tgt),
                              num_parallel_calls=num_parallel_calls)
    if tgt_max_len:
        dataset = dataset.map(lambda src, tgt: (src, tgt[:tgt_max_len]),
                              num_parallel_calls=num_parallel_calls)
    sos = tf.constant([sos_id], tf.int32)
    eos = tf.constant([eos_id], tf.int32)
    dataset = dataset.map(lambda src, tgt: (src, tf.concat((sos, tgt), 0),
                                            tf.concat((tgt, eos), 0)),
                          num_parallel_calls=num_parallel_calls)
    dataset = dataset.map(lambda src, tgt_in, tgt_out: (src, tgt_in, tgt_out, tf.size(src),
                                                         tf.size(tgt_in)),
                          num_parallel_calls=num_parallel_calls)

    def batching_func(x: Any) -> Any:
        return x.padded_batch(
            batch_size,
            padded_shapes=(tf.TensorShape([None]), tf.TensorShape([None]),
                           tf.TensorShape([None]), tf.TensorShape([]), tf.TensorShape([])),
            padding_values=(eos_id, eos_id, eos_id, 0, 0))

    if num_buckets > 1:
        bucket_width = (src_max_len + num_buckets - 1) // num_buckets if src_max_len else 10

        def key_func(unused_1: Any, unused_2: Any, unused_3: Any, src_len: Any,
                     tgt_len: Any) -> Any:
            bucket_id = tf.maximum(src_len // bucket_width, tgt_len // bucket_width)
            return tf.cast(tf.minimum(num_buckets, bucket_id), tf.int64)

        def reduce_func(unused_key: Any, windowed_data: Any) -> Any:
            return batching_func(windowed_data)

        dataset = dataset.group_by_window(key_func=key_func, reduce_func=reduce_func,
                                          window_size=batch_size)
    else:
        dataset = batching_func(dataset)
    if not batching.as_tuple:
        dataset = dataset.map(lambda *batch: dict(zip(NMT_KEYS, batch)))
    return dataset


def _t2t_batches(tf: Any, dataset: Any, batch_size: int, keys: Sequence[str],
                 batching: T2TBatching, reading: RecordReading, pad_id: int = 0) -> Any:
    scheme = t2t_batching_scheme(batch_size, batching.max_length, batching.min_length_bucket,
                                 batching.length_bucket_step)
    min_length = batching.min_length
    dataset = dataset.map(lambda *features: dict(zip(keys, features)),
                          num_parallel_calls=reading.num_parallel_calls)

    def example_length(example: Any) -> Any:
        return tf.maximum(tf.size(example["inputs"]), tf.size(example["targets"]))

    longest = scheme["max_length"] if batching.drop_long_sequences else 10 ** 9
    dataset = dataset.filter(lambda ex: tf.logical_and(example_length(ex) >= min_length,
                                                       example_length(ex) <= longest))
    padding = {key: tf.constant(pad_id if key in ("inputs", "targets") else 0, tf.int32)
               for key in keys}  # the packed features with 0, as T2T pads them
    dataset = dataset.bucket_by_sequence_length(
        example_length, scheme["boundaries"], scheme["batch_sizes"], padding_values=padding)
    if reading.shuffle and batching.batch_shuffle_size:
        seed = None if reading.random_seed is None else reading.random_seed + 1
        dataset = dataset.shuffle(batching.batch_shuffle_size, seed,
                                  reading.reshuffle_each_iteration)
    return dataset
