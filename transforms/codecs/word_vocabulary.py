"""WordVocabulary: tensorflow/nmt word vocabularies (`word.WordVocab`) as a
`Vocabulary`.

One word per line, `<unk>`, `<s>`, `</s>` first. Examples carry the plain word ids, no EOS:
tensorflow/nmt's input pipeline (and `pipeline.tools.reader` in mode "nmt") adds `<s>`/`</s>`
itself. Out-of-vocabulary words are counted for the summary.
"""

from typing import Any, Collection, List, Mapping, Optional, Sequence, Tuple

from transforms.codecs.varints import encode_varints
from transforms.codecs.vocabulary import SINGLE_FILE, EncodedLine, VocabFiles, Vocabulary
from transforms.codecs.word import EOS_ID, WordVocab


class WordVocabulary(Vocabulary):
    """A word vocabulary around its `WordVocab` (`words`)."""

    def __init__(self, words: WordVocab):
        self.words = words

    @classmethod
    def from_files(cls, files: Mapping[str, str], **options: Any) -> "WordVocabulary":
        return cls(WordVocab.from_text(files[SINGLE_FILE]))

    def to_files(self) -> VocabFiles:
        return {SINGLE_FILE: self.words.to_text()}

    @property
    def load_note(self) -> Optional[str]:
        return ("did not start with <unk>, <s>, </s>: moved them to the front"
                if self.words.fixed_specials else None)

    @property
    def vocab_size(self) -> int:
        return self.words.vocab_size

    def reserving(self, ids: Collection[int]) -> "WordVocabulary":
        words = self.words.words
        reserved = WordVocabulary(self.words.reserving(words[i] for i in ids))
        reserved.__dict__.update({k: v for k, v in self.__dict__.items() if k != "words"})
        return reserved

    def encode(self, text: str) -> List[int]:
        return self.words.encode(text)

    def encode_with_oov(self, text: str) -> Tuple[List[int], int]:
        return self.words.encode_with_oov(text)

    def encode_varints_many(self, texts: Sequence[str]) -> List[EncodedLine]:
        return [(encode_varints(ids), len(ids), oov)
                for ids, oov in map(self.words.encode_with_oov, texts)]

    def decode(self, ids: Sequence[int]) -> str:
        return self.words.decode(ids)

    def entry(self, index: int) -> Optional[str]:
        words = self.words.words
        return words[index] if 0 <= index < len(words) else None

    def token_id(self, token: str) -> Optional[int]:
        return self.words.id_of(token) if token in self.words else None

    def eos_ids(self) -> List[int]:
        return []  # tensorflow/nmt's reader adds </s> itself

    def pad_id(self) -> int:
        return EOS_ID  # tensorflow/nmt pads with </s> (and masks by length): <unk> is 0
