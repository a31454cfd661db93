"""The reference of the word-vocabulary reader tests (tests/pipeline/tools/test_reader.py,
tests/end_to_end/test_vocab_types.py): tensorflow/nmt's `iterator_utils.get_iterator` written
out on text (tf.string_split, a vocabulary lookup table, shard/skip/shuffle/filter/truncate/
sos/eos/bucketing/padded_batch with TF ops the way nmt does), and batches compared as numpy."""

import numpy as np
import tensorflow as tf

from transforms.codecs.word import EOS, SOS, UNK_ID

NMT_KEYS = ("source", "target_input", "target_output", "source_sequence_length",
            "target_sequence_length")


def vocab_table(vocab_file):
    # nmt: lookup_ops.index_table_from_file(vocab_file, default_value=UNK_ID)
    return tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(vocab_file, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE,
                                      tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER),
        default_value=UNK_ID)


def nmt_get_iterator(src_file, tgt_file, src_vocab_file, tgt_vocab_file, batch_size,
                     random_seed=None, num_buckets=1, src_max_len=None, tgt_max_len=None,
                     num_parallel_calls=4, output_buffer_size=None, skip_count=None,
                     num_shards=1, shard_index=0, reshuffle_each_iteration=True, shuffle=True):
    """tensorflow/nmt iterator_utils.get_iterator (use_char_encode=False) as a tf.data.Dataset
    of 5-tuples. `shuffle=False` leaves the shuffle step out (nmt always shuffles)."""
    src_vocab_table = vocab_table(src_vocab_file)
    tgt_vocab_table = vocab_table(tgt_vocab_file)
    if not output_buffer_size:
        output_buffer_size = batch_size * 1000
    src_eos_id = tf.cast(src_vocab_table.lookup(tf.constant(EOS)), tf.int32)
    tgt_sos_id = tf.cast(tgt_vocab_table.lookup(tf.constant(SOS)), tf.int32)
    tgt_eos_id = tf.cast(tgt_vocab_table.lookup(tf.constant(EOS)), tf.int32)

    src_dataset = tf.data.TextLineDataset(src_file)
    tgt_dataset = tf.data.TextLineDataset(tgt_file)
    src_tgt_dataset = tf.data.Dataset.zip((src_dataset, tgt_dataset))
    src_tgt_dataset = src_tgt_dataset.shard(num_shards, shard_index)
    if skip_count is not None:
        src_tgt_dataset = src_tgt_dataset.skip(skip_count)
    if shuffle:
        src_tgt_dataset = src_tgt_dataset.shuffle(output_buffer_size, random_seed,
                                                  reshuffle_each_iteration)
    src_tgt_dataset = src_tgt_dataset.map(
        lambda src, tgt: (tf.compat.v1.string_split([src]).values,
                          tf.compat.v1.string_split([tgt]).values),
        num_parallel_calls=num_parallel_calls).prefetch(output_buffer_size)
    src_tgt_dataset = src_tgt_dataset.filter(
        lambda src, tgt: tf.logical_and(tf.size(src) > 0, tf.size(tgt) > 0))
    if src_max_len:
        src_tgt_dataset = src_tgt_dataset.map(
            lambda src, tgt: (src[:src_max_len], tgt),
            num_parallel_calls=num_parallel_calls).prefetch(output_buffer_size)
    if tgt_max_len:
        src_tgt_dataset = src_tgt_dataset.map(
            lambda src, tgt: (src, tgt[:tgt_max_len]),
            num_parallel_calls=num_parallel_calls).prefetch(output_buffer_size)
    src_tgt_dataset = src_tgt_dataset.map(
        lambda src, tgt: (tf.cast(src_vocab_table.lookup(src), tf.int32),
                          tf.cast(tgt_vocab_table.lookup(tgt), tf.int32)),
        num_parallel_calls=num_parallel_calls)
    src_tgt_dataset = src_tgt_dataset.prefetch(output_buffer_size)
    src_tgt_dataset = src_tgt_dataset.map(
        lambda src, tgt: (src, tf.concat(([tgt_sos_id], tgt), 0),
                          tf.concat((tgt, [tgt_eos_id]), 0)),
        num_parallel_calls=num_parallel_calls).prefetch(output_buffer_size)
    src_tgt_dataset = src_tgt_dataset.map(
        lambda src, tgt_in, tgt_out: (src, tgt_in, tgt_out, tf.size(src), tf.size(tgt_in)),
        num_parallel_calls=num_parallel_calls)
    src_tgt_dataset = src_tgt_dataset.prefetch(output_buffer_size)

    def batching_func(x):
        return x.padded_batch(
            batch_size,
            padded_shapes=(tf.TensorShape([None]), tf.TensorShape([None]),
                           tf.TensorShape([None]), tf.TensorShape([]), tf.TensorShape([])),
            padding_values=(src_eos_id, tgt_eos_id, tgt_eos_id, 0, 0))

    if num_buckets > 1:
        def key_func(unused_1, unused_2, unused_3, src_len, tgt_len):
            if src_max_len:
                bucket_width = (src_max_len + num_buckets - 1) // num_buckets
            else:
                bucket_width = 10
            bucket_id = tf.maximum(src_len // bucket_width, tgt_len // bucket_width)
            return tf.cast(tf.minimum(num_buckets, bucket_id), tf.int64)

        def reduce_func(unused_key, windowed_data):
            return batching_func(windowed_data)

        return src_tgt_dataset.group_by_window(key_func=key_func, reduce_func=reduce_func,
                                               window_size=batch_size)
    return batching_func(src_tgt_dataset)


def as_numpy(dataset):
    return [tuple(np.asarray(x) for x in batch) for batch in dataset.as_numpy_iterator()]


def dict_batches(dataset):
    out = []
    for batch in dataset.as_numpy_iterator():
        assert sorted(batch) == sorted(NMT_KEYS)
        out.append(tuple(batch[k] for k in NMT_KEYS))
    return out


def assert_same_batches(got, expected):
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        for name, a, b in zip(NMT_KEYS, g, e):
            assert a.dtype == np.int32, (i, name, a.dtype)
            assert a.shape == b.shape and np.array_equal(a, b), (i, name, a, b)
