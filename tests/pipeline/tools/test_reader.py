"""pipeline/tools/reader.py: make_dataset in mode "nmt" against a reference written from
tensorflow/nmt's `iterator_utils.get_iterator` (text lines, tf.string_split, a vocabulary lookup
table, shard/skip/shuffle/filter/truncate/sos/eos/bucketing/padded_batch with TF ops the way nmt
does), and in mode "t2t" against T2T's bucketing rules.
"""

import ast
import bisect
import collections
import importlib.util
import os
import random

import numpy as np
import pytest

from nmt_reference import (assert_same_batches as _assert_same_batches, as_numpy as _as_numpy,
                           dict_batches as _dict_batches, nmt_get_iterator)
from repo_paths import DATA_DIR
from transforms.codecs.word import EOS_ID, SOS_ID, UNK, UNK_ID, WordVocab, tokenize


tf = pytest.importorskip("tensorflow")
reader = pytest.importorskip("pipeline.tools.reader")

ENVI_DIR = os.path.join(DATA_DIR, "envi-nmt-testdata")


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def _int64_example(inputs, targets):
    return tf.train.Example(features=tf.train.Features(feature={
        "inputs": tf.train.Feature(int64_list=tf.train.Int64List(value=inputs)),
        "targets": tf.train.Feature(int64_list=tf.train.Int64List(value=targets)),
    })).SerializeToString()


def _write_shards(directory, prefix, pairs, cuts):
    """pairs split at `cuts` into len(cuts) + 1 TFRecord files named like datagen's shards."""
    bounds = [0] + list(cuts) + [len(pairs)]
    n = len(bounds) - 1
    for i in range(n):
        path = os.path.join(directory, "%s-train-%05d-of-%05d" % (prefix, i, n))
        with tf.io.TFRecordWriter(path) as w:
            for inputs, targets in pairs[bounds[i]:bounds[i + 1]]:
                w.write(_int64_example(inputs, targets))
    with open(os.path.join(directory, prefix + ".DATAGEN_COMPLETE"), "w") as f:
        f.write("2026-01-01T00:00:00+00:00\n")  # a complete output, as datagen leaves it
    return os.path.join(directory, prefix + "-train-*")


# -- the corpus -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def envi(tmp_path_factory):
    """The nmt test corpus with a few empty/blank sides inserted, as text files for the
    reference and as word-vocab TFRecords (3 shards) for make_dataset."""
    d = str(tmp_path_factory.mktemp("envi"))
    src = _lines(os.path.join(ENVI_DIR, "iwslt15.tst2013.100.en"))
    tgt = _lines(os.path.join(ENVI_DIR, "iwslt15.tst2013.100.vi"))
    for pos, (s, t) in [(3, ("", "Xin chào")), (17, ("Hello", "   ")), (40, ("  ", "")),
                        (41, ("zzz\tqqq  yyy", "ccc"))]:
        src.insert(pos, s)
        tgt.insert(pos, t)
    src_file, tgt_file = os.path.join(d, "src.en"), os.path.join(d, "tgt.vi")
    for path, lines in ((src_file, src), (tgt_file, tgt)):
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
    src_vocab_file = os.path.join(ENVI_DIR, "iwslt15.vocab.100.en")
    tgt_vocab_file = os.path.join(ENVI_DIR, "iwslt15.vocab.100.vi")
    src_vocab, tgt_vocab = WordVocab.from_file(src_vocab_file), WordVocab.from_file(tgt_vocab_file)
    pairs = [(src_vocab.encode(s), tgt_vocab.encode(t)) for s, t in zip(src, tgt)]
    pattern = _write_shards(d, "envi", pairs, cuts=(37, 70))
    return dict(src=src, tgt=tgt, src_file=src_file, tgt_file=tgt_file,
                src_vocab_file=src_vocab_file, tgt_vocab_file=tgt_vocab_file,
                src_vocab=src_vocab, tgt_vocab=tgt_vocab, pattern=pattern)


