"""The three kinds of vocabulary datagen builds, and how each is tokenized, loaded and ended.

- `subword`: Tensor2Tensor's SubwordTextEncoder (one file); examples end in EOS = 1.
- `byte_bpe`: GPT-2 style byte-level BPE (a directory with Hugging Face's `vocab.json` and
  `merges.txt`, or OpenAI's `encoder.json` and `vocab.bpe`); examples end in the id of the
  EOS token (`<|endoftext|>` unless `--bpe_eos_token` says otherwise).
- `word`: tensorflow/nmt word vocabulary (one word per line, `<unk>`, `<s>`, `</s>` first);
  examples carry the plain word ids, because tensorflow/nmt's input pipeline (and
  `pipeline.reader` in mode "nmt") adds `<s>`/`</s>` itself.

Vocab files are read through Beam's FileSystems, so every path may be remote.
"""

from apache_beam.io.filesystems import FileSystems

from transforms import file_io

KINDS = ("subword", "byte_bpe", "word")


def tokenizer_for(kind):
    """The function that splits sampled text into the units the vocabulary counts."""
    if kind == "subword":
        from transforms.codecs.tokenizer import encode
        return encode
    if kind == "word":
        from transforms.codecs.word_vocab import tokenize
        return tokenize
    if kind == "byte_bpe":
        from transforms.codecs.byte_bpe import pretokenize
        return pretokenize
    raise ValueError("unknown vocab type %r" % kind)


def _text(path):
    return file_io.read_bytes(path).decode("utf-8")


def load_vocab(kind, path):
    """The encoder for a vocabulary file (or, for byte_bpe, directory)."""
    if kind == "subword":
        from transforms.codecs.subword import SubwordEncoder
        return SubwordEncoder.from_text(_text(path))
    if kind == "word":
        from transforms.codecs.word_vocab import WordVocab
        return WordVocab.from_text(_text(path))
    if kind == "byte_bpe":
        from transforms.codecs.byte_bpe import ByteBPE
        hf = FileSystems.join(path, "vocab.json")
        if file_io.exists(hf):
            return ByteBPE.from_texts(_text(hf), _text(FileSystems.join(path, "merges.txt")))
        # OpenAI's encoder.json / vocab.bpe hold the same formats as vocab.json / merges.txt
        return ByteBPE.from_texts(_text(FileSystems.join(path, "encoder.json")),
                                  _text(FileSystems.join(path, "vocab.bpe")))
    raise ValueError("unknown vocab type %r" % kind)


def eos_ids(kind, encoder, bpe_eos_token="<|endoftext|>"):
    """The ids appended to every example: [1] for subword, [eos] for byte_bpe, [] for word."""
    if kind == "subword":
        return [1]
    if kind == "byte_bpe":
        eos = encoder.token_to_id(bpe_eos_token)
        if eos is None:
            raise ValueError("the BPE vocabulary has no %r token (see --bpe_eos_token)" % bpe_eos_token)
        return [eos]
    return []
