"""The other vocabulary types through the whole job: tensorflow/nmt word vocabularies (read
back with `pipeline.reader.make_dataset` and compared batch for batch with tensorflow/nmt's
iterator) and GPT-2 style byte-level BPE."""

import os


from datagen_helpers import DATA_DIR, read_examples, run_datagen, shard_files
from transforms.codecs.word_vocab import WordVocab
from transforms.encode_pairs import shuffle_key

ENVI = os.path.join(DATA_DIR, "envi-nmt-testdata")
SRC = os.path.join(ENVI, "iwslt15.tst2013.100.en")
TGT = os.path.join(ENVI, "iwslt15.tst2013.100.vi")
SRC_VOCAB = os.path.join(ENVI, "iwslt15.vocab.100.en")
TGT_VOCAB = os.path.join(ENVI, "iwslt15.vocab.100.vi")


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def test_word_vocab_records_read_back_as_tensorflow_nmt_batches(tmp_path):
    import test_reader as ref
    out = tmp_path / "out"
    summary = run_datagen(out, SRC, TGT, "--problem", "envi", "--vocab_type", "word",
                          "--word_vocab", "%s,%s" % (SRC_VOCAB, TGT_VOCAB),
                          "--num_train_shards", 3, "--seed", 9)
    train = summary["splits"]["train"]
    assert train["pairs_written"] == 100
    assert 0 < train["oov_rate"]["source"] < 1 and 0 < train["oov_rate"]["target"] < 1
    # our records are globally shuffled: the reference reads the text in the same order
    order = sorted(range(100), key=lambda i: shuffle_key(9, "train", 0, i + 1))
    src, tgt = _lines(SRC), _lines(TGT)
    (tmp_path / "s.txt").write_text("".join(src[i] + "\n" for i in order), encoding="utf-8")
    (tmp_path / "t.txt").write_text("".join(tgt[i] + "\n" for i in order), encoding="utf-8")
    from pipeline.reader import make_dataset
    for kw in (dict(batch_size=7), dict(batch_size=5, num_buckets=5, src_max_len=50),
               dict(batch_size=4, num_buckets=5, src_max_len=10, tgt_max_len=8)):
        got = ref._dict_batches(make_dataset(str(out / "envi-train-*"), shuffle=False, **kw))
        expected = ref._as_numpy(ref.nmt_get_iterator(
            str(tmp_path / "s.txt"), str(tmp_path / "t.txt"), SRC_VOCAB, TGT_VOCAB,
            shuffle=False, **kw))
        ref._assert_same_batches(got, expected)
    # round trip: text -> records -> ids -> text, modulo <unk>
    vocab = WordVocab.from_file(SRC_VOCAB)
    decoded = sorted(vocab.decode(list(i)) for p in shard_files(out, "envi", "train")
                     for i, _ in read_examples(p))
    assert decoded == sorted(vocab.decode(vocab.encode(line)) for line in src)


def test_word_vocab_learnt_from_the_sample_and_real_iwslt_vocab_fixed(tmp_path):
    out = tmp_path / "learnt"
    summary = run_datagen(out, SRC, TGT, "--problem", "envi", "--vocab_type", "word",
                          "--vocab_size", 60, "--num_train_shards", 1)
    vocab = WordVocab.from_file(str(out / "vocab.envi.60.words.en"))
    assert vocab.vocab_size == 60 and vocab.words[:3] == ("<unk>", "<s>", "</s>")
    counts = {}
    for line in _lines(SRC):
        for w in line.split(" "):
            if w:
                counts[w] = counts.get(w, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    assert list(vocab.words[3:]) == [w for w, _ in ranked[:57]]
    assert summary["vocab"]["source"]["distinct_tokens"] == len(counts)

    real = os.path.join(DATA_DIR, "nmt_vocab", "vocab.en")
    out2 = tmp_path / "given"
    run_datagen(out2, SRC, TGT, "--problem", "envi", "--vocab_type", "word",
                "--word_vocab", real, "--num_train_shards", 1)
    fixed = WordVocab.from_file(str(out2 / "vocab.envi.8192.words"))
    assert fixed.words[:3] == ("<unk>", "<s>", "</s>") and fixed.vocab_size == 17191
