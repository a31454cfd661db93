"""--vocab_type sentencepiece end to end: models and ids against SentencePiece itself
(`spm_parity`), a given model, the sample's figures, reruns, flags, inspect."""

import json
import os

import pytest
import sentencepiece

import spm_parity
from datagen_helpers import DIRECT_MP2, one_line_error, run_datagen
from pipeline.tools import inspect as inspect_tool
from repo_paths import SAMPLE_DATA
from transforms.codecs.sentencepiece_vocabulary import MODEL_FILE, VOCAB_FILE

pytestmark = pytest.mark.slow

SAMPLE = os.path.join(SAMPLE_DATA, "enzh-mlqe-pe")
EN, ZH = os.path.join(SAMPLE, "train.en"), os.path.join(SAMPLE, "train.zh")
SPM = ["--problem", "p", "--vocab_type", "sentencepiece"]


@pytest.mark.parametrize("model_type", ["unigram", "bpe"])
@pytest.mark.parametrize("shared", [False, True], ids=["per_side", "shared"])
def test_models_and_ids_are_sentencepieces_own(tmp_path, model_type, shared):
    out = tmp_path / "out"
    run_datagen(out, EN, ZH, *SPM, "--spm_model_type", model_type, "--vocab_size", 8000,
                *(["--shared_vocab"] if shared else []))
    models = spm_parity.check_output(out, "p", EN, ZH)
    assert sorted(models) == (["shared"] if shared else ["source", "target"])
    vocab = spm_parity.summary(out, "p")["vocab"]
    for name, model in models.items():
        options = vocab[name]["trainer_options"]
        assert options["model_type"] == model_type and options["num_threads"] == 16
        assert (options["pad_id"], options["eos_id"], options["unk_id"], options["bos_id"]) == (
            0, 1, 2, -1)
        directory = os.path.join(out, os.path.basename(vocab[name]["path"]))
        assert sorted(os.listdir(directory)) == [MODEL_FILE, VOCAB_FILE]
        p = sentencepiece.SentencePieceProcessor(model_proto=model)
        with open(os.path.join(directory, VOCAB_FILE), encoding="utf-8") as f:
            assert [line.split("\t")[0] for line in f] == [
                p.id_to_piece(i) for i in range(p.get_piece_size())]


def test_given_model_trained_outside_the_job(tmp_path):
    # a team's own model: SentencePiece's defaults (unk=0, bos=1, eos=2), trained from a file
    prefix = str(tmp_path / "team")
    sentencepiece.SentencePieceTrainer.train(input=ZH, model_prefix=prefix, vocab_size=6000,
                                             model_type="bpe", minloglevel=2)
    out = tmp_path / "out"
    run_datagen(out, EN, ZH, *SPM, "--spm_model", prefix + ".model")
    s = spm_parity.summary(out, "p")
    assert s["vocab"]["shared"]["given"] == prefix + ".model"
    assert s["passes"] == 2 and "sampled_lines" not in s["vocab"]["shared"]  # prepare, encode
    models = spm_parity.check_output(out, "p", EN, ZH, learnt=False)
    with open(prefix + ".model", "rb") as f:
        assert models["shared"] == f.read()  # copied as it is; eos 2 ends every record
    with open(os.path.join(out, "vocab.p.8192.spm", VOCAB_FILE), encoding="utf-8") as f, \
            open(prefix + ".vocab", encoding="utf-8") as g:
        assert f.read() == g.read()


def test_sample_larger_than_the_budget(tmp_path):
    budget = 60000  # characters per file; the sample files hold 636k and 384k
    runs = []
    for name in ("a", "b"):
        out = tmp_path / name
        run_datagen(out, EN, ZH, *SPM, "--vocab_size", 3000, "--file_byte_budget", budget,
                    *(DIRECT_MP2 if name == "b" else []))
        runs.append(spm_parity.check_output(out, "p", EN, ZH, byte_budget=budget))
        vocab = spm_parity.summary(out, "p")["vocab"]
        for side, path in (("source", EN), ("target", ZH)):
            lines = spm_parity.sampled_lines([path], budget)
            assert 0 < len(lines) < 7000
            assert (vocab[side]["sampled_lines"], vocab[side]["sampled_chars"],
                    vocab[side]["sampled_bytes"]) == (
                len(lines), sum(map(len, lines)), sum(len(x.encode("utf-8")) for x in lines))
    assert runs[0] == runs[1]  # in one process and on two worker processes