NMT_CASES = {
    "plain": dict(batch_size=7),
    "buckets5_src50": dict(batch_size=5, num_buckets=5, src_max_len=50),
    "truncate_src10_tgt8": dict(batch_size=4, num_buckets=5, src_max_len=10, tgt_max_len=8),
    "buckets3_width10_shard_skip": dict(batch_size=3, num_buckets=3, num_shards=3,
                                        shard_index=1, skip_count=2),
    "tgt_only_truncation": dict(batch_size=6, num_buckets=4, tgt_max_len=12),
}


@pytest.mark.parametrize("case", sorted(NMT_CASES))
def test_nmt_mode_matches_nmt_get_iterator(envi, case):
    kw = NMT_CASES[case]
    expected = _as_numpy(nmt_get_iterator(envi["src_file"], envi["tgt_file"],
                                          envi["src_vocab_file"], envi["tgt_vocab_file"],
                                          shuffle=False, **kw))
    got = _dict_batches(reader.make_dataset(envi["pattern"], mode="nmt", shuffle=False, **kw))
    _assert_same_batches(got, expected)
    assert sum(len(b[0]) for b in got) > 0


def test_nmt_mode_seeded_shuffle_matches_nmt(envi):
    kw = dict(batch_size=8, num_buckets=5, src_max_len=50, random_seed=3, output_buffer_size=50,
              reshuffle_each_iteration=False)
    expected = _as_numpy(nmt_get_iterator(envi["src_file"], envi["tgt_file"],
                                          envi["src_vocab_file"], envi["tgt_vocab_file"], **kw))
    dataset = reader.make_dataset(envi["pattern"], mode="nmt", as_tuple=True, **kw)
    got = _as_numpy(dataset)
    _assert_same_batches(got, expected)
    _assert_same_batches(_as_numpy(dataset), got)  # same order every epoch
    plain = _as_numpy(reader.make_dataset(envi["pattern"], mode="nmt", shuffle=False, as_tuple=True,
                                          batch_size=8, num_buckets=5, src_max_len=50))
    assert [b[0].tolist() for b in got] != [b[0].tolist() for b in plain]


