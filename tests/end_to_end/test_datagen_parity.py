"""End to end through Beam: vocab files byte-identical to Tensor2Tensor 1.15.7's, and every
pair's ids equal to T2T's `encode(...) + [EOS]`, on real corpora."""

import collections
import os

import pytest

from datagen_helpers import DATA_DIR, read_examples, run_datagen, shard_files, t2t_pairs
import t2t_reference as t2t

# Each case is a whole multi-pass job checked against T2T: the full suite only.
pytestmark = pytest.mark.slow

CASES = [
    # corpus dir, source, target, vocab size, max_subtoken_length, shared, byte budget, extra
    # Small byte budgets make T2T's sampler skip lines (stride) and stop early (budget).
    ("enzh-mlqe-pe", "train.en", "train.zh", 2000, 200, False, 60000, []),
    ("ende-opennmt", "train.en", "train.de", 300, None, True, 40000,
     ["--bisection_lookahead", "0"]),
    ("envi-nmt-testdata", "iwslt15.tst2013.100.en", "iwslt15.tst2013.100.vi", 8192, 200, False,
     1e8, ["--bisection_lookahead", "2", "--vocab_partitions", "3"]),
]


@pytest.mark.parametrize("corpus,src,tgt,size,max_len,shared,budget,extra", CASES,
                         ids=[c[0] for c in CASES])
def test_beam_job_matches_t2t(tmp_path, corpus, src, tgt, size, max_len, shared, budget, extra):
    source = os.path.join(DATA_DIR, corpus, src)
    target = os.path.join(DATA_DIR, corpus, tgt)
    out = tmp_path / "out"
    flags = ["--problem", "p", "--vocab_size", size, "--num_train_shards", 3,
             "--max_subtoken_length", max_len if max_len else "none",
             "--file_byte_budget", budget] + extra
    if shared:
        flags.append("--shared_vocab")
    summary = run_datagen(out, source, target, *flags)

    if shared:
        ref = t2t.t2t_build_vocab([source, target], size, max_len, file_byte_budget=budget)
        with open(out / ("vocab.p.%d.subwords" % size), "rb") as f:
            assert f.read() == t2t.t2t_vocab_bytes(ref)
        encoders = (ref, ref)
    else:
        encoders = []
        for path in (source, target):
            ref = t2t.t2t_build_vocab([path], size, max_len, file_byte_budget=budget)
            lang = path.rsplit(".", 1)[1]
            with open(out / ("vocab.p.%d.subwords.%s" % (size, lang)), "rb") as f:
                assert f.read() == t2t.t2t_vocab_bytes(ref), lang
            encoders.append(ref)

    want = collections.Counter(t2t_pairs(source, target, *encoders))
    got = collections.Counter()
    for path in shard_files(out, "p", "train"):
        got.update(read_examples(path))
    assert got == want
    train = summary["splits"]["train"]
    assert train["pairs_written"] == sum(want.values())
    assert train["pairs_read"] == train["pairs_written"] + train["pairs_rejected"]
