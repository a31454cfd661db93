"""The vocabulary kinds as the codecs know them: one `CodecKind` per --vocab_type value.

A kind is declared in two layers. This one is pure (no Beam, no TensorFlow, no driver): what a
kind's files and records are, which is all that readers (`pipeline.tools`), the output's own
names (`pipeline.output.own_outputs`) and the summary need. The other layer, a driver plugin
per kind (`pipeline.driver.kinds`), adds how it is learnt and configured. Nothing else names a
kind (`tests/test_architecture.py` checks it): lists of kinds, suffixes and modes are derived
from `CODEC_KINDS`.

- `subword`: Tensor2Tensor's SubwordTextEncoder (one file); examples end in EOS = 1.
- `byte_bpe`: GPT-2 style byte-level BPE (a directory with Hugging Face's `vocab.json` and
  `merges.txt`, or OpenAI's `encoder.json` and `vocab.bpe`); examples end in the id of the
  EOS token (`<|endoftext|>` unless `--bpe_eos_token` says otherwise); learnt: `<pad>` 0,
  EOS 1.
- `word`: tensorflow/nmt word vocabulary (one word per line, `<unk>`, `<s>`, `</s>` first);
  examples carry the plain word ids, because tensorflow/nmt's input pipeline (and
  `pipeline.tools.reader` in mode "nmt") adds `<s>`/`</s>` itself.
- `sentencepiece`: a SentencePiece model (unigram or bpe), a directory with
  `sentencepiece.model` and `.vocab`; examples end in the model's EOS id.
"""

import dataclasses
from typing import Any, Mapping, Tuple, Type

from transforms.codecs.byte_bpe_vocabulary import ByteBpeVocabulary
from transforms.codecs.sentencepiece_vocabulary import SentencePieceVocabulary
from transforms.codecs.subword_vocabulary import SubwordVocabulary
from transforms.codecs.vocabulary import Vocabulary, VocabularyLoader
from transforms.codecs.word_vocabulary import WordVocabulary


@dataclasses.dataclass(frozen=True)
class CodecKind:
    """One kind of vocabulary: its class and the facts about its files and records."""
    name: str                          # the --vocab_type value
    description: str                   # what --vocab_type NAME means, for --help
    vocabulary: Type[Vocabulary]
    file_suffix: str                   # vocab.{problem}.{size}.{file_suffix}[.{lang}]
    ends_in_eos: bool                  # records end in `eos_ids()` (else the reader adds them)
    counts_oov: bool = False           # the summary reports an out-of-vocabulary rate
    # (flag, option): flags whose values are options its vocabularies are built with
    # (`Vocabulary.from_files`), e.g. the EOS token
    option_flags: Tuple[Tuple[str, str], ...] = ()
    # how a LEARNT vocabulary's ids are laid out, once that changed after outputs existed:
    # recorded in the fingerprints (`pipeline.driver.fingerprint`), so a vocabulary (or an
    # output) learnt with the layout before is never reused as if it were this one
    learnt_layout: str = ""
    # the modules its passes run in the workers, which their fork server imports before it
    # forks (`pipeline.runtime.worker_preload`): its learner's, and for subword the module
    # that loads numba's compiled loops; a job of another kind imports none of these
    worker_modules: Tuple[str, ...] = ()

    def loader(self, flag_values: Mapping[str, Any]) -> VocabularyLoader:
        """How this kind's vocabularies are loaded under the run's flags ({flag: value}, as
        parsed, or as a summary records them)."""
        return VocabularyLoader(self.vocabulary, tuple(
            (option, flag_values[flag]) for flag, option in self.option_flags
            if flag in flag_values))


CODEC_KINDS = (
    CodecKind("subword", "T2T SubwordTextEncoder", SubwordVocabulary, "subwords", ends_in_eos=True,
              worker_modules=("transforms.vocab.subword_refine", "transforms.vocab.subword_learning",
                              "pipeline.runtime.worker_warmup")),
    CodecKind("byte_bpe", "GPT-2 style byte-level BPE", ByteBpeVocabulary, "bpe", ends_in_eos=True,
              option_flags=(("bpe_eos_token", "eos_token"),),
              learnt_layout="<pad> 0, EOS 1",  # before 2026-12-02: EOS 0, no <pad>
              worker_modules=("transforms.vocab.byte_bpe_learning",)),
    CodecKind("word", "tensorflow/nmt word vocabulary", WordVocabulary, "words", ends_in_eos=False, counts_oov=True,
              worker_modules=("transforms.vocab.word_learning",)),
    CodecKind("sentencepiece",
              "a SentencePiece model (SentencePiece's own trainer)", SentencePieceVocabulary, "spm", ends_in_eos=True,
              worker_modules=("transforms.vocab.sentencepiece_learning",)),
)
KIND_NAMES = tuple(kind.name for kind in CODEC_KINDS)  # --vocab_type's choices
DEFAULT_KIND = CODEC_KINDS[0].name
KINDS_HELP = "; ".join("%s: %s" % (kind.name, kind.description) for kind in CODEC_KINDS) + "."


def codec_kind(name: str) -> CodecKind:
    """The CodecKind of a --vocab_type value; ValueError for another name."""
    for kind in CODEC_KINDS:
        if kind.name == name:
            return kind
    raise ValueError("unknown vocab type %r (one of %s)" % (name, ", ".join(KIND_NAMES)))