def _bucket(src_len, tgt_len, num_buckets, src_max_len):
    width = (src_max_len + num_buckets - 1) // num_buckets if src_max_len else 10
    return min(num_buckets, max(src_len // width, tgt_len // width))


@pytest.mark.parametrize("case", ["buckets5_src50", "truncate_src10_tgt8"])
def test_nmt_mode_buckets_padding_and_truncation(envi, case):
    kw = NMT_CASES[case]
    got = _dict_batches(reader.make_dataset(envi["pattern"], mode="nmt", shuffle=False, **kw))
    non_empty = sum(bool(tokenize(s)) and bool(tokenize(t))
                    for s, t in zip(envi["src"], envi["tgt"]))
    assert sum(len(b[0]) for b in got) == non_empty == 101
    keys_seen = set()
    for src, tgt_in, tgt_out, src_len, tgt_len in got:
        assert 1 <= len(src) <= kw["batch_size"]
        keys = {_bucket(s, t, kw["num_buckets"], kw["src_max_len"])
                for s, t in zip(src_len, tgt_len)}
        assert len(keys) == 1  # one bucket per batch
        keys_seen |= keys
        assert src.shape[1] == src_len.max() and tgt_in.shape[1] == tgt_len.max()
        assert tgt_out.shape == tgt_in.shape
        for row in range(len(src)):
            n, m = src_len[row], tgt_len[row]
            if kw.get("tgt_max_len"):
                assert n <= kw["src_max_len"] and m <= kw["tgt_max_len"] + 1
            assert (src[row, n:] == EOS_ID).all()  # padded with eos
            assert (tgt_in[row, m:] == EOS_ID).all() and (tgt_out[row, m:] == EOS_ID).all()
            assert tgt_in[row, 0] == SOS_ID and tgt_out[row, m - 1] == EOS_ID
            assert (tgt_in[row, 1:m] == tgt_out[row, :m - 1]).all()
            assert EOS_ID not in src[row, :n] and SOS_ID not in tgt_in[row, 1:m]
    assert len(keys_seen) >= 3
    if case == "truncate_src10_tgt8":
        lens = np.concatenate([b[3] for b in got])
        assert lens.max() == 10 and (np.concatenate([b[4] for b in got]).max() == 9)


def test_nmt_mode_round_trip_to_words(envi):
    got = _dict_batches(reader.make_dataset(envi["pattern"], mode="nmt", shuffle=False,
                                            batch_size=16))
    rows = []
    for src, tgt_in, tgt_out, src_len, tgt_len in got:
        for r in range(len(src)):
            rows.append((src[r, :src_len[r]], tgt_out[r, :tgt_len[r] - 1]))
    pairs = [(s, t) for s, t in zip(envi["src"], envi["tgt"]) if tokenize(s) and tokenize(t)]
    assert len(rows) == len(pairs)
    sv, tv = envi["src_vocab"], envi["tgt_vocab"]
    n_unk = 0
    for (src_ids, tgt_ids), (s, t) in zip(rows, pairs):
        assert sv.decode(src_ids) == " ".join(w if w in sv else UNK for w in tokenize(s))
        assert tv.decode(tgt_ids) == " ".join(w if w in tv else UNK for w in tokenize(t))
        n_unk += int((src_ids == UNK_ID).sum())
    assert n_unk > 0


def test_nmt_mode_dict_and_tuple_agree(envi):
    kw = dict(batch_size=9, num_buckets=5, src_max_len=50, shuffle=False)
    as_dict = _dict_batches(reader.make_dataset(envi["pattern"], **kw))
    as_tuple = _as_numpy(reader.make_dataset(envi["pattern"], as_tuple=True, **kw))
    _assert_same_batches(as_tuple, as_dict)


def test_the_options_objects_read_as_the_flat_call(envi):
    """`read_dataset` with `RecordReading` and a mode's batching gives the batches
    `make_dataset`'s keywords give; the mode is the batching's type."""
    flat = _dict_batches(reader.make_dataset(envi["pattern"], 9, mode="nmt", num_buckets=5,
                                             src_max_len=50, shuffle=False, num_shards=2))
    options = _dict_batches(reader.read_dataset(
        envi["pattern"], 9, reader.NmtBatching(num_buckets=5, src_max_len=50),
        reader.RecordReading(shuffle=False, num_shards=2)))
    _assert_same_batches(options, flat)


def test_argument_checks(envi, tmp_path):
    with pytest.raises(ValueError, match="no files match"):
        reader.make_dataset(str(tmp_path / "nothing-*"), 4)
    with pytest.raises(ValueError, match="max_length"):
        reader.make_dataset(envi["pattern"], 4, mode="nmt", max_length=50)
    with pytest.raises(ValueError, match="src_max_len"):
        reader.make_dataset(envi["pattern"], 4096, mode="t2t", src_max_len=50)
    with pytest.raises(ValueError, match="num_buckets"):
        reader.make_dataset(envi["pattern"], 4096, mode="t2t", num_buckets=5)
    with pytest.raises(ValueError, match="mode"):
        reader.make_dataset(envi["pattern"], 4, mode="fairseq")


# -- mode "t2t" ---------------------------------------------------------------------------------

def _t2t_reference_functions():
    """T2T 1.15.7's own `_bucket_boundaries` and `batching_scheme`, taken from the installed
    data_reader.py (importing the module needs tensorflow_addons, which TF 2.21 lacks)."""
    spec = importlib.util.find_spec("tensor2tensor")  # finds the package, runs none of it
    if spec is None or not spec.origin:
        pytest.skip("tensor2tensor is not installed")
    path = os.path.join(os.path.dirname(spec.origin), "utils", "data_reader.py")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)
             and n.name in ("_bucket_boundaries", "batching_scheme")]
    namespace = {}
    exec(compile(ast.Module(body=funcs, type_ignores=[]), path, "exec"), namespace)
    return namespace["_bucket_boundaries"], namespace["batching_scheme"]


