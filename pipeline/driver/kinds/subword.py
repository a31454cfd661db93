"""The subword kind's driver plugin: T2T's SubwordTextEncoder, learnt by bisection over
min_count (`transforms.vocab.subword_learning`). Its flags are the job's general vocabulary flags."""

from pipeline.driver.kinds import KindPlugin
from transforms.codecs.kinds import codec_kind
from transforms.vocab.subword_learning import SubwordLearner


class SubwordPlugin(KindPlugin):
    codec = codec_kind("subword")
    learner = SubwordLearner


PLUGIN = SubwordPlugin()
