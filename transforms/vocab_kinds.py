"""The registry of vocabulary kinds: one `VocabKind` entry per --vocab_type value.

An entry only names the parts of a kind and the few facts the flags and the summary need:

- `vocabulary`: its `transforms.codecs.vocabulary.Vocabulary` class (pure Python: files'
  contents, encoding, decoding, EOS ids, size), read and written by `transforms.vocab_files`;
- `learner`: its `transforms.vocab_learning.VocabLearner` class (the passes learning takes,
  as data; the driver runs them);
- file suffix, the flag naming a given vocabulary, the flags only it takes, whether the
  summary reports an out-of-vocabulary rate.

So the four kinds:

- `subword`: Tensor2Tensor's SubwordTextEncoder (one file); examples end in EOS = 1.
- `byte_bpe`: GPT-2 style byte-level BPE (a directory with Hugging Face's `vocab.json` and
  `merges.txt`, or OpenAI's `encoder.json` and `vocab.bpe`); examples end in the id of the
  EOS token (`<|endoftext|>` unless `--bpe_eos_token` says otherwise).
- `word`: tensorflow/nmt word vocabulary (one word per line, `<unk>`, `<s>`, `</s>` first);
  examples carry the plain word ids, because tensorflow/nmt's input pipeline (and
  `pipeline.tools.reader` in mode "nmt") adds `<s>`/`</s>` itself.
- `sentencepiece`: a SentencePiece model (unigram or bpe) learnt by SentencePiece's own
  trainer, or given (--spm_model); a directory with `sentencepiece.model` and `.vocab`;
  examples end in the model's EOS id.

Adding a kind (no module compares kind names; `--vocab_type`'s choices follow `_KINDS`):

1. a `Vocabulary` subclass in `transforms/codecs/<kind>_vocabulary.py`: `from_files` /
   `to_files` (contents by file name; `file_sets` if it is a directory, `missing_reason`,
   `binary_files` for contents kept as bytes),
   `vocab_size`, `encode`, `decode`, `eos_ids`; optionally `for_encoding`,
   `encode_with_oov`, `encode_varints_many` (the encode pass's batch), `load_note`;
2. a learner: a `CountedLearner` subclass (`tokenizer`, `vocabs_from_counts`: Beam stages
   from (name, {token: count}) to [name, VocabFiles], `empty_files`) when the vocabulary is
   built from sampled counts, else a `VocabLearner` subclass stating its own passes
   (`next_pass` -> `VocabPass`, `learnt`, `dry_run_passes`, `passes_needed`);
3. an entry in `_KINDS` below. Flags only it takes: defined in `pipeline.driver.options`,
   fields of `VocabConfig`, named in `own_flags` (and in `pipeline.driver.fingerprint`'s
   VOCAB_FLAGS when they change the vocabulary); a flag naming an existing vocabulary:
   `given_flag` and `given_files`. Entries are module-level constants: the encode pass's DoFn
carries the Vocabulary class only, which pickles by reference.
"""

import dataclasses
from typing import Callable, List, Optional, Tuple, Type

from transforms.codecs.byte_bpe import ENDOFTEXT
from transforms.codecs.byte_bpe_vocabulary import ByteBpeVocabulary
from transforms.codecs.sentencepiece_vocabulary import SentencePieceVocabulary
from transforms.codecs.subword_vocabulary import SubwordVocabulary
from transforms.codecs.vocabulary import Vocabulary
from transforms.codecs.word_vocabulary import WordVocabulary
from transforms.config import VocabConfig
from transforms.storage import file_io
from transforms.sentencepiece_learning import SentencePieceLearner
from transforms.subword_learning import SubwordLearner
from transforms.vocab_learning import ByteBpeLearner, VocabLearner, WordLearner

__all__ = ["ENDOFTEXT", "VocabKind", "KIND_NAMES", "DEFAULT_KIND", "every_kind", "vocab_kind"]


def _no_problem(vocab: VocabConfig) -> Optional[str]:
    return None


def _no_given_files(vocab: VocabConfig) -> List[str]:
    return []


