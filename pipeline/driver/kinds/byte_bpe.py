"""The byte_bpe kind's driver plugin: GPT-2 style byte-level BPE, learnt from sampled
pre-token counts (`transforms.vocab.byte_bpe_learning.ByteBpeLearner`) or given (--bpe_vocab)."""

from typing import Any, Optional

from pipeline.driver.kinds import KindPlugin
from transforms.codecs.byte_bpe_vocabulary import PAD_TOKEN
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
        if settings.bpe_eos_token == PAD_TOKEN and not settings.bpe_vocab:
            return ("--bpe_eos_token must not be %s: a learnt vocabulary reserves it for "
                    "padding (id 0)" % PAD_TOKEN)
        if vocab_size < 258 and not settings.bpe_vocab:
            return ("--vocab_size for byte_bpe counts the 256 byte symbols, %s and "
                    "%s: at least 258" % (PAD_TOKEN, settings.bpe_eos_token))
        return None


PLUGIN = ByteBpePlugin()
