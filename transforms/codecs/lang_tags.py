"""The language tags of `--lang_tags`, one format a trainer: each is one reserved entry of
the vocabulary (never produced by text), prepended to every input to ask for output in a
language. T2T's `<2xx>` (Johnson et al., 2017; `target` is its older name, today's
default), fairseq's multilingual `__xx__`, Marian/OPUS-MT's `>>xx<<`, and NLLB/M2M-100's
`__xx__` on both sides (`TAGS_BOTH_SIDES`); `xx` is the language
code as the run names it (--target_lang, a corpus's target)."""

from typing import Dict, FrozenSet, Tuple

LANG_TAG_FORMATS: Dict[str, str] = {"target": "<2%s>", "t2t": "<2%s>", "fairseq": "__%s__",
                                    "marian": ">>%s<<", "nllb": "__%s__"}
# Formats with a tag on both sides, as NLLB and M2M-100 train: the source language's on the
# inputs and the target language's first in the targets (where generation is forced to it).
TAGS_BOTH_SIDES: FrozenSet[str] = frozenset({"nllb"})
LANG_TAG_CHOICES: Tuple[str, ...] = tuple(LANG_TAG_FORMATS) + ("none",)  # --lang_tags


def lang_tag(lang: str, tag_format: str = "t2t") -> str:
    """The tag that asks for output in `lang`, in `--lang_tags` format `tag_format`."""
    return LANG_TAG_FORMATS[tag_format] % lang