@dataclasses.dataclass(frozen=True)
class VocabKind:
    """One kind of vocabulary: its parts and the facts the flags and summary need."""
    name: str                              # the --vocab_type value
    vocabulary: Type[Vocabulary]
    learner: Type[VocabLearner]
    file_suffix: str                       # vocab.{problem}.{size}.{file_suffix}[.{lang}]
    given_flag: Optional[str] = None       # the flag naming an existing vocabulary, if any
    # paths of the existing vocabularies the config names (one shared, or source and
    # target); empty when the vocabulary is learnt
    given_files: Callable[[VocabConfig], List[str]] = _no_given_files
    own_flags: Tuple[str, ...] = ()        # flags that mean something for this kind only
    counts_oov: bool = False               # whether the summary reports an OOV rate
    # what makes the settings impossible for this kind (a message), or None
    flag_problem: Callable[[VocabConfig], Optional[str]] = _no_problem


def _bpe_given(vocab: VocabConfig) -> List[str]:
    return [file_io.absolute(vocab.bpe_vocab)] if vocab.bpe_vocab else []


def _bpe_problem(vocab: VocabConfig) -> Optional[str]:
    if vocab.vocab_size < 257 and not vocab.bpe_vocab:
        return ("--vocab_size for byte_bpe counts the 256 byte symbols and "
                "%s: at least 257" % ENDOFTEXT)
    return None


def _word_given(vocab: VocabConfig) -> List[str]:
    return [file_io.absolute(w) for w in (vocab.word_vocab or "").split(",") if w]


def _word_problem(vocab: VocabConfig) -> Optional[str]:
    if vocab.vocab_size < 3 and not vocab.word_vocab:
        return "--vocab_size for a word vocabulary counts <unk>, <s>, </s>: at least 3"
    return None


def _spm_given(vocab: VocabConfig) -> List[str]:
    return [file_io.absolute(m) for m in (vocab.spm_model or "").split(",") if m]


def _spm_problem(vocab: VocabConfig) -> Optional[str]:
    from transforms.codecs import sentencepiece_model
    if vocab.spm_model is not None and not 1 <= len(_spm_given(vocab)) <= 2:
        return "--spm_model takes FILE or SOURCE_FILE,TARGET_FILE, not %r" % vocab.spm_model
    if not 0 < vocab.spm_character_coverage <= 1:
        return ("--spm_character_coverage must be in (0, 1], not %s"
                % vocab.spm_character_coverage)
    try:
        sentencepiece_model.parse_option_list(vocab.spm_trainer_options)
    except ValueError as e:
        return "--spm_trainer_options: %s" % e
    return None


_KINDS = (
    VocabKind("subword", SubwordVocabulary, SubwordLearner, "subwords"),
    VocabKind("byte_bpe", ByteBpeVocabulary, ByteBpeLearner, "bpe", given_flag="--bpe_vocab",
              given_files=_bpe_given,
              own_flags=("bpe_vocab", "bpe_eos_token", "bpe_min_frequency"),
              flag_problem=_bpe_problem),
    VocabKind("word", WordVocabulary, WordLearner, "words", given_flag="--word_vocab",
              given_files=_word_given, own_flags=("word_vocab",), counts_oov=True,
              flag_problem=_word_problem),
    VocabKind("sentencepiece", SentencePieceVocabulary, SentencePieceLearner, "spm",
              given_flag="--spm_model", given_files=_spm_given,
              own_flags=("spm_model", "spm_model_type", "spm_character_coverage",
                         "spm_special_ids", "spm_trainer_options"),
              flag_problem=_spm_problem),
)
KIND_NAMES = tuple(kind.name for kind in _KINDS)  # --vocab_type's choices
DEFAULT_KIND = "subword"


def every_kind() -> Tuple[VocabKind, ...]:
    return _KINDS


def vocab_kind(name: str) -> VocabKind:
    """The VocabKind of a --vocab_type value."""
    for kind in _KINDS:
        if kind.name == name:
            return kind
    raise ValueError("unknown vocab type %r" % name)
