"""SubwordVocabulary: Tensor2Tensor's SubwordTextEncoder as a `Vocabulary`.

One file, T2T's `store_to_file` format (`subword.vocab_file_text`); examples end in T2T's
EOS_ID (1). Encoding is `subword.SubwordEncoder`'s; the encode pass's copy
(`for_encoding`) is `subword_kernel.KernelSubwordEncoder`, which encodes a block's new lines
into finished entries in one compiled call (numba: imported only where a run encodes).
"""

from typing import Any, List, Mapping, Optional, Sequence, Tuple

from transforms.codecs.subword import (EOS_ID, SubwordEncoder, escape_token_all_known,
                                       vocab_file_text)
from transforms.codecs.varints import count_varints
from transforms.codecs.vocabulary import (SINGLE_FILE, EncodedLine, EntryFrame, VocabFiles,
                                          Vocabulary)


class SubwordVocabulary(Vocabulary):
    """A T2T subword vocabulary around its `SubwordEncoder` (`encoder`)."""

    def __init__(self, encoder: SubwordEncoder):
        self.encoder = encoder

    @staticmethod
    def files_of(subtokens: Sequence[str]) -> VocabFiles:
        """The file of a learnt list of subtokens (what `to_files` gives once loaded)."""
        return {SINGLE_FILE: vocab_file_text(subtokens)}

    @classmethod
    def from_files(cls, files: Mapping[str, str], **options: Any) -> "SubwordVocabulary":
        return cls(SubwordEncoder.from_text(files[SINGLE_FILE]))

    @classmethod
    def for_encoding(cls, files: Mapping[str, str], **options: Any) -> "SubwordVocabulary":
        from transforms.codecs.subword_kernel import KernelSubwordEncoder
        return cls(KernelSubwordEncoder.from_text(files[SINGLE_FILE]))

    def to_files(self) -> VocabFiles:
        return {SINGLE_FILE: self.encoder.to_text()}

    @property
    def vocab_size(self) -> int:
        return self.encoder.vocab_size

    def encode(self, text: str) -> List[int]:
        return self.encoder.encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        return self.encoder.decode(ids)

    def eos_ids(self) -> List[int]:
        return [EOS_ID]

    def entry(self, index: int) -> Optional[str]:
        strings = self.encoder.subtoken_strings
        return strings[index] if 0 <= index < len(strings) else None

    def token_id(self, token: str) -> Optional[int]:
        # a reserved token is stored escaped, as T2T stores `<pad>` and `<EOS>`
        return self.encoder.subtoken_id(escape_token_all_known(token))

    def encode_varints_many(self, texts: Sequence[str]) -> List[EncodedLine]:
        # each token's varints cached by the encoder; a batch encoder segments the new ones
        # of all the texts at once
        return [(data, count_varints(data), 0)
                for data in self.encoder.encode_varints_many(texts)]

    def encode_entries_many(self, texts: Sequence[str], frame: EntryFrame, head: bytes,
                            eos: bytes) -> Tuple[List[Optional[bytes]], List[int]]:
        encode = getattr(self.encoder, "encode_entries_many", None)  # the kernel's, if loaded
        if encode is None:
            return super().encode_entries_many(texts, frame, head, eos)
        return encode(texts, frame, head, eos)
