"""Tensor2Tensor 1.15.7 as the reference implementation, for tests and benchmarks.

Importing this module imports `tensor2tensor` (skipping the calling test module via
`pytest.importorskip` when it is not installed) and TensorFlow, which T2T needs. Nothing else
from TensorFlow is used here.

`generator_utils` evaluates `tf.estimator.ModeKeys.TRAIN` once, as a default argument, when it
is imported; TensorFlow >= 2.16 no longer has `tf.estimator`, so a stand-in namespace is set
for the duration of the import and removed again afterwards.

The helpers call T2T's own code paths:

* `t2t_sample_lines` runs `generator_utils.generate_lines_for_vocab` on local files in place:
  with `tmp_dir` set to the file's directory and the "URL" set to the file's own path,
  `maybe_download` finds the file already present and neither downloads nor copies anything.
* `t2t_build_vocab` is `get_or_generate_vocab_inner(None, None, ...)` (no data_dir, so nothing
  is stored) over those lines, i.e. `SubwordTextEncoder.build_from_generator`.
"""

import collections
import contextlib
import os
import tempfile
import types

import pytest

text_encoder = pytest.importorskip("tensor2tensor.data_generators.text_encoder")
tokenizer = pytest.importorskip("tensor2tensor.data_generators.tokenizer")

import tensorflow.compat.v1 as tf  # noqa: E402  (already imported by tensor2tensor)


@contextlib.contextmanager
def _estimator_stand_in():
    """`tf.estimator.ModeKeys`, which T2T's modules read at import, for the import only
    (TensorFlow 2.16+ has no `tf.estimator`)."""
    added = not hasattr(tf, "estimator")
    if added:
        tf.estimator = types.SimpleNamespace(ModeKeys=types.SimpleNamespace(
            TRAIN="train", EVAL="eval", PREDICT="infer"))
    try:
        yield
    finally:
        if added:
            del tf.estimator


def _import_generator_utils():
    with _estimator_stand_in():
        from tensor2tensor.data_generators import generator_utils as module
    return module


generator_utils = _import_generator_utils()

SubwordTextEncoder = text_encoder.SubwordTextEncoder


