"""The byte_bpe kind's driver plugin: GPT-2 style byte-level BPE, learnt from sampled
pre-token counts (`transforms.vocab.byte_bpe_learning.ByteBpeLearner`) or given (--bpe_vocab)."""

from typing import Any, Optional

from pipeline.driver.kinds import KindPlugin
from transforms.codecs.byte_bpe import ENDOFTEXT
from transforms.codecs.kinds import codec_kind
from transforms.vocab.byte_bpe_learning import ByteBpeLearner, ByteBpeSettings


class ByteBpePlugin(KindPlugin):
    codec = codec_kind("byte_bpe")
    learner = ByteBpeLearner
    settings_type = ByteBpeSettings
    given_flag = "bpe_vocab"
    given_most = 1  # a directory, for both sides

    def problem(self, settings: Any, vocab_size: int) -> Optional[str]:
        if settings.bpe_eos_token == "":
            return "--bpe_eos_token must not be empty"
        if vocab_size < 257 and not settings.bpe_vocab:
            return ("--vocab_size for byte_bpe counts the 256 byte symbols and "
                    "%s: at least 257" % settings.bpe_eos_token)
        return None


PLUGIN = ByteBpePlugin()
