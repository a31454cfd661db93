"""The word kind's driver plugin: tensorflow/nmt word vocabularies, the most frequent sampled
words (`transforms.vocab.word_learning.WordLearner`) or given (--word_vocab)."""

from typing import Any, Optional

from pipeline.driver.kinds import KindPlugin
from transforms.codecs.kinds import codec_kind
from transforms.vocab.word_learning import WordLearner, WordSettings


class WordPlugin(KindPlugin):
    codec = codec_kind("word")
    learner = WordLearner
    settings_type = WordSettings
    given_flag = "word_vocab"

    def problem(self, settings: Any, vocab_size: int) -> Optional[str]:
        if vocab_size < 3 and not settings.word_vocab:
            return "--vocab_size for a word vocabulary counts <unk>, <s>, </s>: at least 3"
        return None


PLUGIN = WordPlugin()
