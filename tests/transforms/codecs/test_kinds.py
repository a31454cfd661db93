"""The two registries of vocabulary kinds (`transforms.codecs.kinds` and the driver's plugins)
name each kind's parts."""

import pytest

from pipeline.driver.kinds import every_plugin, kind_plugin
from transforms.codecs.kinds import CODEC_KINDS, KIND_NAMES, codec_kind
from transforms.codecs.vocabulary import Vocabulary
from transforms.vocab.learners import VocabLearner


def test_registry_names_each_kinds_parts():
    """Each kind has both parts, under one name, once (the kinds are the registry's: a new
    one is checked here without editing this test)."""
    assert len(set(KIND_NAMES)) == len(KIND_NAMES) == len(every_plugin()) > 0
    assert KIND_NAMES[0] == "subword"  # the default, T2T's
    for kind, plugin in zip(CODEC_KINDS, every_plugin()):
        assert issubclass(kind.vocabulary, Vocabulary)
        assert codec_kind(kind.name) is kind
        assert plugin.codec is kind and kind_plugin(kind.name) is plugin
        assert issubclass(plugin.learner, VocabLearner)
    with pytest.raises(ValueError):
        codec_kind("nope")
