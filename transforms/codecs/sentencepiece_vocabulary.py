"""SentencePieceVocabulary: a SentencePiece model (`sentencepiece_model.SpmModel`) as a
`Vocabulary`.

On disk, what the job writes is a directory (`vocab.{problem}.{size}.spm[.{lang}]`) holding
SentencePiece's two files under their usual names: `sentencepiece.vocab` (the human-readable
`piece<TAB>score` list, written first) and `sentencepiece.model` (the serialized model, the
only file read back; written last, so a directory with it is complete). A model given with
--spm_model may also be the `.model` file itself, as a team keeps it. The model is bytes, the
one binary file among the vocabularies (`binary_files`).

Ids are the model's own: `SentencePieceProcessor.encode(line)`, then the model's EOS id, which
ends every example (`sentencepiece_model` says which ids the specials get and why).
"""

from typing import Any, List, Mapping, Optional, Sequence

from transforms.codecs.sentencepiece_model import SpmModel
from transforms.codecs.varints import encode_varints
from transforms.codecs.vocabulary import SINGLE_FILE, EncodedLine, VocabFiles, Vocabulary

MODEL_FILE = "sentencepiece.model"
VOCAB_FILE = "sentencepiece.vocab"


class SentencePieceVocabulary(Vocabulary):
    """A SentencePiece model loaded once (one `SentencePieceProcessor`, `model.processor`)."""

    file_sets = ((VOCAB_FILE, MODEL_FILE), (SINGLE_FILE,))
    binary_files = frozenset((MODEL_FILE, SINGLE_FILE))
    missing_reason = ("no SentencePiece model there (a .model file, or a directory with "
                      "%s)" % MODEL_FILE)

    def __init__(self, model: SpmModel):
        self.model = model

    @staticmethod
    def files_of(model_bytes: bytes) -> VocabFiles:
        """The files of a serialized model (what `to_files` gives once loaded)."""
        return SentencePieceVocabulary.from_files({MODEL_FILE: model_bytes}).to_files()

    @classmethod
    def from_files(cls, files: Mapping[str, bytes], **options: Any
                   ) -> "SentencePieceVocabulary":
        data = files[MODEL_FILE] if MODEL_FILE in files else files[SINGLE_FILE]
        try:
            return cls(SpmModel(data))
        except RuntimeError as e:  # the processor's "ParseFromArray failed" and the like
            raise ValueError("not a SentencePiece model: %s" % e) from None

    def to_files(self) -> VocabFiles:
        return {VOCAB_FILE: self.model.vocab_text(), MODEL_FILE: self.model.model_bytes}

    @property
    def vocab_size(self) -> int:
        return self.model.vocab_size

    def encode(self, text: str) -> List[int]:
        return self.model.encode(text)

    def encode_varints_many(self, texts: Sequence[str]) -> List[EncodedLine]:
        # one call into the processor for the whole batch of lines
        return [(encode_varints(ids), len(ids), 0)
                for ids in self.model.encode_many(texts)]

    def decode(self, ids: Sequence[int]) -> str:
        ids = list(ids)
        if any(not 0 <= i < self.vocab_size for i in ids):
            raise ValueError("an id outside the SentencePiece model (0..%d)"
                             % (self.vocab_size - 1))
        return self.model.decode(ids)

    def eos_ids(self) -> List[int]:
        return [self.model.eos_id()]

    def pad_id(self) -> int:
        """The model's pad id (0 in `--spm_special_ids t5`), or with none (SentencePiece's
        own layout: unk=0, which records hold) the first id past the vocabulary."""
        pad = self.model.special_ids()["pad_id"]
        return pad if pad >= 0 else self.vocab_size

    def entry(self, index: int) -> Optional[str]:
        if not 0 <= index < self.vocab_size:
            return None
        return str(self.model.processor.id_to_piece(index))

    def token_id(self, token: str) -> Optional[int]:
        processor = self.model.processor
        piece = processor.piece_to_id(token)
        return piece if processor.id_to_piece(piece) == token else None

    def text_gives(self, token: str) -> Optional[str]:
        piece = self.token_id(token)
        if piece is None or self.model.processor.is_control(piece):
            return None
        return ("%s is a user-defined symbol, which SentencePiece matches in text (a %s inside "
                "a sentence would become the tag): a model for these pairs holds the tags as "
                "control_symbols" % (token, token))

    def special_ids(self):
        """{"unk_id", "bos_id", "eos_id", "pad_id"} of the model (-1: none)."""
        return self.model.special_ids()
