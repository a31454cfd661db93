"""The GPT-2 files and the evaluation corpora of the byte-level BPE tests
(tests/transforms/codecs/test_byte_bpe.py, test_byte_bpe_learner.py): GPT-2's encoder.json and
vocab.bpe in tests/data/gpt2 (local files, nothing is downloaded), lines read as they are, and
Hugging Face `tokenizers`' byte-level BPE built from a vocab and merges file."""

import glob
import os

from repo_paths import DATA_DIR as DATA
from transforms.codecs.byte_bpe import ENDOFTEXT

GPT2_DIR = os.path.join(DATA, "gpt2")
ENCODER_JSON = os.path.join(GPT2_DIR, "encoder.json")
VOCAB_BPE = os.path.join(GPT2_DIR, "vocab.bpe")

EVAL_FILES = [
    os.path.join(DATA, "enzh-mlqe-pe", "dev.en"),
    os.path.join(DATA, "enzh-mlqe-pe", "dev.zh"),
    os.path.join(DATA, "ende-opennmt", "dev.de"),
] + sorted(glob.glob(os.path.join(DATA, "envi-nmt-testdata", "*.vi")))
TRAIN_FILES = [
    os.path.join(DATA, "enzh-mlqe-pe", "train.en"),
    os.path.join(DATA, "enzh-mlqe-pe", "train.zh"),
]


def lines(path):
    with open(path, encoding="utf-8", newline="") as f:
        return f.read().splitlines(keepends=True)


def hf_byte_level(vocab_path, merges_path, special=(ENDOFTEXT,)):
    from tokenizers import ByteLevelBPETokenizer  # the tests that call this skip without it
    tok = ByteLevelBPETokenizer(vocab_path, merges_path)
    if special:
        tok.add_special_tokens(list(special))
    return tok
