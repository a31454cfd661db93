"""Word vocabularies in tensorflow/nmt's format: pure Python, no Apache Beam, no TensorFlow.

A vocabulary file is one word per line, UTF-8, every line "\\n"-terminated; the word on line i
(0-based) has id i. The first three words are the specials::

    <unk>   id 0  (UNK_ID: every out-of-vocabulary word)
    <s>     id 1  (SOS_ID: tensorflow/nmt's start of sentence, prepended to target_input)
    </s>    id 2  (EOS_ID: tensorflow/nmt's end of sentence, appended to target_output and
                   used as the padding value of batches)

This is the layout tensorflow/nmt's `vocab_utils.check_vocab` expects and the one
`nmt/testdata/iwslt15.vocab.100.*` uses; its `UNK_ID` is 0 and `index_table_from_file(vocab,
default_value=UNK_ID)` maps words to ids, so our ids are the ids tensorflow/nmt computes from
the same file.

Tokenization (`tokenize`) is tensorflow/nmt's: `tf.string_split([line])` with its default
delimiter " " splits on the SPACE character (U+0020) only and drops empty pieces. Tabs,
newlines, carriage returns, no-break spaces (U+00A0), ideographic spaces (U+3000), ... do NOT
split: they stay inside a word (checked with TensorFlow 2.21: `tf.compat.v1.string_split(["a
b\\tc\\nd  e\\r f"])` gives `a`, `b\\tc\\nd`, `e\\r`, `f`). Note that TF2's
`tf.strings.split(line)` with no `sep` is different (it splits on any whitespace run) and
`tf.strings.split(line, sep=" ")` keeps empty pieces; neither is what tensorflow/nmt does.

Reading a vocabulary (`from_text`/`from_file`): lines are split at "\\n"; trailing "\\r"s are
removed from every line, as TensorFlow's `TextFileInitializer` (behind nmt's
`index_table_from_file`) does for CRLF files; a missing final "\\n" is tolerated; a leading
UTF-8 byte-order mark is dropped (TensorFlow would keep it as part of the first word, where it
could never match). Words are otherwise taken verbatim (no other stripping).

Specials in an existing file. tensorflow/nmt's `check_vocab` looks at the first three words
only: if they are not exactly `<unk>, <s>, </s>` it PREPENDS `<unk>, <s>, </s>` to the whole
list and writes that as the new vocabulary. For a file that already contains the specials in
another order -- the IWSLT'15 `vocab.en`/`vocab.vi` in circulation start `</s>, <unk>, <s>` --
that produces a file with every special twice, and a TensorFlow lookup table built from such a
file does not silently map a word to two ids: it FAILS TO INITIALIZE (TensorFlow 2.21,
`tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(...))`: `FailedPreconditionError:
HashTable has different value for same key. Key </s> has 2 and trying to add value 3`). So we
deliberately deviate: the specials are MOVED to the front in canonical order, every other
occurrence of a special is removed, and the remaining words keep their file order (ids shift
only for words that were before or between the misplaced specials). `fixed_specials` records
that the list was changed, so callers can log it; `to_text()` then gives the corrected file,
which tensorflow/nmt's `check_vocab` accepts unchanged. A file whose first three words are
already the specials and which has none elsewhere is used as is. Any other duplicate word
(including two empty lines) is an error (`ValueError` naming both lines), because TensorFlow's
table would fail on it as well.

Building a vocabulary (`from_counts`): the specials first, then the `vocab_size - 3` most
frequent words, ties broken by the word in ascending code-point order (Python's `str` order),
so the result does not depend on the order of the counts. Specials in the counts are ignored
(never duplicated). `vocab_size` counts the specials; fewer distinct words give a smaller
vocabulary.
"""

from collections.abc import Iterable, Mapping, Sequence

UNK, SOS, EOS = "<unk>", "<s>", "</s>"
UNK_ID, SOS_ID, EOS_ID = 0, 1, 2
SPECIALS = (UNK, SOS, EOS)


def tokenize(text: str) -> list[str]:
    """Split `text` as tensorflow/nmt does (`tf.string_split`, delimiter " "): on the space
    character only, empty pieces dropped. Other whitespace stays inside words."""
    return [piece for piece in text.split(" ") if piece]


def _check_word(word: object, where: str) -> None:
    if not isinstance(word, str):
        raise TypeError("%s: a word must be str, got %r" % (where, type(word).__name__))
    if "\n" in word or word.endswith("\r"):
        raise ValueError("%s: word %r contains a newline or ends in a carriage return and "
                         "cannot be stored in a vocabulary file" % (where, word))


