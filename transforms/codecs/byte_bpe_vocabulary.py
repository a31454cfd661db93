"""ByteBpeVocabulary: GPT-2 style byte-level BPE (`byte_bpe.ByteBPE`) as a `Vocabulary`.

A directory with Hugging Face's `vocab.json` and `merges.txt` (what is written), or OpenAI's
`encoder.json` and `vocab.bpe` (read too: the same two formats under GPT-2's names).
Examples end in the id of the EOS token, `<|endoftext|>` unless --bpe_eos_token says
otherwise (the `eos_token` option, given when the vocabulary is built: one lacking the token
is not a vocabulary this run can use); a corpus line holding that token's text is encoded as
plain text.

Written beside them: Hugging Face's `tokenizer.json` (`hf_tokenizer_json`), which
`tokenizers.Tokenizer.from_file` loads and whose `encode(line).ids` are the record's ids:
GPT-2's byte-level pre-tokenizer and decoder, the BPE model of these two files, and a
post-processor that appends the EOS token. The EOS token is not one of its `added_tokens`,
so its text inside a line stays text, as in the records (an added token would be cut out of
the text and become its id); `decode(..., skip_special_tokens=True)` therefore keeps it:
drop the last id first. It is derived from the two files and never read back.

Padding (`pad_id`): a learnt vocabulary reserves `<pad>` = 0 before its EOS token (1), as
T2T's reserved tokens are `<pad>` = 0 and `<EOS>` = 1, so the readers' padding and T2T's
`weights_nonzero` never hide an EOS (`transforms.vocab.byte_bpe_learning`). A vocabulary
without `<pad>` (GPT-2's own, where 0 is `!`) pads with the first id past it, which no record
holds. `tokenizer.json` names the same id in its `padding`. Like the EOS token, `<pad>` is no
added token: its text in a line stays text (the pre-tokenizer splits `<`, `pad`, `>`, so no
merge reaches it).
"""

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence

from transforms.codecs.byte_bpe import ENDOFTEXT, ByteBPE
from transforms.codecs.varints import encode_varints
from transforms.codecs.vocabulary import EncodedLine, VocabFiles, Vocabulary

BPE_FILES = ("vocab.json", "merges.txt")
HF_TOKENIZER_FILE = "tokenizer.json"  # written with them, derived from them
GPT2_BPE_FILES = ("encoder.json", "vocab.bpe")  # OpenAI's names for the same two formats
PAD_TOKEN = "<pad>"  # a learnt vocabulary's id 0 (T2T's reserved `<pad>`)


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
        self._eos_token = eos_token

    @classmethod
    def from_files(cls, files: Mapping[str, str], **options: Any) -> "ByteBpeVocabulary":
        """`options`: `eos_token` (default `<|endoftext|>`), the token ending examples."""
        names = BPE_FILES if BPE_FILES[0] in files else GPT2_BPE_FILES
        return cls(ByteBPE.from_texts(*(files[name] for name in names)), **options)

    def to_files(self) -> VocabFiles:
        files = dict(zip(BPE_FILES, (self.bpe.vocab_json_text(), self.bpe.merges_text())))
        files[HF_TOKENIZER_FILE] = hf_tokenizer_json(self.bpe, self._eos_token, self.pad_id())
        return files

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

    def pad_id(self) -> int:
        pad = self.bpe.token_to_id(PAD_TOKEN)
        return self.bpe.vocab_size if pad is None else pad

    def entry(self, index: int) -> Optional[str]:
        return self.bpe.id_to_token(index)

    def token_id(self, token: str) -> Optional[int]:
        return self.bpe.token_to_id(token)


def hf_tokenizer_json(bpe: ByteBPE, eos_token: str, pad_id: int) -> str:
    """Hugging Face `tokenizers`' `tokenizer.json` of `bpe` giving the job's record ids:
    `encode(line)` is `bpe.encode_ordinary(line)` + the id of `eos_token` (see the module
    docstring); `encode_batch` pads with `pad_id` (the readers' padding). Merges are written
    as "left right" strings, the form every `tokenizers` release reads (byte-level tokens
    hold no space)."""
    eos = {"id": eos_token, "type_id": 0}
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": True}
    tokenizer: Dict[str, Any] = {
        "version": "1.0", "truncation": None,
        "padding": {"strategy": "BatchLongest", "direction": "Right", "pad_to_multiple_of": None,
                    "pad_id": pad_id, "pad_type_id": 0, "pad_token": PAD_TOKEN},
        "added_tokens": [],
        "normalizer": None, "pre_tokenizer": byte_level,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": eos}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": eos},
                     {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": dict(eos, type_id=1)}],
            "special_tokens": {eos_token: {"id": eos_token,
                                           "ids": [bpe.token_to_id(eos_token)],
                                           "tokens": [eos_token]}}},
        "decoder": dict(byte_level, add_prefix_space=True),
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False,
                  "vocab": json.loads(bpe.vocab_json_text()),
                  "merges": ["%s %s" % pair for pair in bpe.merges]}}
    return json.dumps(tokenizer, ensure_ascii=False, separators=(",", ":"))
