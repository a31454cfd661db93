"""SentencePiece models: learnt by SentencePiece's own trainer, used through its processor.

Nothing of SentencePiece is re-implemented here: `train` hands sentences and options to
`sentencepiece.SentencePieceTrainer` and returns the serialized model it makes; `SpmModel`
wraps a `SentencePieceProcessor` loaded from those bytes. What this module adds is what the
job needs around them:

- Options (`trainer_options`): the flags' model type, size and character coverage, the special
  ids (`SPECIAL_IDS`) and any further trainer option, with the thread count fixed
  (`NUM_THREADS`): SentencePiece's trainer learns a different model for another `num_threads`
  (1 and 2 threads differ on the bundled zh sample; 2 and 2 agree), so the count is part of
  the recorded options and a rerun, or another machine, makes the same model bytes. 16 is
  SentencePiece's own default, so `spm_train` with the same options learns the same model.
- Special ids. SentencePiece's default is unk=0, bos=1, eos=2 (no pad); seqio/T5 models use
  pad=0, eos=1, unk=2 (no bos). The job's default is T5's ("t5"): it is Tensor2Tensor's layout
  too (PAD_ID 0, EOS_ID 1), so records from every kind pad with 0 and end in 1.
- Recorded options (`recorded_options`): the model's own `trainer_spec` and `normalizer_spec`,
  read with a minimal wire reader (`protobuf_wire`): SentencePiece's generated
  `sentencepiece_model_pb2` needs protobuf >= 7 and does not import beside Beam's protobuf 6.
  Training again with them on the same sentences gives the same bytes (the parity tests).
- `.vocab` text (`vocab_text`): what `spm_train` writes beside the model, one
  `piece<TAB>score` line per id, the score as C++'s `ostream << float` prints it (`%g`).
"""

import io
import struct
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from transforms.codecs import protobuf_wire as wire

NUM_THREADS = 16
MODEL_TYPES = ("unigram", "bpe")  # --spm_model_type (SentencePiece also has word and char)
SPECIAL_IDS = {
    "t5": {"pad_id": 0, "eos_id": 1, "unk_id": 2, "bos_id": -1},
    "sentencepiece": {"unk_id": 0, "bos_id": 1, "eos_id": 2, "pad_id": -1},
}
DEFAULT_SPECIAL_IDS = "t5"
# Set by the job itself: the sentences come from the job's sample, the model goes to bytes.
NOT_ALLOWED = ("input", "model_prefix", "input_format", "sentence_iterator", "model_writer")