def t2t_sample_lines(paths, file_byte_budget):
    """The lines T2T's `generate_lines_for_vocab` yields for these local files, in order.

    Each file is read in place (tmp_dir = its directory); the byte budget applies per file,
    exactly as in T2T.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    lines = []
    for path in paths:
        path = os.path.abspath(os.fspath(path))
        tmp_dir, name = os.path.split(path)
        sources = [[path, [name]]]
        lines.extend(generator_utils.generate_lines_for_vocab(tmp_dir, sources, file_byte_budget))
    return lines


def t2t_token_counts(lines):
    """Token counts as `SubwordTextEncoder.build_from_generator` computes them."""
    token_counts = collections.defaultdict(int)
    for item in lines:
        for tok in tokenizer.encode(text_encoder.native_to_unicode(item)):
            token_counts[tok] += 1
    return token_counts


def t2t_build_vocab_from_lines(lines, target_size, max_subtoken_length=None,
                               reserved_tokens=None):
    """`get_or_generate_vocab_inner` without a data_dir over an iterable of lines."""
    return generator_utils.get_or_generate_vocab_inner(
        None, None, target_size, iter(lines), max_subtoken_length=max_subtoken_length,
        reserved_tokens=reserved_tokens)


def t2t_build_vocab(paths, target_size, max_subtoken_length=None, file_byte_budget=1e6,
                    reserved_tokens=None):
    """The SubwordTextEncoder t2t-datagen builds from these files (sampled, then learnt)."""
    return t2t_build_vocab_from_lines(t2t_sample_lines(paths, file_byte_budget), target_size,
                                      max_subtoken_length, reserved_tokens)


def t2t_build_from_token_counts(token_counts, min_count, max_subtoken_length=None,
                                num_iterations=4, reserved_tokens=None):
    """One `build_from_token_counts` run (a single min_count, no bisection)."""
    encoder = SubwordTextEncoder()
    encoder.build_from_token_counts(token_counts, min_count, num_iterations,
                                    reserved_tokens=reserved_tokens,
                                    max_subtoken_length=max_subtoken_length)
    return encoder


def t2t_vocab_bytes(encoder, add_single_quotes=True):
    """The bytes `encoder.store_to_file` writes."""
    fd, path = tempfile.mkstemp(suffix=".subwords")
    os.close(fd)
    try:
        encoder.store_to_file(path, add_single_quotes=add_single_quotes)
        with open(path, "rb") as f:
            return f.read()
    finally:
        os.remove(path)


def t2t_encoder_from_file(path):
    return SubwordTextEncoder(os.fspath(path))


def t2t_build_to_target_size(token_counts, target_size, max_subtoken_length=None,
                             reserved_tokens=None, min_val=1, max_val=1e3, num_iterations=4,
                             memo=None):
    """`SubwordTextEncoder.build_to_target_size` as `build_from_generator` calls it.

    With a `memo` dict, each `build_from_token_counts(min_count)` run of the bisection is
    remembered (keyed by its arguments), so bisections for several target sizes over the
    *same* `token_counts` share their probes. `build_from_token_counts` is deterministic (its
    result is sorted by (count, string)), so this changes the running time only. A memo must
    only ever be used with one `token_counts`.
    """
    if memo is None:
        cls = SubwordTextEncoder
    else:
        cls = _memoizing_encoder_class(memo)
    return cls.build_to_target_size(target_size, token_counts, min_val, max_val,
                                    max_subtoken_length=max_subtoken_length,
                                    reserved_tokens=reserved_tokens,
                                    num_iterations=num_iterations)


def _memoizing_encoder_class(memo):

    class MemoizingSubwordTextEncoder(SubwordTextEncoder):

        def build_from_token_counts(self, token_counts, min_count, num_iterations=4,
                                    reserved_tokens=None, max_subtoken_length=None):
            key = (min_count, num_iterations,
                   None if reserved_tokens is None else tuple(reserved_tokens),
                   max_subtoken_length)
            state = memo.get(key)
            if state is None:
                super().build_from_token_counts(token_counts, min_count, num_iterations,
                                                reserved_tokens=reserved_tokens,
                                                max_subtoken_length=max_subtoken_length)
                memo[key] = {k: v for k, v in self.__dict__.items() if k != "_cache"}
            else:
                self.__dict__.update(state)
                self._cache = [(None, None)] * self._cache_size

    return MemoizingSubwordTextEncoder


# Packages T2T's problem modules import at module level that its --no-deps install lacks;
# packing uses none of them.
_PROBLEM_IMPORT_STAND_INS = ("tensorflow_addons", "tf_slim", "tensorflow_probability",
                             "scipy", "scipy.signal")


def t2t_translate_problem(packed_length):
    """T2T's `TranslateEnzhWmt8k` with `packed_length` set, as T2T's packed translate
    problems set it (`TranslateEndeWmt8kPacked`: only the property): its `_pack_fn()` is
    what `Text2TextProblem.generate_data` hands `generator_utils.shuffle_dataset` as
    `extra_fn`, so it packs each shard with the spacing and chopping the problem passes.

    T2T's problem modules import, at module level, packages that its --no-deps install
    lacks and that packing never uses: stand-in modules take their place for the import
    only, as `tf.estimator` does for `generator_utils` above, and are removed afterwards."""
    import importlib.util
    import sys
    added = [name for name in _PROBLEM_IMPORT_STAND_INS
             if name not in sys.modules and importlib.util.find_spec(name.split(".")[0]) is None]
    for name in added:
        sys.modules[name] = types.ModuleType(name)
    try:
        with _estimator_stand_in():
            from tensor2tensor.data_generators import translate_enzh
    finally:
        for name in added:
            del sys.modules[name]

    class PackedTranslateEnzh(translate_enzh.TranslateEnzhWmt8k):
        @property
        def packed_length(self):
            return packed_length

    return PackedTranslateEnzh()


def t2t_shuffle_and_pack(paths, packed_length, monkeypatch):
    """Runs T2T's `generator_utils.shuffle_dataset(paths, extra_fn=problem._pack_fn())` on
    TFRecord files named `{name}-unshuffled`, as `Text2TextProblem.generate_data` does, with
    `random.shuffle` left out (`monkeypatch`): the files' order stands for T2T's shuffle.
    Returns T2T's output paths (`{name}`), in the order given."""
    problem = t2t_translate_problem(packed_length)
    monkeypatch.setattr(generator_utils.random, "shuffle", lambda records: None)
    generator_utils.shuffle_dataset(list(paths), extra_fn=problem._pack_fn())
    return [path.replace(generator_utils.UNSHUFFLED_SUFFIX, "") for path in paths]
