"""The other vocabulary types through the whole job: tensorflow/nmt word vocabularies (read
back with `pipeline.tools.reader.make_dataset` and compared batch for batch with tensorflow/nmt's
iterator) and GPT-2 style byte-level BPE."""

import json
import os

import pytest


from datagen_helpers import DATA_DIR, envi, read_examples, run_datagen, shard_files
from transforms.codecs.word import WordVocab
from transforms.pairs.pair_encoding import shuffle_key

# Every test runs the whole job: the full suite only.
pytestmark = pytest.mark.slow

SRC, TGT = envi("tst2013", "en"), envi("tst2013", "vi")
SRC_VOCAB, TGT_VOCAB = envi("vocab", "en"), envi("vocab", "vi")


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def test_word_vocab_records_read_back_as_tensorflow_nmt_batches(tmp_path):
    import nmt_reference as ref
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
    from pipeline.tools.reader import make_dataset
    for kw in (dict(batch_size=7), dict(batch_size=5, num_buckets=5, src_max_len=50),
               dict(batch_size=4, num_buckets=5, src_max_len=10, tgt_max_len=8)):
        got = ref.dict_batches(make_dataset(str(out / "envi-train-*"), shuffle=False, **kw))
        expected = ref.as_numpy(ref.nmt_get_iterator(
            str(tmp_path / "s.txt"), str(tmp_path / "t.txt"), SRC_VOCAB, TGT_VOCAB,
            shuffle=False, **kw))
        ref.assert_same_batches(got, expected)
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


GPT2_DIR = os.path.join(DATA_DIR, "gpt2")
MLQE = os.path.join(DATA_DIR, "enzh-mlqe-pe")


def _pairs(out, problem):
    return [pair for p in shard_files(out, problem, "train") for pair in read_examples(p)]


def _hf_pairs(tokenizer_json, sources, targets):
    """The (inputs, targets) ids `tokenizers.Tokenizer.from_file(tokenizer_json)` gives."""
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_file(str(tokenizer_json))
    return sorted((tuple(hf.encode(a.strip()).ids), tuple(hf.encode(b.strip()).ids))
                  for a, b in zip(sources, targets))


def test_byte_bpe_with_gpt2_vocab_gives_gpt2_ids_plus_endoftext(tmp_path):
    """GPT-2's own vocabulary given: records of GPT-2's ids + <|endoftext|>, the token's
    text inside a line encoded as text; the copied vocabulary's tokenizer.json gives the
    same ids in Hugging Face tokenizers."""
    from transforms.codecs.byte_bpe import ByteBPE
    sources = _lines(os.path.join(MLQE, "dev.en"))
    targets = _lines(os.path.join(MLQE, "dev.zh"))
    sources[3] += " <|endoftext|> and on"  # the EOS token's text in the corpus
    targets[5] = "<|endoftext|>" + targets[5]
    for name, lines in (("dev.en", sources), ("dev.zh", targets)):
        (tmp_path / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    out = tmp_path / "out"
    summary = run_datagen(out, tmp_path / "dev.en", tmp_path / "dev.zh",
                          "--problem", "gpt", "--vocab_type", "byte_bpe", "--bpe_vocab", GPT2_DIR,
                          "--num_train_shards", 2)
    assert summary["splits"]["train"]["pairs_written"] == 1000
    bpe = ByteBPE.from_dir(str(out / "vocab.gpt.8192.bpe"))
    assert bpe.vocab_size == 50257 and bpe.eos_id == 50256
    want = sorted((tuple(bpe.encode_ordinary(a.strip()) + [50256]),
                   tuple(bpe.encode_ordinary(b.strip()) + [50256]))
                  for a, b in zip(sources, targets))
    got = sorted(_pairs(out, "gpt"))
    assert got == want  # ByteBPE == tiktoken: tests/transforms/codecs/test_byte_bpe.py
    assert got == _hf_pairs(out / "vocab.gpt.8192.bpe" / "tokenizer.json", sources, targets)


def test_byte_bpe_learnt_on_the_sample_loads_in_tokenizers(tmp_path, capsys):
    out = tmp_path / "out"
    summary = run_datagen(out, os.path.join(MLQE, "train.en"), os.path.join(MLQE, "train.zh"),
                          "--problem", "bpe", "--vocab_type", "byte_bpe", "--vocab_size", 1000,
                          "--num_train_shards", 2)
    assert summary["vocab"]["source"]["size"] == 1000
    from transforms.codecs.byte_bpe import ByteBPE
    src = ByteBPE.from_dir(str(out / "vocab.bpe.1000.bpe.en"))
    texts = [line.strip() for line in _lines(os.path.join(MLQE, "dev.en"))[:200]]
    assert all(src.decode(src.encode(t)) == t for t in texts)
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.ByteLevelBPETokenizer(str(out / "vocab.bpe.1000.bpe.en" / "vocab.json"),
                                          str(out / "vocab.bpe.1000.bpe.en" / "merges.txt"))
    assert all(hf.encode(t).ids == src.encode(t) for t in texts)
    # each side's tokenizer.json gives every record's ids, EOS included
    records = _pairs(out, "bpe")
    for side, lang in enumerate(("en", "zh")):
        side_hf = tokenizers.Tokenizer.from_file(
            str(out / ("vocab.bpe.1000.bpe." + lang) / "tokenizer.json"))
        assert sorted(pair[side] for pair in records) == sorted(
            tuple(side_hf.encode(line.strip()).ids)
            for line in _lines(os.path.join(MLQE, "train." + lang)))
    # <pad> = 0, EOS = 1 (issue 50, item 2): every record ends in 1 and holds no 0, the
    # summary says so, and the readers pad with 0
    assert all(side[-1] == 1 and 0 not in side and 1 not in side[:-1]
               for pair in records for side in pair)
    assert {name: (v["pad_id"], v["eos_ids"]) for name, v in summary["vocab"].items()
            if name != "passes"} == {"source": (0, [1]), "target": (0, [1])}
    # an output learnt with the old layout (its fingerprint has none) is refused on a rerun,
    # not passed off as this layout's
    from datagen_helpers import one_line_error
    summary_path = out / "bpe.datagen_summary.json"
    recorded = json.loads(summary_path.read_text())
    del recorded["fingerprint"]["layout"]
    summary_path.write_text(json.dumps(recorded))
    argv = ["--output_dir", out, "--runner", "FnApiRunner", "--problem", "bpe",
            "--vocab_type", "byte_bpe", "--vocab_size", 1000, "--num_train_shards", 2,
            "--train_source", os.path.join(MLQE, "train.en"),
            "--train_target", os.path.join(MLQE, "train.zh")]
    one_line_error(capsys, argv, "id layout of an earlier version -> <pad> 0, EOS 1",
                   "--overwrite")