class WordVocab:
    """An immutable word vocabulary: `words[i]` has id i, `words[:3] == [<unk>, <s>, </s>]`."""

    def __init__(self, words: Iterable[str]) -> None:
        words = list(words)
        if tuple(words[:3]) != SPECIALS:
            raise ValueError("the first three words must be %s, got %r" % (list(SPECIALS),
                                                                         words[:3]))
        ids: dict[str, int] = {}
        for i, word in enumerate(words):
            _check_word(word, "word %d" % i)
            if word in ids:
                raise ValueError("duplicate word %r at ids %d and %d" % (word, ids[word], i))
            ids[word] = i
        self._words = tuple(words)
        self._ids = ids
        self._text_ids = ids  # what a text token may be: `reserving` takes words out
        self.fixed_specials = False

    def reserving(self, words: Iterable[str]) -> "WordVocab":
        """This vocabulary, but a text token equal to one of `words` (the language tags
        before inputs) is encoded as the text would be without that entry: unknown (UNK_ID,
        counted OOV). The entries keep their ids (`id_of`, `decode`)."""
        reserved = set(words)
        vocab = WordVocab.__new__(WordVocab)
        vocab.__dict__.update(self.__dict__)
        vocab._text_ids = {w: i for w, i in self._ids.items() if w not in reserved}
        return vocab

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_text(cls, text: str) -> "WordVocab":
        """A vocabulary from the contents of a vocabulary file (one word per line).

        Applies the specials fix described in the module docstring and sets `fixed_specials`.
        """
        if text.startswith("\ufeff"):
            text = text[1:]
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the terminating "\n" of the last line
        words = [line.rstrip("\r") for line in lines]
        seen: dict[str, int] = {}
        for lineno, word in enumerate(words, 1):
            if word in SPECIALS:
                continue
            if word in seen:
                raise ValueError("duplicate word %r on lines %d and %d of the vocabulary"
                                 % (word, seen[word], lineno))
            seen[word] = lineno
        fixed = list(SPECIALS) + [w for w in words if w not in SPECIALS]
        vocab = cls(fixed)
        vocab.fixed_specials = fixed != words
        return vocab

    @classmethod
    def from_file(cls, path: str) -> "WordVocab":
        """`from_text` of a local UTF-8 file (use `from_text` for other file systems)."""
        with open(path, "rb") as f:
            data = f.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError("%s: not UTF-8 (byte %d)" % (path, e.start)) from None
        try:
            return cls.from_text(text)
        except ValueError as e:
            raise ValueError("%s: %s" % (path, e)) from None

    @classmethod
    def from_counts(cls, counts: Mapping[str, int], vocab_size: int,
                    reserved: Sequence[str] = ()) -> "WordVocab":
        """Specials, then `reserved` words (language tags), then the most frequent words of
        `counts` ({word: count}) up to `vocab_size`, ties broken by ascending word
        (code-point order). Specials and reserved words in `counts` are ignored."""
        fixed = list(SPECIALS) + [w for w in dict.fromkeys(reserved) if w not in SPECIALS]
        if vocab_size < len(fixed):
            raise ValueError("vocab_size must be at least %d (the specials and reserved "
                             "words), got %d" % (len(fixed), vocab_size))
        ranked = []
        for word, count in counts.items():
            if word in fixed:
                continue
            _check_word(word, "counts")
            if word == "":
                raise ValueError("counts: the empty string is not a word")
            ranked.append((-count, word))
        ranked.sort()
        words = fixed + [word for _, word in ranked[:vocab_size - len(fixed)]]
        return cls(words)

    # -- properties -----------------------------------------------------------------------------

    @property
    def words(self) -> tuple[str, ...]:
        """All words in id order (a tuple)."""
        return self._words

    @property
    def vocab_size(self) -> int:
        return len(self._words)

    def __len__(self) -> int:
        return len(self._words)

    def __contains__(self, word: object) -> bool:
        return word in self._ids

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WordVocab) and self._words == other._words

    def __hash__(self) -> int:
        return hash(self._words)

    def __repr__(self) -> str:
        return "WordVocab(vocab_size=%d)" % len(self._words)

    # -- coding ---------------------------------------------------------------------------------

    def id_of(self, word: str) -> int:
        """The id of one word; UNK_ID if it is not in the vocabulary."""
        return self._ids.get(word, UNK_ID)

    def encode(self, text: str) -> list[int]:
        """Ids of `tokenize(text)`; out-of-vocabulary words get UNK_ID. No SOS/EOS added."""
        ids = self._text_ids
        return [ids.get(word, UNK_ID) for word in tokenize(text)]

    def encode_with_oov(self, text: str) -> tuple[list[int], int]:
        """(ids, number of out-of-vocabulary words). A literal "<unk>" in the text is a known
        word (id UNK_ID) and is not counted as out-of-vocabulary."""
        ids = self._text_ids
        out = []
        n_oov = 0
        for word in tokenize(text):
            i = ids.get(word)
            if i is None:
                i = UNK_ID
                n_oov += 1
            out.append(i)
        return out, n_oov

    def decode(self, ids: Iterable[int]) -> str:
        """The words of `ids` joined by single spaces (specials included, as words)."""
        words = self._words
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(words):
                raise ValueError("id %d is outside the vocabulary (size %d)" % (i, len(words)))
            out.append(words[i])
        return " ".join(out)

    def to_text(self) -> str:
        """The vocabulary file: one word per line, each line "\\n"-terminated."""
        return "".join(word + "\n" for word in self._words)
