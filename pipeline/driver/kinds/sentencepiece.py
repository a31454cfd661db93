"""The sentencepiece kind's driver plugin: a SentencePiece model learnt by SentencePiece's own
trainer (`transforms.vocab.sentencepiece_learning`) or given (--spm_model)."""

from typing import Any, Optional

from pipeline.driver.kinds import AddFlag, KindPlugin
from pipeline.runtime.flag_ranges import bounded
from transforms.codecs import sentencepiece_model
from transforms.codecs.kinds import codec_kind
from transforms.vocab.sentencepiece_learning import SentencePieceLearner, SentencePieceSettings


class SentencePiecePlugin(KindPlugin):
    codec = codec_kind("sentencepiece")
    learner = SentencePieceLearner
    description = "a SentencePiece model (SentencePiece's own trainer)"
    settings_type = SentencePieceSettings
    given_flag = "spm_model"
    fingerprint_defaults = False  # added after fingerprints: defaults left out

    def add_flags(self, add: AddFlag) -> None:
        add("--spm_model", default=None,
            help="Existing SentencePiece model: FILE (.model) for both sides, or "
                 "SOURCE_FILE,TARGET_FILE. Nothing is learnt.")
        add("--spm_model_type", default="unigram", choices=sentencepiece_model.MODEL_TYPES,
            help="SentencePiece model learnt (its trainer's --model_type).")
        add("--spm_character_coverage", type=bounded(float, above=0, high=1), default=0.9995,
            help="Characters the SentencePiece model covers (its trainer's default).")
        add("--spm_special_ids", default=sentencepiece_model.DEFAULT_SPECIAL_IDS,
            choices=tuple(sentencepiece_model.SPECIAL_IDS),
            help="Ids of the specials of a learnt SentencePiece model: t5 (pad=0, eos=1, "
                 "unk=2, no bos; T2T's and seqio's) or sentencepiece (unk=0, bos=1, eos=2).")
        add("--spm_trainer_options", default="",
            help="Further SentencePiece trainer options, key=value,... (e.g. "
                 "split_digits=true,byte_fallback=true); recorded in the summary.")

    def problem(self, settings: Any, vocab_size: int) -> Optional[str]:
        try:
            sentencepiece_model.parse_option_list(settings.spm_trainer_options)
        except ValueError as e:
            return "--spm_trainer_options: %s" % e
        return None


PLUGIN = SentencePiecePlugin()
