"""fairseq's binarized data, as `fairseq-preprocess --dataset-impl mmap` writes it, and the
job's `.fairseq` shard files it is assembled from.

fairseq's side (fairseq 0.12.2, `fairseq/data/indexed_dataset.py` and `dictionary.py`):

- `{prefix}.bin`: every sentence's token ids, concatenated, in one dtype: `uint16` when the
  dictionary has fewer than 65,500 entries, else `uint32` (`best_fitting_int_dtype`).
- `{prefix}.idx` (`MMapIndexedDataset.Index`): the magic `MMIDIDX\\x00\\x00`, version 1 as
  `<Q`, the dtype's code as `<B` (8 uint16, 9 uint32), the count as `<Q`, then the sizes
  (int32, in tokens) and the pointers (int64, byte offsets into `.bin`).
- `dict.{lang}.txt`: one `token count` line per entry; `Dictionary.load` puts `<s>`=0,
  `<pad>`=1, `</s>`=2, `<unk>`=3 first, so line k is id 4 + k. After the real entries,
  `madeupword0000 0`, `madeupword0001 0`... until the 4 specials plus the lines are a
  multiple of 8 (`Dictionary.pad_to_multiple_`, padding_factor 8, as fairseq-preprocess's
  `finalize` writes it; a name the vocabulary already holds is skipped, as `add_symbol`
  does). The padded size picks the dtype, as it does in fairseq-preprocess.

The mapping from the job's ids (`FairseqIds`): the vocabulary's pad id is `<pad>` (1), its
EOS id `</s>` (2), and every other id of the vocabulary, in order, is the next fairseq id from
4 on (for subword, EOS 1 and pad 0: fairseq id = id + 2). A kind whose records end without
EOS (word: tensorflow/nmt's reader adds it) gets `</s>` appended, as fairseq-preprocess does.
Each dict line is the vocabulary's own entry (`Vocabulary.entry`; a language tag as
`--lang_tags` spells it); an entry fairseq could not
read back as one distinct token (empty, holding whitespace, one of its four specials, or a
repeat) is written `<t2t:ID>` with the job's id. Counts are the entry's occurrences in the
train split (both sides when the two sides share one vocabulary, so both dicts are equal, as
`--joined-dictionary` needs).

The job's shard file (`.fairseq`, one per shard as every format): the shard's records in
order, each its inputs' then its targets' ids as little-endian int32 (the job's ids, so
`inspect` and the readers read it as any shard), then the sizes (int32, inputs and targets
per record), the record count (`<Q`) and the magic `T2TFSQ01` last.
"""

import struct
from typing import (Any, BinaryIO, Callable, Dict, Iterator, List, Mapping, Optional, Sequence,
                    Tuple)

import numpy as np

INDEX_MAGIC = b"MMIDIDX\x00\x00"
INDEX_VERSION = 1
DTYPE_CODES: Dict[np.dtype, int] = {np.dtype(np.uint16): 8, np.dtype(np.uint32): 9}
SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")  # fairseq's Dictionary: ids 0..3
BOS, PAD, EOS, UNK = range(4)
PADDING_FACTOR = 8  # fairseq-preprocess's Dictionary.finalize(padding_factor=8)
MADEUP_WORD = "madeupword%04d"
FIRST_ENTRY = len(SPECIALS)
SHARD_MAGIC = b"T2TFSQ01"
SPLIT_NAMES = {"train": "train", "dev": "valid"}  # the job's split: fairseq's


def best_fitting_dtype(dictionary_size: int) -> np.dtype:
    """fairseq-preprocess's dtype for a dictionary of `dictionary_size` entries."""
    return np.dtype(np.uint16 if dictionary_size < 65500 else np.uint32)