# TrainerSpec (field 2 of ModelProto): number -> (option name, type), as in
# sentencepiece_model.proto (a test checks this table against the descriptor that
# sentencepiece ships). Repeated strings are lists.
_TRAINER_SPEC = {
    1: ("input", "strings"), 7: ("input_format", "string"), 2: ("model_prefix", "string"),
    3: ("model_type", "enum"), 4: ("vocab_size", "int32"), 10: ("character_coverage", "float"),
    11: ("input_sentence_size", "uint64"), 19: ("shuffle_input_sentence", "bool"),
    14: ("seed_sentencepiece_size", "int32"), 15: ("shrinking_factor", "float"),
    18: ("max_sentence_length", "int32"), 16: ("num_threads", "int32"),
    17: ("num_sub_iterations", "int32"), 20: ("max_sentencepiece_length", "int32"),
    21: ("split_by_unicode_script", "bool"), 23: ("split_by_number", "bool"),
    22: ("split_by_whitespace", "bool"), 24: ("treat_whitespace_as_suffix", "bool"),
    26: ("allow_whitespace_only_pieces", "bool"), 25: ("split_digits", "bool"),
    53: ("pretokenization_delimiter", "string"), 30: ("control_symbols", "strings"),
    31: ("user_defined_symbols", "strings"), 36: ("required_chars", "string"),
    35: ("byte_fallback", "bool"), 32: ("vocabulary_output_piece_score", "bool"),
    33: ("hard_vocab_limit", "bool"), 34: ("use_all_vocab", "bool"), 40: ("unk_id", "int32"),
    41: ("bos_id", "int32"), 42: ("eos_id", "int32"), 43: ("pad_id", "int32"),
    45: ("unk_piece", "string"), 46: ("bos_piece", "string"), 47: ("eos_piece", "string"),
    48: ("pad_piece", "string"), 44: ("unk_surface", "string"),
    54: ("seed_sentencepieces_file", "string"), 55: ("auto_character_coverage", "bool"),
    5: ("accept_language", "strings"), 6: ("self_test_sample_size", "int32"),
    12: ("mining_sentence_size", "int32"), 13: ("training_sentence_size", "int32"),
    49: ("train_extremely_large_corpus", "bool"), 50: ("enable_differential_privacy", "bool"),
    51: ("differential_privacy_noise_level", "float"),
    52: ("differential_privacy_clipping_threshold", "uint64"),
}
# NormalizerSpec (field 3 of ModelProto): its options as the trainer names them
# (precompiled_charsmap, field 2, is compiled from the rule, not an option).
_NORMALIZER_SPEC = {
    1: ("normalization_rule_name", "string"), 3: ("add_dummy_prefix", "bool"),
    4: ("remove_extra_whitespaces", "bool"), 5: ("escape_whitespaces", "bool"),
    6: ("normalization_rule_tsv", "string"),
}
_MODEL_TYPE_NAMES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}
OPTION_NAMES = frozenset(name for name, _ in (*_TRAINER_SPEC.values(),
                                               *_NORMALIZER_SPEC.values()))


def parse_option_list(text: Optional[str]) -> Dict[str, str]:
    """{name: value} of `key=value,key=value,...` (--spm_trainer_options), values as strings.

    A comma-separated item without "=" continues the previous value, so a list option reads
    as SentencePiece's own flag does: `user_defined_symbols=<a>,<b>,split_digits=true`.
    Raises ValueError for an unknown or job-owned option (before anything runs)."""
    options: Dict[str, str] = {}
    name = None
    for item in (text or "").split(","):
        if "=" in item:
            name, _, value = item.partition("=")
            name = name.strip().lstrip("-")
            if name in NOT_ALLOWED:
                raise ValueError("%s is set by the job itself" % name)
            if name not in OPTION_NAMES:
                raise ValueError("%r is not a SentencePiece trainer option" % name)
            options[name] = value
        elif name is not None:
            options[name] += "," + item
        elif item.strip():
            raise ValueError("%r is not key=value" % item)
    return options


