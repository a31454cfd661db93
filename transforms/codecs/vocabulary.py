"""Vocabulary: what every kind of vocabulary can do, in pure Python (no Beam, no file I/O).

Built like seqio's `Vocabulary` (and T2T's `TextEncoder`): one object per loaded vocabulary
that encodes, decodes, knows its size and the ids that end an example, and turns into and
from the *contents* of its files. Reading and writing those files is not its job: the Beam
and driver layers do it through `transforms.storage.file_io` (`transforms.storage.vocab_files`), so
a vocabulary here never touches a file system and anyone can load one from strings.

A vocabulary lies on disk as one file (`file_sets == ((SINGLE_FILE,),)`: the path itself)
or as a directory holding one of `file_sets` (names inside it; the first set is the one
written, its last file last, so a half-written directory never looks complete).

A kind whose vocabulary is built with settings of its own (byte_bpe's EOS token) takes them
as keyword options of `from_files`, so the EOS is known once the vocabulary is; a
`VocabularyLoader` carries a class and those options to wherever files are loaded (the
driver, the encode pass's workers, `inspect`). Adding a kind: `transforms.codecs.kinds`.
"""

import abc
import dataclasses
from typing import (Any, ClassVar, Collection, Dict, FrozenSet, List, Mapping, Optional,
                    Sequence, Tuple, Type)

from transforms.codecs.varints import encode_varints

SINGLE_FILE = ""  # the one name of a one-file vocabulary: the vocabulary's path itself

FileContent = Any
"""One file's contents: its text (`str`), or `bytes` for the names in a class's
`binary_files` (a SentencePiece model). `Any`, so a text kind's `from_files` may take
`Mapping[str, str]`."""

VocabFiles = Dict[str, FileContent]
"""A vocabulary's files as {name inside its directory (or SINGLE_FILE): contents}."""

EncodedLine = Tuple[bytes, int, int]
"""One encoded line: (its ids as concatenated varints, how many ids, out-of-vocabulary
words). A plain tuple, not a NamedTuple: the encode pass makes one per distinct line."""


EntryFrame = Sequence[Tuple[bytes, int]]
"""How an encoded line is framed as a record's part: nested length-delimited protobuf fields
around its varints, innermost first, each (bytes before its tag, tag); the innermost is left
out when its content is empty (`example_proto.PairExampleWriter.entry_frame`)."""

