"""The vocabulary kinds as the driver knows them: one `KindPlugin` per kind, in the module
named after it (`pipeline.driver.kinds.<name>`, its `PLUGIN`).

A kind's pure facts (its Vocabulary class, file suffix, whether records end in EOS, the flags
its vocabularies are built with) are its `CodecKind` (`transforms.codecs.kinds`, the one list
of kinds); its plugin adds what the driver needs: its learner, its part of the config
(`settings_type`: a frozen dataclass whose fields are exactly its own flags, each declaring
its flag), what it refuses (`problem`) and the flag naming given vocabularies (`given_flag`).
`kind_part` checks a command line's kind flags once; the options, the fingerprint and the
vocab step derive their lists from the plugins. Adding a kind touches its Vocabulary module,
`CODEC_KINDS` and its plugin (with its learner, or a learner module of its own):
docs/design.md walks through one.

May import what pipeline.driver may (pipeline.output, pipeline.runtime, transforms); the rest of
pipeline.driver imports it, never the other way round.
"""

import argparse
import dataclasses
import importlib
import logging
from typing import Any, Callable, List, Mapping, NamedTuple, Optional, Tuple, Type

from pipeline.runtime.errors import DatagenError
from transforms.codecs.kinds import CODEC_KINDS, CodecKind
from transforms.codecs.vocabulary import VocabularyLoader
from transforms.contracts.settings import flag_fields
from transforms.vocab.learners import VocabLearner

LOG = logging.getLogger("datagen")


class KindPlugin:
    """The driver's part of one vocabulary kind. Subclasses set the class attributes and
    override `problem` as their flags need."""

    codec: CodecKind
    learner: Type[VocabLearner]
    settings_type: Optional[type] = None  # frozen dataclass of its own flags, or None
    given_flag: Optional[str] = None      # its flag naming existing vocabularies
    given_most: int = 2                   # FILE, or SOURCE_FILE,TARGET_FILE

    @property
    def name(self) -> str:
        return self.codec.name

    def own_flags(self) -> Tuple[str, ...]:
        """The flags that mean something for this kind only: the fields of its settings,
        each declaring its flag (`transforms.contracts.settings.setting`)."""
        if self.settings_type is None:
            return ()
        return tuple(flag for _, flag, _ in flag_fields(self.settings_type))

    def settings(self, flags: argparse.Namespace) -> Any:
        """The kind's part of the config: its own flags' values (None without flags)."""
        if self.settings_type is None:
            return None
        return self.settings_type(**{name: getattr(flags, name) for name in self.own_flags()})

    def given_names(self, settings: Any) -> List[str]:
        """The existing vocabularies the settings name, as given (empty: learnt)."""
        value = getattr(settings, self.given_flag) if self.given_flag else None
        if not value:
            return []
        if self.given_most == 1:
            return [value]
        return [name for name in value.split(",") if name]

    def problem(self, settings: Any, vocab_size: int) -> Optional[str]:
        """What else makes the settings impossible for this kind (a message), or None."""
        return None


class KindPart(NamedTuple):
    """The run's kind and its part of the config (`kind_part`)."""
    kind: KindPlugin
    settings: Any                    # its own flags (`KindPlugin.settings`), or None
    given: List[str]                 # the existing vocabularies its flags name, as given
    loader: VocabularyLoader         # its vocabularies' class and build options


def kind_plugin(name: str) -> KindPlugin:
    """The plugin of the kind named `name` (a --vocab_type value)."""
    codec = next((kind for kind in CODEC_KINDS if kind.name == name), None)
    if codec is None:
        raise ValueError("unknown vocab type %r" % name)
    plugin = importlib.import_module("%s.%s" % (__name__, codec.name)).PLUGIN
    assert plugin.codec is codec, "%s.PLUGIN is not the plugin of %s" % (__name__, name)
    return plugin


def kind_part(flags: argparse.Namespace, defaults: Mapping[str, Any]) -> KindPart:
    """The --vocab_type chosen and its part of the flags, checked: another kind's flag set
    (it would be silently ignored), a given vocabulary named wrongly, or the kind's own
    `problem`, is a DatagenError. `defaults`: {flag: default}."""
    kind = kind_plugin(flags.vocab_type)
    for other in every_plugin():
        for flag in other.own_flags():
            if other is not kind and getattr(flags, flag) != defaults[flag]:
                raise DatagenError("--%s applies to --vocab_type %s only, not %s" % (
                    flag, other.name, flags.vocab_type))
    settings = kind.settings(flags)
    given = kind.given_names(settings)
    named = getattr(settings, kind.given_flag) if kind.given_flag else None
    if named is not None and not 1 <= len(given) <= kind.given_most:
        raise DatagenError("--%s takes FILE or SOURCE_FILE,TARGET_FILE, not %r"
                           % (kind.given_flag, named))
    if given and flags.vocab_size != defaults["vocab_size"]:
        LOG.warning("--vocab_size %d with --%s: the given vocabulary is used as it is, "
                    "whatever its size; --vocab_size only names the copy in --output_dir "
                    "(vocab.%s.%d.*)", flags.vocab_size, kind.given_flag, flags.problem,
                    flags.vocab_size)
    problem = kind.problem(settings, flags.vocab_size)
    if problem:
        raise DatagenError(problem)
    return KindPart(kind, settings, given, kind.codec.loader(vars(flags)))


def every_plugin() -> Tuple[KindPlugin, ...]:
    """Every kind's plugin, in `CODEC_KINDS`' order."""
    return tuple(kind_plugin(kind.name) for kind in CODEC_KINDS)