def trainer_options(model_type: str, vocab_size: int, character_coverage: float,
                    special_ids: str = DEFAULT_SPECIAL_IDS,
                    extra: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The options `train` passes to SentencePiece's trainer, as {name: value}: the flags'
    values, `SPECIAL_IDS[special_ids]`, `num_threads=NUM_THREADS`, then `extra` (parsed
    --spm_trainer_options), which may override any of them."""
    options: Dict[str, Any] = {"model_type": model_type, "vocab_size": vocab_size,
               "character_coverage": character_coverage, "num_threads": NUM_THREADS}
    options.update(SPECIAL_IDS[special_ids])
    options.update(extra or {})
    return options


def option_text(value: Any) -> str:
    """An option value as the trainer reads it (bools lower-case, lists comma-separated)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(value)
    return str(value)


def train(sentences: Iterable[str], options: Mapping[str, Any]) -> bytes:
    """The serialized model SentencePiece's trainer learns from `sentences` (an iterable of
    str, one sentence each) with `options` ({name: value}); nothing is written to disk."""
    import sentencepiece
    out = io.BytesIO()
    arguments: Dict[str, Any] = {name: option_text(value) for name, value in options.items()}
    arguments.update(sentence_iterator=iter(sentences), model_writer=out, minloglevel=2)
    sentencepiece.SentencePieceTrainer.train(**arguments)
    return out.getvalue()


def _float32_text(value: float) -> str:
    """The shortest decimal that reads back as the same float32 (what the option was)."""
    for digits in range(1, 10):
        text = "%.*g" % (digits, value)
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == value:
            return text
    return repr(value)


def _read_spec(data: bytes, table: Mapping[int, Tuple[str, str]]) -> Dict[str, Any]:
    spec: Dict[str, Any] = {}
    for number, _, field in wire.iter_fields(data):
        if number not in table:
            continue
        name, kind = table[number]
        value: Any = field
        if kind == "strings":
            spec.setdefault(name, []).append(value.decode("utf-8"))
        elif kind == "string":
            spec[name] = value.decode("utf-8")
        elif kind == "enum":
            spec[name] = _MODEL_TYPE_NAMES.get(value, value)
        elif kind == "int32":
            spec[name] = wire.as_int32(value)
        elif kind == "uint64":
            spec[name] = value
        elif kind == "bool":
            spec[name] = bool(value)
        elif kind == "float":
            spec[name] = float(_float32_text(wire.as_float(value)))
    return spec


def recorded_options(model: bytes) -> Dict[str, Any]:
    """The options recorded in a serialized model: every field its `trainer_spec` holds and
    the normalizer's options, as {name: value} (`train`'s form; the empty `input` and
    `model_prefix` of a model trained from sentences in memory are left out)."""
    trainer = wire.first_field(model, 2)
    normalizer = wire.first_field(model, 3)
    options = _read_spec(trainer if isinstance(trainer, bytes) else b"", _TRAINER_SPEC)
    options.update(_read_spec(normalizer if isinstance(normalizer, bytes) else b"",
                              _NORMALIZER_SPEC))
    for name in ("input", "model_prefix"):
        if not options.get(name):
            options.pop(name, None)
    return options


def _score_text(score: float) -> str:
    """A score as C++'s `std::ostream << float` prints it (6 significant digits, %g)."""
    return "%g" % score


class SpmModel:
    """A SentencePiece model loaded from its serialized bytes: ids, pieces, its `.vocab`."""

    def __init__(self, model_bytes: bytes):
        import sentencepiece
        self.model_bytes = bytes(model_bytes)
        self.processor = sentencepiece.SentencePieceProcessor(model_proto=self.model_bytes)

    @property
    def vocab_size(self) -> int:
        return self.processor.get_piece_size()

    def special_ids(self) -> Dict[str, int]:
        """{"unk_id", "bos_id", "eos_id", "pad_id"}: -1 where the model has none."""
        p = self.processor
        return {"unk_id": p.unk_id(), "bos_id": p.bos_id(), "eos_id": p.eos_id(),
                "pad_id": p.pad_id()}

    def eos_id(self) -> int:
        """The id that ends every example; ValueError when the model has no EOS."""
        eos = self.processor.eos_id()
        if eos < 0:
            raise ValueError("the SentencePiece model has no EOS piece (eos_id=-1)")
        return eos

    def encode(self, text: str) -> List[int]:
        """The ids of one line (SentencePieceProcessor.encode), without EOS."""
        return self.processor.encode(text)

    def encode_many(self, texts: Iterable[str]) -> List[List[int]]:
        """The ids of each of `texts`, in a list (one call into the processor)."""
        return self.processor.encode(list(texts))

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ids; the special pieces (pad, EOS, ...) decode to nothing."""
        return self.processor.decode(list(ids))

    def recorded_options(self) -> Dict[str, Any]:
        return recorded_options(self.model_bytes)

    def vocab_text(self) -> str:
        """The `.vocab` file spm_train writes beside the model: `piece<TAB>score` per id (the
        piece only when the model was trained with vocabulary_output_piece_score=false)."""
        p = self.processor
        with_score = self.recorded_options().get("vocabulary_output_piece_score", True)
        lines = []
        for i in range(p.get_piece_size()):
            piece = p.id_to_piece(i)
            lines.append("%s\t%s\n" % (piece, _score_text(p.get_score(i))) if with_score
                         else piece + "\n")
        return "".join(lines)
