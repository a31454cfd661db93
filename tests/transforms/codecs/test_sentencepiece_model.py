"""transforms.codecs.sentencepiece_model against SentencePiece itself: the model is the
trainer's (trained again with the options the model records, the bytes are the same), the
`.vocab` is what spm_train writes, the option table is SentencePiece's own proto."""

import ast
import os
import re
import struct

import pytest
import sentencepiece

from repo_paths import DATA_DIR
from transforms.codecs import protobuf_wire as wire
from transforms.codecs import sentencepiece_model as sm



def _lines(path, limit=None):
    with open(os.path.join(DATA_DIR, path), encoding="utf-8") as f:
        lines = [line.strip() for line in f]
    return lines[:limit]


ZH = ("enzh-mlqe-pe/train.zh", 4000)   # CJK side: (file, vocab size)
DE = ("ende-opennmt/train.de", 1000)   # Latin-script side


def _descriptor_fields():
    """{message name: {number: (name, type, repeated)}} of the descriptor sentencepiece ships
    in sentencepiece_model_pb2.py, read as data (that module itself needs protobuf >= 7)."""
    from google.protobuf import descriptor_pb2
    path = os.path.join(os.path.dirname(sentencepiece.__file__), "sentencepiece_model_pb2.py")
    with open(path, encoding="utf-8") as f:
        serialized = ast.literal_eval(re.search(r"AddSerializedFile\((b'.*?')\)", f.read(),
                                                re.S).group(1))
    proto = descriptor_pb2.FileDescriptorProto.FromString(serialized)
    types = {v: k[len("TYPE_"):].lower()
             for k, v in descriptor_pb2.FieldDescriptorProto.Type.items()}
    return {m.name: {f.number: (f.name, types[f.type], f.label == 3) for f in m.field}
            for m in proto.message_type}


def test_option_tables_are_sentencepieces_proto():
    fields = _descriptor_fields()
    trainer = {n: (name, "strings" if rep else kind)
               for n, (name, kind, rep) in fields["TrainerSpec"].items()}
    assert sm._TRAINER_SPEC == trainer
    normalizer = fields["NormalizerSpec"]
    for number, (name, kind) in sm._NORMALIZER_SPEC.items():
        proto_name, proto_kind, _ = normalizer[number]
        assert (proto_name, proto_kind) == (
            "name" if name == "normalization_rule_name" else name, kind)


def test_wire_reader_signed_ints_and_floats():
    # -1 as protobuf writes an int32: ten bytes of a 64-bit varint
    data = bytes([0x08]) + bytes([0xFF] * 9 + [0x01]) + bytes([0x15]) + struct.pack("<f", 0.75)
    fields = list(wire.iter_fields(data))
    assert [(n, t) for n, t, _ in fields] == [(1, wire.VARINT), (2, wire.FIXED32)]
    assert wire.as_int32(fields[0][2]) == -1
    assert wire.as_float(fields[1][2]) == 0.75
    with pytest.raises(ValueError):
        list(wire.iter_fields(bytes([0x0A, 0x05, 0x61])))  # a length past the end


def test_parse_option_list():
    assert sm.parse_option_list("") == {}
    assert sm.parse_option_list("split_digits=true, byte_fallback=true") == {
        "split_digits": "true", "byte_fallback": "true"}
    # a list option's commas, as SentencePiece's own flag takes them
    assert sm.parse_option_list("user_defined_symbols=<a>,<b>,num_threads=4") == {
        "user_defined_symbols": "<a>,<b>", "num_threads": "4"}
    assert sm.parse_option_list("normalization_rule_name=identity") == {
        "normalization_rule_name": "identity"}
    for bad in ("model_prefix=x", "input=a.txt", "no_such_option=1", "split_digits"):
        with pytest.raises(ValueError):
            sm.parse_option_list(bad)


def test_trainer_options_fix_threads_and_choose_special_ids():
    t5 = sm.trainer_options("bpe", 500, 0.9995)
    assert t5 == {"model_type": "bpe", "vocab_size": 500, "character_coverage": 0.9995,
                  "num_threads": sm.NUM_THREADS, "pad_id": 0, "eos_id": 1, "unk_id": 2,
                  "bos_id": -1}
    own = sm.trainer_options("unigram", 500, 1.0, "sentencepiece", {"num_threads": "2"})
    assert (own["unk_id"], own["bos_id"], own["eos_id"], own["pad_id"]) == (0, 1, 2, -1)
    assert own["num_threads"] == "2"  # an explicit option wins, and is recorded


@pytest.mark.slow
@pytest.mark.parametrize("side", [ZH, DE], ids=["zh", "de"])
@pytest.mark.parametrize("model_type", sm.MODEL_TYPES)
def test_model_parity_with_the_options_the_model_records(side, model_type):
    lines = _lines(side[0])
    model = sm.train(lines, sm.trainer_options(model_type, side[1], 0.9995))
    recorded = sm.recorded_options(model)
    assert recorded["num_threads"] == sm.NUM_THREADS
    assert recorded["model_type"] == model_type
    # SentencePiece's own trainer, given only what the model says about itself
    out = []
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=type("W", (), {"write": out.append})(),
        minloglevel=2, **{k: sm.option_text(v) for k, v in recorded.items()})
    assert out[0] == model


def test_vocab_text_is_what_spm_train_writes(tmp_path):
    lines = _lines(ZH[0], 1000)
    options = sm.trainer_options("bpe", 3000, 0.9995)
    prefix = str(tmp_path / "m")
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_prefix=prefix, minloglevel=2,
        **{k: sm.option_text(v) for k, v in options.items()})
    with open(prefix + ".model", "rb") as f:
        model = sm.SpmModel(f.read())
    with open(prefix + ".vocab", encoding="utf-8") as f:
        assert model.vocab_text() == f.read()
    assert model.vocab_size == 3000


@pytest.mark.slow
def test_unigram_vocab_text_and_determinism(tmp_path):
    lines = _lines(DE[0], 1500)
    options = sm.trainer_options("unigram", 600, 1.0, "sentencepiece")
    model = sm.train(lines, options)
    assert sm.train(lines, options) == model  # same threads, same bytes
    prefix = str(tmp_path / "m")
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_prefix=prefix, minloglevel=2,
        **{k: sm.option_text(v) for k, v in options.items()})
    with open(prefix + ".vocab", encoding="utf-8") as f:
        assert sm.SpmModel(model).vocab_text() == f.read()


def test_special_ids_encode_decode():
    lines = _lines(ZH[0], 1000)
    for choice, expected in sm.SPECIAL_IDS.items():
        model = sm.SpmModel(sm.train(lines, sm.trainer_options("bpe", 3000, 0.9995, choice)))
        assert model.special_ids() == expected
        assert model.eos_id() == expected["eos_id"]
        line = lines[7]
        ids = model.encode(line)
        assert ids == model.processor.encode(line)
        assert model.encode_many([line, lines[8]]) == [ids, model.encode(lines[8])]
        assert model.decode(ids + [model.eos_id()]) == line
    no_eos = sm.SpmModel(sm.train(lines, sm.trainer_options(
        "bpe", 3000, 0.9995, extra={"eos_id": "-1"})))
    with pytest.raises(ValueError):
        no_eos.eos_id()


def test_trainer_refusal_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="Vocabulary size"):
        sm.train(_lines(DE[0], 20), sm.trainer_options("unigram", 8000, 0.9995))
