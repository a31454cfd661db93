"""ByteBpeVocabulary: GPT-2 style byte-level BPE (`byte_bpe.ByteBPE`) as a `Vocabulary`.

A directory with Hugging Face's `vocab.json` and `merges.txt` (what is written), or OpenAI's
`encoder.json` and `vocab.bpe` (read too: the same two formats under GPT-2's names).
Examples end in the id of the EOS token, `<|endoftext|>` unless --bpe_eos_token says
otherwise (the `eos_token` option, given when the vocabulary is built: one lacking the token
is not a vocabulary this run can use); a corpus line holding that token's text is encoded as
plain text.
"""

from typing import Any, List, Mapping, Optional, Sequence

from transforms.codecs.byte_bpe import ENDOFTEXT, ByteBPE
from transforms.codecs.varints import encode_varints
from transforms.codecs.vocabulary import EncodedLine, VocabFiles, Vocabulary

BPE_FILES = ("vocab.json", "merges.txt")
GPT2_BPE_FILES = ("encoder.json", "vocab.bpe")  # OpenAI's names for the same two formats


class ByteBpeVocabulary(Vocabulary):
    """A byte-level BPE around its `ByteBPE` (`bpe`)."""

    file_sets = (BPE_FILES, GPT2_BPE_FILES)
    missing_reason = "no vocab.json + merges.txt (or GPT-2's encoder.json + vocab.bpe) there"

    def __init__(self, bpe: ByteBPE, eos_token: str = ENDOFTEXT):
        self.bpe = bpe
        eos = bpe.token_to_id(eos_token)
        if eos is None:
            raise ValueError("the BPE vocabulary has no %r token (see --bpe_eos_token)"
                             % eos_token)
        self._eos_ids = [eos]

    @classmethod
    def from_files(cls, files: Mapping[str, str], **options: Any) -> "ByteBpeVocabulary":
        """`options`: `eos_token` (default `<|endoftext|>`), the token ending examples."""
        names = BPE_FILES if BPE_FILES[0] in files else GPT2_BPE_FILES
        return cls(ByteBPE.from_texts(*(files[name] for name in names)), **options)

    def to_files(self) -> VocabFiles:
        return dict(zip(BPE_FILES, (self.bpe.vocab_json_text(), self.bpe.merges_text())))

    @property
    def vocab_size(self) -> int:
        return self.bpe.vocab_size

    def encode(self, text: str) -> List[int]:
        return self.bpe.encode_ordinary(text)  # "<|endoftext|>" in a corpus line is just text

    def encode_varints_many(self, texts: Sequence[str]) -> List[EncodedLine]:
        return [(encode_varints(ids), len(ids), 0)
                for ids in map(self.bpe.encode_ordinary, texts)]

    def decode(self, ids: Sequence[int]) -> str:
        return self.bpe.decode(ids)

    def eos_ids(self) -> List[int]:
        return list(self._eos_ids)

    def token_id(self, token: str) -> Optional[int]:
        return self.bpe.token_to_id(token)