class FairseqIds:
    """The job's ids of one vocabulary to fairseq's (see the module docstring)."""

    def __init__(self, vocab_size: int, pad_id: int, eos_ids: Sequence[int]) -> None:
        self.vocab_size = vocab_size
        self.append_eos = not eos_ids
        eos = eos_ids[0] if eos_ids else pad_id
        table = np.full(max(vocab_size, 1), -1, dtype=np.int64)
        self.entries: List[int] = [i for i in range(vocab_size) if i not in (pad_id, eos)]
        table[self.entries] = np.arange(FIRST_ENTRY, FIRST_ENTRY + len(self.entries))
        if 0 <= pad_id < vocab_size:
            table[pad_id] = PAD
        if 0 <= eos < vocab_size:
            table[eos] = EOS
        self.table = table
        self.dictionary_size = -(-(FIRST_ENTRY + len(self.entries)) // PADDING_FACTOR) \
            * PADDING_FACTOR
        self.dtype = best_fitting_dtype(self.dictionary_size)

    def map(self, ids: np.ndarray) -> np.ndarray:
        """fairseq's ids of the job's `ids` (ValueError for one outside the vocabulary)."""
        if ids.size and (ids.min() < 0 or ids.max() >= self.vocab_size):
            raise ValueError("an id outside the vocabulary (0..%d)" % (self.vocab_size - 1))
        return self.table[ids]


def dict_lines(ids: FairseqIds, entry: Callable[[int], Optional[str]],
               counts: np.ndarray, tags: Optional[Mapping[int, str]] = None) -> str:
    """dict.txt: a `token count` line per entry, in fairseq id order from 4 (`counts`: by
    the job's id); `tags`: {job id: language tag}, written as the tag itself (`__de__`),
    not as the vocabulary stores it (a subword vocabulary escapes it)."""
    seen = set(SPECIALS)
    lines = []
    for job_id in ids.entries:
        token = (tags or {}).get(job_id) or entry(job_id)
        if not token or any(c.isspace() for c in token) or token in seen:
            token = "<t2t:%d>" % job_id
        seen.add(token)
        lines.append("%s %d\n" % (token, int(counts[job_id]) if job_id < len(counts) else 0))
    madeup = 0
    while (FIRST_ENTRY + len(lines)) % PADDING_FACTOR:
        token = MADEUP_WORD % madeup
        madeup += 1
        if token not in seen:
            seen.add(token)
            lines.append("%s 0\n" % token)
    return "".join(lines)


def index_bytes(sizes: np.ndarray, dtype: np.dtype) -> bytes:
    """The `.idx` of sentences of `sizes` tokens in `dtype` (MMapIndexedDataset.Index)."""
    sizes = np.asarray(sizes, dtype=np.int32)
    pointers = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1].astype(np.int64) * np.dtype(dtype).itemsize, out=pointers[1:])
    return b"".join((INDEX_MAGIC, struct.pack("<Q", INDEX_VERSION),
                     struct.pack("<B", DTYPE_CODES[np.dtype(dtype)]),
                     struct.pack("<Q", len(sizes)), sizes.tobytes(), pointers.tobytes()))


def read_index(data: bytes) -> Tuple[np.dtype, np.ndarray, np.ndarray]:
    """(dtype, sizes, pointers) of an `.idx` file's bytes (ValueError if it is not one)."""
    if data[:9] != INDEX_MAGIC or struct.unpack_from("<Q", data, 9)[0] != INDEX_VERSION:
        raise ValueError("not a fairseq MMapIndexedDataset index (magic or version)")
    codes = {code: dtype for dtype, code in DTYPE_CODES.items()}
    dtype = codes[data[17]]
    (count,) = struct.unpack_from("<Q", data, 18)
    sizes = np.frombuffer(data, np.int32, count, 26)
    pointers = np.frombuffer(data, np.int64, count, 26 + 4 * count)
    return dtype, sizes, pointers


def write_shard(out: BinaryIO, pairs: Iterator[Tuple[Sequence[int], Sequence[int]]]) -> int:
    """Writes the job's `.fairseq` shard of (inputs, targets) id lists; returns the count."""
    sizes: List[int] = []
    for inputs, targets in pairs:
        out.write(np.asarray(inputs, dtype="<i4").tobytes())
        out.write(np.asarray(targets, dtype="<i4").tobytes())
        sizes.extend((len(inputs), len(targets)))
    out.write(np.asarray(sizes, dtype="<i4").tobytes())
    out.write(struct.pack("<Q", len(sizes) // 2) + SHARD_MAGIC)
    return len(sizes) // 2


def read_shard(data: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(inputs ids, inputs sizes, targets ids, targets sizes) of a `.fairseq` shard's bytes
    (or a buffer: a `np.memmap` of the file), each side's ids concatenated in record order;
    ValueError if it is not one."""
    if len(data) < 16 or bytes(data[-8:]) != SHARD_MAGIC:
        raise ValueError("not a .fairseq shard of this job (no %s trailer)"
                         % SHARD_MAGIC.decode())
    (count,) = struct.unpack_from("<Q", data, len(data) - 16)
    body_end = len(data) - 16 - 8 * count
    if body_end < 0:
        raise ValueError("a .fairseq shard cut short")
    sizes = np.frombuffer(data, "<i4", 2 * count, body_end).reshape(count, 2)
    body = np.frombuffer(data, "<i4", body_end // 4, 0)
    if body.size != int(sizes.sum()):
        raise ValueError("a .fairseq shard cut short")
    side = np.repeat(np.tile(np.array([True, False]), count), sizes.reshape(-1))
    return body[side], sizes[:, 0].copy(), body[~side], sizes[:, 1].copy()


def shard_pairs(data: Any) -> Iterator[Dict[str, List[int]]]:
    """The records of a `.fairseq` shard as {"inputs": ids, "targets": ids}."""
    inputs, in_sizes, targets, tgt_sizes = read_shard(data)
    in_ends, tgt_ends = np.cumsum(in_sizes), np.cumsum(tgt_sizes)
    for i in range(len(in_sizes)):
        yield {"inputs": inputs[in_ends[i] - in_sizes[i]:in_ends[i]].tolist(),
               "targets": targets[tgt_ends[i] - tgt_sizes[i]:tgt_ends[i]].tolist()}
