"""ByteBpeLearner: GPT-2 style byte-level BPE learnt in one Beam pass (a `CountedLearner`):
the job's sample counted by pre-tokens, the merges learnt on one worker per vocabulary.
`ByteBpeSettings` is the byte_bpe kind's part of the config (its own flags)."""

import dataclasses
from typing import Callable, List, Optional, Tuple

import apache_beam as beam

from transforms.codecs.byte_bpe_vocabulary import PAD_TOKEN, ByteBpeVocabulary
from transforms.codecs.vocabulary import VocabFiles
from transforms.codecs.byte_bpe import ENDOFTEXT
from transforms.contracts.config import VocabConfig
from transforms.contracts.flag_ranges import bounded
from transforms.contracts.settings import INPUT, setting
from transforms.vocab.learners import CountedLearner


@dataclasses.dataclass(frozen=True)
class ByteBpeSettings:
    """The byte_bpe kind's part of the config (`VocabConfig.kind_settings`): its own flags,
    each declared by its field."""
    bpe_vocab: Optional[str] = setting(
        "Existing byte-level BPE for both sides (e.g. GPT-2's): a directory with vocab.json + "
        "merges.txt, or encoder.json + vocab.bpe. Nothing is learnt.", role=INPUT, vocab=True)
    bpe_eos_token: str = setting("Token whose id ends every byte_bpe example.", ENDOFTEXT,
                                 vocab=True)
    bpe_min_frequency: int = setting(
        "BPE learning stops before merging a pair seen fewer times than this.", 2,
        type=bounded(int, 1), vocab=True)


class ByteBpeLearner(CountedLearner):
    """GPT-2 style byte-level BPE: merges learnt from each vocabulary's pre-token counts on
    one worker (`transforms.codecs.byte_bpe_learner.learn_byte_bpe`)."""

    @staticmethod
    def tokenizer() -> Callable[[str], List[str]]:
        from transforms.codecs.byte_bpe import pretokenize
        return pretokenize

    @staticmethod
    def vocabs_from_counts(totals: beam.PCollection, vocab: VocabConfig,
                           reserved: Tuple[str, ...] = ()) -> beam.PCollection:
        bpe: ByteBpeSettings = vocab.kind_settings
        return totals | "LearnMerges" >> beam.Map(
            _learn_bpe, vocab_size=vocab.vocab_size, min_frequency=bpe.bpe_min_frequency,
            eos_token=bpe.bpe_eos_token, reserved=tuple(reserved))

    @staticmethod
    def empty_files(vocab: VocabConfig, reserved: Tuple[str, ...] = ()) -> VocabFiles:
        bpe: ByteBpeSettings = vocab.kind_settings
        return _learn_bpe((None, []), vocab.vocab_size, bpe.bpe_min_frequency,
                          bpe.bpe_eos_token, tuple(reserved))[1]


def _learn_bpe(name_items, vocab_size, min_frequency, eos_token, reserved=()):
    """A learnt BPE whose special tokens are `<pad>` (id 0: the readers pad with it and T2T's
    `weights_nonzero` masks it, so it must be no id a record holds, as T2T reserves it),
    `eos_token` (--bpe_eos_token, id 1), so the id that ends every example is in the
    vocabulary whatever token was chosen, then `reserved`. The files are what `tokenizers`'
    trainer writes given these special tokens in this order."""
    from transforms.codecs.byte_bpe_learner import learn_byte_bpe
    name, items = name_items
    specials = (PAD_TOKEN, eos_token) + tuple(reserved)
    bpe = learn_byte_bpe(dict(items), vocab_size, special_tokens=specials,
                         min_frequency=min_frequency)
    return [name, ByteBpeVocabulary(bpe, eos_token).to_files()]
