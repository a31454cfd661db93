"""pipeline/tools/read_options: make_dataset's flat keywords become the options objects,
each setting in the group that declares it; a setting of the other mode given a value is
refused by name, a keyword neither mode has is a TypeError. No TensorFlow."""

import pytest

from pipeline.tools.read_options import (NmtBatching, RecordReading, T2TBatching,
                                         options_of)


def test_each_keyword_goes_to_the_group_that_declares_it():
    reading, batching = options_of("t2t", {"shuffle": False, "random_seed": 3,
                                           "max_length": 64, "batch_shuffle_size": None})
    assert reading == RecordReading(shuffle=False, random_seed=3)
    assert batching == T2TBatching(max_length=64)  # None: the default
    assert options_of("nmt", {}) == (RecordReading(), NmtBatching())


def test_the_mode_is_the_batchings_type_and_sets_the_shuffle_buffer():
    assert [cls.mode for cls in (NmtBatching, T2TBatching)] == ["nmt", "t2t"]
    assert NmtBatching.buffer_size(128) == 128_000 and T2TBatching.buffer_size(128) == 1024


def test_the_other_modes_settings_are_refused_by_name():
    with pytest.raises(ValueError, match="mode 'nmt' does not take max_length, min_length_bucket"):
        options_of("nmt", {"max_length": 50, "min_length_bucket": 4})
    with pytest.raises(ValueError, match="mode 't2t' does not take num_buckets"):
        options_of("t2t", {"num_buckets": 5})
    # no value (None, or that mode's default) is no misuse: a caller may pass every keyword
    assert options_of("t2t", {"num_buckets": 1, "as_tuple": False, "src_max_len": None})[1] == (
        T2TBatching())
    with pytest.raises(ValueError, match="mode must be 'nmt' or 't2t', got 'fairseq'"):
        options_of("fairseq", {})
    with pytest.raises(TypeError, match="unexpected keyword argument 'batchsize'"):
        options_of("nmt", {"batchsize": 4})