def test_rerun_reuses_the_model_and_refuses_other_flags(tmp_path, capsys):
    out = tmp_path / "out"
    flags = (*SPM, "--vocab_size", 4000, "--spm_model_type", "bpe", "--train_source", EN,
             "--train_target", ZH, "--output_dir", out, "--runner", "FnApiRunner")
    run_datagen(out, None, None, *flags)
    model = spm_parity.vocab_models(out, "p")
    os.remove(out / "p.DATAGEN_COMPLETE")  # as after a crash: the vocabularies are kept
    run_datagen(out, None, None, *flags, "--num_train_shards", 3)
    assert spm_parity.summary(out, "p")["vocab"]["source"]["reused"] is True
    assert spm_parity.vocab_models(out, "p") == model
    os.remove(out / "p.DATAGEN_COMPLETE")
    one_line_error(capsys, [*flags, "--spm_character_coverage", "1.0"],
                   "made from other vocab inputs/flags", "--spm_character_coverage 0.9995 -> 1.0")


@pytest.mark.parametrize("argv, words", [
    (["--spm_trainer_options", "model_prefix=x"], ["--spm_trainer_options", "model_prefix"]),
    (["--spm_trainer_options", "no_such=1"], ["--spm_trainer_options", "no_such"]),
    (["--spm_character_coverage", "0"], ["--spm_character_coverage"]),
    (["--vocab_type", "subword", "--spm_model_type", "bpe"], ["--spm_model_type", "subword"]),
])
def test_flag_errors(tmp_path, capsys, argv, words):
    one_line_error(capsys, ["--train_source", EN, "--train_target", ZH, "--output_dir",
                            tmp_path / "out", "--vocab_type", "sentencepiece", *argv], *words)


def test_trainer_refusal_is_one_line(tmp_path, capsys):
    few = tmp_path / "few.en"
    few.write_text("a few words\nand a line\n", encoding="utf-8")
    one_line_error(capsys, ["--train_source", few, "--train_target", few, "--output_dir",
                            tmp_path / "out", "--source_lang", "en", "--target_lang", "de",
                            *SPM, "--vocab_size", 5000], "Vocabulary size too high")
    assert not os.path.exists(tmp_path / "out" / "p.DATAGEN_COMPLETE")


def test_inspect_decodes_records_back_to_text(tmp_path, capsys):
    out = tmp_path / "out"
    run_datagen(out, EN, ZH, *SPM, "--vocab_size", 8000, "--spm_special_ids", "sentencepiece")
    vocab = spm_parity.summary(out, "p")["vocab"]
    assert vocab["source"]["trainer_options"]["eos_id"] == 2
    inspect_tool.main([str(out), "--num_records", "3", "--json"])
    shown = json.loads(capsys.readouterr().out)
    with open(EN, encoding="utf-8") as f:
        english = {line.strip() for line in f}
    records = shown["records"]
    assert len(records) == 3 and all(r["source"] in english for r in records)


def test_reader_reads_the_records_in_t2t_mode(tmp_path):
    from pipeline.tools import reader
    out = tmp_path / "out"
    run_datagen(out, EN, ZH, *SPM, "--vocab_size", 8000, "--spm_model_type", "bpe")
    pattern = os.path.join(out, "p-train-*")
    seen = []
    for batch in reader.make_dataset(pattern, 4096, mode="t2t", shuffle=False).as_numpy_iterator():
        for inputs, targets in zip(batch["inputs"], batch["targets"]):
            # pad=0 after EOS=1 (the t5 special ids): T2T's padding and EOS
            seen.append((tuple(int(i) for i in inputs if i), tuple(int(t) for t in targets if t)))
    assert all(i[-1] == 1 and t[-1] == 1 for i, t in seen)
    assert sorted(seen) == sorted(spm_parity.written_records(out, "p").elements())
    with pytest.raises(ValueError, match="written for mode='t2t'"):
        reader.make_dataset(pattern, 4096, mode="nmt")
