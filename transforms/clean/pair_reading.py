"""Reading a chunk's pairs for the cleaning stages (`clean_pairs`, `near_dedup`), as the
encoder reads them: each pair with its line number, its lines' newlines (the exact dedup key
keeps them) and raw byte sizes (the sampler sizes a cleaned file's sample from them)."""

from typing import IO, Iterator, List, Tuple

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


def _lines(stream: IO[bytes], first_number: int, offset: int,
           file_facts: List[int]) -> Iterator[Tuple[int, bytes, str]]:
    """(1-based number, raw bytes, newline) of the lines from `stream`, which starts at line
    `first_number` and byte `offset` of a file of `file_facts` [lines, bytes]."""
    lines, size = file_facts
    position = offset
    for number, raw in enumerate(iter_raw_lines(stream), first_number):
        position += len(raw) + 1
        yield number, raw, "\n" if number < lines or position <= size else ""


def read_pairs(chunk: Chunk, stores: ObjectStores, on_invalid: str) -> Iterator[ReadPair]:
    """Each pair of the chunk (`with_chunk_facts`) that decodes, as a ReadPair (an invalid
    UTF-8 line's pair is the encoder's to reject; `on_invalid`: --on_invalid_utf8)."""
    src_path, tgt_path = chunk["source"], chunk["target"]
    first = chunk["first_line"] + 1
    with file_io.open_text_source(src_path, stores, chunk["source_offset"]) as s, \
            file_io.open_text_source(tgt_path, stores, chunk["target_offset"]) as t:
        pairs = zip(_lines(s, first, chunk["source_offset"], chunk["source_file"]),
                    _lines(t, first, chunk["target_offset"], chunk["target_file"]))
        for _ in range(chunk["num_lines"]):
            (number, raw_s, end_s), (_, raw_t, end_t) = next(pairs)
            source = decode_line(raw_s, src_path, number, on_invalid)
            target = decode_line(raw_t, tgt_path, number, on_invalid)
            if source is not None and target is not None:
                yield (number, source, target, end_s, end_t, len(raw_s) + len(end_s),
                       len(raw_t) + len(end_t))