@pytest.mark.parametrize("batch_size,max_length", [(4096, None), (4096, 256), (2048, 100),
                                                   (256, None), (64, 20), (8, None), (5, None)])
def test_t2t_batching_scheme_is_t2ts(batch_size, max_length):
    bucket_boundaries, batching_scheme = _t2t_reference_functions()
    expected = batching_scheme(batch_size, max_length or 0, 8, 1.1)
    ours = reader.t2t_batching_scheme(batch_size, max_length)
    assert ours["boundaries"] == expected["boundaries"]
    assert ours["batch_sizes"] == expected["batch_sizes"]
    assert reader.t2t_bucket_boundaries(batch_size) == bucket_boundaries(batch_size)


@pytest.fixture(scope="module")
def t2t_records(tmp_path_factory):
    """T2T-style records: ids in [2, 3000) then EOS=1; lengths 1..150 (with EOS)."""
    rng = random.Random(11)
    pairs = []
    for _ in range(700):
        n, m = rng.randint(0, 149), rng.randint(0, 149)
        if rng.random() < 0.5:  # plenty of short ones, to fill the small buckets
            n, m = n % 12, m % 12
        pairs.append(([rng.randrange(2, 3000) for _ in range(n)] + [1],
                      [rng.randrange(2, 3000) for _ in range(m)] + [1]))
    d = str(tmp_path_factory.mktemp("t2t"))
    return pairs, _write_shards(d, "translate_t2tstyle", pairs, cuts=(250, 500))


def _unpad(row):
    row = row.tolist()
    end = len(row)
    while end and row[end - 1] == 0:
        end -= 1
    assert row[end - 1] == 1  # EOS is the last real token
    return tuple(row[:end])


def _check_t2t_batches(batches, scheme, expected_pairs):
    boundaries, batch_sizes = scheme["boundaries"], scheme["batch_sizes"]
    seen = []
    for batch in batches:
        assert sorted(batch) == ["inputs", "targets"]
        inputs, targets = batch["inputs"], batch["targets"]
        assert inputs.dtype == np.int32 and targets.dtype == np.int32
        assert len(inputs) == len(targets)
        rows = [(_unpad(i), _unpad(t)) for i, t in zip(inputs, targets)]
        # padded with 0 to the longest sequence of the batch, per feature
        assert inputs.shape[1] == max(len(i) for i, _ in rows)
        assert targets.shape[1] == max(len(t) for _, t in rows)
        for r, (i, t) in enumerate(rows):
            assert (inputs[r, len(i):] == 0).all() and (targets[r, len(t):] == 0).all()
        buckets = {bisect.bisect_right(boundaries, max(len(i), len(t))) for i, t in rows}
        assert len(buckets) == 1
        (bucket,) = buckets
        assert len(rows) <= batch_sizes[bucket]
        seen.extend(rows)
    assert collections.Counter(seen) == collections.Counter(
        (tuple(i), tuple(t)) for i, t in expected_pairs)
    return seen


def test_t2t_mode_buckets(t2t_records):
    pairs, pattern = t2t_records
    scheme = reader.t2t_batching_scheme(256)
    assert scheme["boundaries"][:4] == [8, 9, 10, 11]
    batches = list(reader.make_dataset(pattern, 256, mode="t2t", shuffle=False)
                   .as_numpy_iterator())
    seen = _check_t2t_batches(batches, scheme, pairs)
    used = {bisect.bisect_right(scheme["boundaries"], max(len(i), len(t))) for i, t in seen}
    assert len(used) > 15
    # full batches reach the bucket's batch size
    assert any(len(b["inputs"]) == scheme["batch_sizes"][0] for b in batches)


