"""WordLearner: tensorflow/nmt word vocabularies learnt in one Beam pass (a `CountedLearner`):
the job's sample counted by words (`transforms.codecs.word.tokenize`), the most frequent kept
with `Top.PerKey`. `WordSettings` is the word kind's part of the config (its own flags)."""

import dataclasses
from typing import Callable, List, Optional, Tuple

import apache_beam as beam

from transforms.codecs.vocabulary import VocabFiles
from transforms.codecs.word_vocabulary import WordVocabulary
from transforms.contracts.config import VocabConfig
from transforms.contracts.settings import INPUT, setting
from transforms.vocab.learners import CountedLearner
from transforms.vocab.token_counts import count_triples


@dataclasses.dataclass(frozen=True)
class WordSettings:
    """The word kind's part of the config (`VocabConfig.kind_settings`): its own flags, each
    declared by its field."""
    word_vocab: Optional[str] = setting(
        "Existing word vocabulary: FILE for both sides, or SOURCE_FILE,TARGET_FILE. Missing or "
        "misplaced <unk>, <s>, </s> are moved to the front.", role=INPUT, vocab=True)


class WordLearner(CountedLearner):
    """tensorflow/nmt word vocabularies: the `vocab_size - 3` most frequent words
    (`Top.PerKey`, ties broken by the word) after `<unk>`, `<s>`, `</s>`."""

    @staticmethod
    def tokenizer() -> Callable[[str], List[str]]:
        from transforms.codecs.word import tokenize
        return tokenize

    @staticmethod
    def vocabs_from_counts(totals: beam.PCollection, vocab: VocabConfig,
                           reserved: Tuple[str, ...] = ()) -> beam.PCollection:
        from transforms.codecs.word import SPECIALS
        size = vocab.vocab_size
        fixed = frozenset(SPECIALS + tuple(reserved))
        return (totals
                | "Triples" >> beam.FlatMap(count_triples)
                | "KeyByVocab" >> beam.Map(lambda t: (t[0], (t[1], t[2])))
                | "DropSpecials" >> beam.Filter(lambda kv: kv[1][0] not in fixed)
                | "MostFrequent" >> beam.combiners.Top.PerKey(max(0, size - len(fixed)),
                                                              key=_word_rank)
                | "WordVocab" >> beam.Map(_word_vocab_files, vocab_size=size,
                                          reserved=tuple(reserved)))

    @staticmethod
    def empty_files(vocab: VocabConfig, reserved: Tuple[str, ...] = ()) -> VocabFiles:
        return _word_vocab_files((None, []), vocab.vocab_size, tuple(reserved))[1]


def _descending(word):
    """A key that sorts words in descending code-point order (so Top keeps the smallest)."""
    return tuple(-ord(c) for c in word) + (1,)


def _word_rank(item):
    word, count = item
    return count, _descending(word)


def _word_vocab_files(name_items, vocab_size, reserved=()):
    from transforms.codecs.word import WordVocab
    name, items = name_items
    return [name, WordVocabulary(WordVocab.from_counts(dict(items), vocab_size,
                                                       reserved)).to_files()]