class Vocabulary(abc.ABC):
    """A loaded vocabulary of one kind. Subclasses fill in the abstract methods."""

    file_sets: ClassVar[Tuple[Tuple[str, ...], ...]] = ((SINGLE_FILE,),)
    # why a path holds no vocabulary of this kind (none of `file_sets` there)
    missing_reason: ClassVar[str] = "no such file"
    # files read and written as bytes, not UTF-8 text
    binary_files: ClassVar[FrozenSet[str]] = frozenset()

    @classmethod
    @abc.abstractmethod
    def from_files(cls, files: Mapping[str, FileContent], **options: Any) -> "Vocabulary":
        """The vocabulary of its files' contents (one of `file_sets`), built with the kind's
        `options` (none, for most kinds); ValueError when they are not a vocabulary of this
        kind, or lack what the options name."""

    @classmethod
    def for_encoding(cls, files: Mapping[str, FileContent], **options: Any) -> "Vocabulary":
        """The vocabulary the encode pass uses (`from_files`' unless a kind has one that
        encodes many lines faster: see `encode_varints_many`)."""
        return cls.from_files(files, **options)

    @abc.abstractmethod
    def to_files(self) -> VocabFiles:
        """The contents of its files, under the names of `file_sets[0]`."""

    @property
    def load_note(self) -> Optional[str]:
        """What loading changed in the files given (for the log), or None."""
        return None

    @property
    @abc.abstractmethod
    def vocab_size(self) -> int:
        """How many ids there are."""

    @abc.abstractmethod
    def encode(self, text: str) -> List[int]:
        """Ids of one stripped line, without EOS."""

    @abc.abstractmethod
    def decode(self, ids: Sequence[int]) -> str:
        """Text of `ids` (without EOS); ValueError on an id outside the vocabulary."""

    @abc.abstractmethod
    def eos_ids(self) -> List[int]:
        """The ids appended to every example (none for a kind whose reader adds its own)."""

    def pad_id(self) -> int:
        """The id the readers pad batches with (mode `t2t`; T2T's `weights_nonzero` masks
        0): T2T's reserved `<pad>` = 0, which no record holds. A kind whose records can hold
        0 declares another (README's "The kinds" and docs/vocabularies.md have the table)."""
        return 0

    def entry(self, index: int) -> Optional[str]:
        """The vocabulary's own string for id `index` (a subtoken, a word, a piece: what its
        file lists), or None for an id it has no string for. A trainer's own vocabulary
        listing (fairseq's dict.txt: `transforms.formats.fairseq_bin`) is made of these."""
        return None

    def token_id(self, token: str) -> Optional[int]:
        """The id of `token` when it is one entry of the vocabulary (a reserved token such as
        a language tag `<2de>`, which is never split and never comes out of `encode`), else
        None."""
        return None

    def text_gives(self, token: str) -> Optional[str]:
        """None, or why text holding `token` (an entry: a language tag) encodes to the entry's
        id whatever `reserving` does (a SentencePiece model's user-defined symbol): a given
        vocabulary with such a tag is refused."""
        return None

    def reserving(self, ids: Collection[int]) -> "Vocabulary":
        """This vocabulary, encoding so that text never gives `ids` (the language tags the
        run puts before inputs: a `<2de>` inside a sentence is text). Subword and byte_bpe
        keep their reserved tokens out of text by construction, a learnt SentencePiece model
        holds tags as control symbols (never matched in text): they are themselves. A kind
        whose entries text can match (word) returns a vocabulary that encodes such a token
        as the text would be without it."""
        return self

    def encode_with_oov(self, text: str) -> Tuple[List[int], int]:
        """(`encode`'s ids, number of out-of-vocabulary words: 0 unless a kind has them)."""
        return self.encode(text), 0

    def encode_varints_many(self, texts: Sequence[str]) -> List[EncodedLine]:
        """`EncodedLine` of each of `texts` (distinct stripped lines), in a list: the form
        the encode pass writes into Examples (`transforms.codecs.varints`)."""
        encode = self.encode_with_oov
        out = []
        for text in texts:
            ids, oov = encode(text)
            out.append((encode_varints(ids), len(ids), oov))
        return out


    def encode_entries_many(self, texts: Sequence[str], frame: EntryFrame, head: bytes,
                            eos: bytes) -> Tuple[List[Optional[bytes]], List[int]]:
        """For `texts` (distinct stripped lines): each one's `frame` around `head` + its
        ids' varints + `eos`, or None for a line left to `encode_varints_many` (every line,
        unless a kind encodes and frames lines in one compiled call: subword's
        `subword_kernel`), and how many ids each has (without head and EOS; 0 for a line
        left). A line it frames has no out-of-vocabulary words."""
        return [None] * len(texts), [0] * len(texts)


@dataclasses.dataclass(frozen=True)
class VocabularyLoader:
    """A Vocabulary class and the options its vocabularies are built with: what loading a
    vocabulary's files needs, as one picklable value (the class pickles by reference)."""
    vocabulary: Type[Vocabulary]
    options: Tuple[Tuple[str, Any], ...] = ()

    def from_files(self, files: Mapping[str, FileContent]) -> Vocabulary:
        return self.vocabulary.from_files(files, **dict(self.options))

    def for_encoding(self, files: Mapping[str, FileContent]) -> Vocabulary:
        return self.vocabulary.for_encoding(files, **dict(self.options))


def is_single_file(vocabulary: Type[Vocabulary]) -> bool:
    """Whether vocabularies of the class `vocabulary` are one file (else a directory)."""
    return vocabulary.file_sets[0] == (SINGLE_FILE,)
