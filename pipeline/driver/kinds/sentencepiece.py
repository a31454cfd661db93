"""The sentencepiece kind's driver plugin: a SentencePiece model learnt by SentencePiece's own
trainer (`transforms.vocab.sentencepiece_learning`) or given (--spm_model)."""

from typing import Any, Optional

from pipeline.driver.kinds import KindPlugin
from transforms.codecs import sentencepiece_model
from transforms.codecs.kinds import codec_kind
from transforms.vocab.sentencepiece_learning import SentencePieceLearner, SentencePieceSettings


class SentencePiecePlugin(KindPlugin):
    codec = codec_kind("sentencepiece")
    learner = SentencePieceLearner
    settings_type = SentencePieceSettings
    given_flag = "spm_model"

    def problem(self, settings: Any, vocab_size: int) -> Optional[str]:
        try:
            sentencepiece_model.parse_option_list(settings.spm_trainer_options)
        except ValueError as e:
            return "--spm_trainer_options: %s" % e
        return None


PLUGIN = SentencePiecePlugin()
