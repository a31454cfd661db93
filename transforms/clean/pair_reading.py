"""Reading a chunk's pairs for the cleaning stages (`clean_pairs`, `near_dedup`), as the
encoder reads them: each pair with its line number, its lines' newlines (the exact dedup key
keeps them) and raw byte sizes (the sampler sizes a cleaned file's sample from them)."""

import itertools
from typing import Iterator, List, Optional, Set, Tuple

from transforms.contracts.elements import Chunk
from transforms.formats.text_lines import decode_line, iter_raw_lines
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores

# (number, source, target, source newline, target newline, source bytes, target bytes)
ReadPair = Tuple[int, str, str, str, str, int, int]
# (split, dataset index, first line): a chunk, as pairs awaiting more work name it
ChunkKey = Tuple[str, int, int]


def chunk_key(chunk: Chunk) -> ChunkKey:
    return chunk["ds"]["split"], chunk["ds"]["index"], chunk["first_line"]


BLOCK_LINES = 10000  # lines read and decoded at once per side (a compressed file is one chunk)


def _block(lines: Iterator[bytes], first_number: int, count: int, offset: int,
           file_facts: List[int]) -> Tuple[List[bytes], List[str], int]:
    """(raw lines, their newlines, the bytes they span) of the next `count` of `lines` (a
    stream's `iter_raw_lines`), whose next is line `first_number` at byte `offset` of a file
    of `file_facts` [lines, bytes]: only the file's last line may lack its newline."""
    raw = list(itertools.islice(lines, count))
    ends = ["\n"] * len(raw)
    size = sum(map(len, raw)) + len(raw)
    if raw and first_number + len(raw) - 1 >= file_facts[0] and offset + size > file_facts[1]:
        ends[-1] = ""
    return raw, ends, size


def _decoded(raw: List[bytes]) -> Optional[List[str]]:
    """The lines decoded as `decode_line` decodes valid lines, the block at once (`\\n` is
    never inside a UTF-8 sequence, so the decoded block split at it gives each line's own
    decoding); None when a line holds `\\r` or is not UTF-8 (then line by line)."""
    joined = b"\n".join(raw)
    if b"\r" in joined:
        return None
    try:
        return joined.decode("utf-8").split("\n") if raw else []
    except UnicodeDecodeError:
        return None


def read_pairs(chunk: Chunk, stores: ObjectStores, on_invalid: str,
               wanted: Optional[Set[int]] = None) -> Iterator[ReadPair]:
    """Each pair of the chunk (`with_chunk_facts`) that decodes, as a ReadPair (an invalid
    UTF-8 line's pair is the encoder's to reject; `on_invalid`: --on_invalid_utf8), or only
    those whose line number is in `wanted`. Lines
    are read and decoded a block of BLOCK_LINES per side at a time: a call per line cost
    more than the cheap filters."""
    src_path, tgt_path = chunk["source"], chunk["target"]
    number = chunk["first_line"] + 1
    left = chunk["num_lines"]
    offsets = [chunk["source_offset"], chunk["target_offset"]]
    with file_io.open_text_source(src_path, stores, offsets[0]) as s, \
            file_io.open_text_source(tgt_path, stores, offsets[1]) as t:
        lines_s, lines_t = iter_raw_lines(s), iter_raw_lines(t)
        while left > 0:
            raw_s, ends_s, size = _block(lines_s, number, min(left, BLOCK_LINES), offsets[0],
                                         chunk["source_file"])
            offsets[0] += size
            raw_t, ends_t, size = _block(lines_t, number, min(left, BLOCK_LINES), offsets[1],
                                         chunk["target_file"])
            offsets[1] += size
            count = min(len(raw_s), len(raw_t))
            if not count:
                return
            block_s, block_t = _decoded(raw_s), _decoded(raw_t)
            texts_s: List[Optional[str]] = list(block_s or [])
            texts_t: List[Optional[str]] = list(block_t or [])
            if block_s is None or block_t is None:  # as the pairs come, the error's line
                texts_s, texts_t = [], []
                for n, line_s, line_t in zip(range(number, number + count), raw_s, raw_t):
                    texts_s.append(decode_line(line_s, src_path, n, on_invalid))
                    texts_t.append(decode_line(line_t, tgt_path, n, on_invalid))
            for n, source, target, r_s, r_t, end_s, end_t in zip(
                    range(number, number + count), texts_s, texts_t, raw_s, raw_t, ends_s,
                    ends_t):
                if source is not None and target is not None and (
                        wanted is None or n in wanted):
                    yield (n, source, target, end_s, end_t, len(r_s) + len(end_s),
                           len(r_t) + len(end_t))
            number += count
            left -= count