def test_t2t_mode_shuffled_and_long_sequences(t2t_records):
    pairs, pattern = t2t_records
    shuffled = list(reader.make_dataset(pattern, 256, mode="t2t", random_seed=5)
                    .as_numpy_iterator())
    _check_t2t_batches(shuffled, reader.t2t_batching_scheme(256), pairs)

    scheme = reader.t2t_batching_scheme(512, 64)
    kept = [p for p in pairs if max(len(p[0]), len(p[1])) <= 64]
    assert 0 < len(kept) < len(pairs)
    dropped = list(reader.make_dataset(pattern, 512, mode="t2t", shuffle=False, max_length=64)
                   .as_numpy_iterator())
    _check_t2t_batches(dropped, scheme, kept)
    everything = list(reader.make_dataset(pattern, 512, mode="t2t", shuffle=False, max_length=64,
                                          drop_long_sequences=False).as_numpy_iterator())
    _check_t2t_batches(everything, scheme, pairs)


@pytest.mark.parametrize("pad", [0, 50257])
def test_t2t_mode_pads_with_the_pad_id_the_summary_records(tmp_path, pad):
    """Every reader pads inputs and targets with the vocabularies' pad id as the job records
    it (`Vocabulary.pad_id`; issue 50, item 2): GPT-2's own files pad with 50257, since
    their 0 is `!`, which records hold; the packed features stay 0-padded."""
    from pipeline.tools import batches
    from reader_outputs import write_output
    from transforms.shards.record_formats import ParquetFormat, TFRecordFormat
    pairs = [([0, 17250, 0, 50256], [0, 50256]), ([17250, 50256], [9, 9, 9, 50256])] * 3
    # 50257: GPT-2's files given; 0: a learnt vocabulary of today's layout
    ids = dict({"pad_id": pad, "eos_ids": [50256]}, **({"given": "gpt2"} if pad else {}))
    for fmt in (TFRecordFormat(), ParquetFormat()):
        directory = tmp_path / fmt.name
        directory.mkdir()
        write_output(directory, "gpt", fmt, {None: pairs}, flags={"vocab_type": "byte_bpe"},
                     vocab={"source": dict(ids), "target": dict(ids), "passes": 2},
                     fingerprint={"flags": {}, "inputs": {}, "layout": "<pad> 0, EOS 1"})
    tf_batches = list(reader.make_dataset(str(tmp_path / "tfrecord" / "gpt-train-*"), 64,
                                          mode="t2t", shuffle=False).as_numpy_iterator())
    for got in (tf_batches, list(batches.parquet_batches(str(tmp_path / "parquet"), 64,
                                                          mode="t2t", shuffle=False))):
        rows = []
        for batch in got:
            for side in ("inputs", "targets"):
                for row in batch[side]:
                    end = len(row) - next(i for i, x in enumerate(row[::-1]) if x != pad)
                    assert row[end - 1] == 50256 and (row[end:] == pad).all()
                    rows.append((side, tuple(row[:end])))
        assert sorted(rows) == sorted([("inputs", tuple(i)) for i, _ in pairs]
                                      + [("targets", tuple(t)) for _, t in pairs])
        assert any(len(batch["targets"][0]) > 2 for batch in got)
        padded = np.concatenate([b["targets"].ravel() for b in got])
        assert (padded == pad).any()  # some row was padded


def test_a_byte_bpe_output_learnt_with_eos_0_is_refused_by_the_readers(tmp_path):
    """An output learnt before `<pad>` took id 0 (its EOS is 0: the summary records neither
    pad id nor layout) is refused, not padded with its EOS (issue 50, item 2)."""
    from pipeline.tools import batches
    from reader_outputs import write_output
    from transforms.shards.record_formats import ParquetFormat, TFRecordFormat
    for fmt in (TFRecordFormat(), ParquetFormat()):
        (tmp_path / fmt.name).mkdir()
        write_output(tmp_path / fmt.name, "old", fmt, {None: [([5, 0], [6, 7, 0])] * 4},
                     flags={"vocab_type": "byte_bpe"}, vocab={"source": {"size": 300}},
                     fingerprint={"flags": {}, "inputs": {}})
    for call in (lambda: reader.make_dataset(str(tmp_path / "tfrecord" / "old-*"), 64,
                                             mode="t2t"),
                 lambda: next(batches.parquet_batches(str(tmp_path / "parquet"), 64,
                                                      mode="t2t"))):
        with pytest.raises(ValueError, match="earlier id layout .*--overwrite"):
            call()
