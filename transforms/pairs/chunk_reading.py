"""Reading one encode chunk: the raw lines of a line-aligned file pair become blocks of pairs
to encode, or rejects with a reason.

Pure Python (no Beam, no TensorFlow): the lines come in as byte strings from whatever opened
the files (`transforms.encode.encode_pairs`' DoFn, through `transforms.storage.file_io`), so the
rules of what is a pair live here apart from the I/O and the encoding. Each line is decoded
and stripped as T2T's `text2text_txt_iterator` does; a pair with an empty side, or a side over
--max_line_chars, or (with --on_invalid_utf8 reject) a side that is not UTF-8, is a
`LineReject`; the lines the cleaning stage dropped are skipped (their rejects are the cleaning
stage's), or, when the chunk measures the lengths before cleaning, handed on in blocks marked
`cleaned_away` to be measured only.

Valid pairs come in blocks of `BLOCK_PAIRS` (the encoder encodes a block's new lines in one
call); a block is handed on as soon as it is full, so a line the vocabulary cannot encode fails
the chunk after its block was read, and a read error further on is reported first.
"""

from typing import Iterator, List, NamedTuple, Optional, Tuple, Union

from transforms.cleaning.dropped_lines import is_dropped
from transforms.formats.rejects import pair_reject_reason
from transforms.formats.text_lines import decode_line

BLOCK_PAIRS = 4096  # pairs read before their lines are encoded together

# (line number, stripped source, stripped target): plain tuples, one per pair on the hot path
LinePair = Tuple[int, str, str]


class PairBlock(NamedTuple):
    """Up to BLOCK_PAIRS valid pairs of a chunk, in line order; `cleaned_away`: pairs the
    cleaning stage dropped, only measured for the lengths before cleaning."""
    pairs: List[LinePair]
    cleaned_away: bool
    # with `read_chunk(keep_raw=True)`: each pair's lines right-stripped only (not T2T's
    # strip), as OpusFilter writes them: the text output's (`--output_format text`)
    raw: Optional[List[Tuple[str, str]]] = None


class LineReject(NamedTuple):
    """A line pair of a chunk that is not written: its 1-based line number, a snake_case
    `reason` and both sides as they read (stripped)."""
    number: int
    reason: str
    source: str
    target: str


ChunkItem = Union[PairBlock, LineReject]  # what `read_chunk` yields


class ChunkSpan(NamedTuple):
    """Where a chunk's lines are: the two files' paths (for messages), the lines before it,
    and how many lines it has."""
    source_path: str
    target_path: str
    first_line: int
    num_lines: int


def read_chunk(source_lines: Iterator[bytes], target_lines: Iterator[bytes], span: ChunkSpan,
               on_invalid: str, max_chars: int, dropped: Optional[bytes] = None,
               measure_dropped: bool = False, keep_raw: bool = False) -> Iterator[ChunkItem]:
    """The `span.num_lines` line pairs of `source_lines`/`target_lines` (raw lines from the
    chunk's first line on) as `PairBlock`s and `LineReject`s, in line order.

    `on_invalid`: --on_invalid_utf8 (error raises `InputError` naming the file and line);
    `max_chars`: --max_line_chars; `dropped`: the cleaning stage's dropped-lines bitmap of the
    dataset (`transforms.cleaning.dropped_lines`), whose lines are skipped, or yielded in
    `cleaned_away` blocks with `measure_dropped` (those that would have been written).
    Raises ValueError when a file ends before the span does (it changed while reading).
    `keep_raw`: the blocks also hold each pair's lines right-stripped (`PairBlock.raw`).
    """
    src_path, tgt_path = span.source_path, span.target_path
    block_pairs = BLOCK_PAIRS
    block: List[LinePair] = []
    raw: Optional[List[Tuple[str, str]]] = [] if keep_raw else None
    cleaned: List[LinePair] = []
    for number in range(span.first_line + 1, span.first_line + span.num_lines + 1):
        raw_src = next(source_lines, None)
        raw_tgt = next(target_lines, None)
        if raw_src is None or raw_tgt is None:
            raise ValueError("%s / %s: file changed while reading, line %d is missing"
                             % (src_path, tgt_path, number))
        if dropped is not None and is_dropped(dropped, number):
            # cleaned away: its reject is the cleaning stage's
            if measure_dropped:
                source = decode_line(raw_src, src_path, number, on_invalid)
                target = decode_line(raw_tgt, tgt_path, number, on_invalid)
                if source is not None and target is not None and not pair_reject_reason(
                        source.strip(), target.strip(), max_chars):
                    cleaned.append((number, source.strip(), target.strip()))
                    if len(cleaned) == block_pairs:
                        yield PairBlock(cleaned, True)
                        cleaned = []
            continue
        source = decode_line(raw_src, src_path, number, on_invalid)
        target = decode_line(raw_tgt, tgt_path, number, on_invalid)
        if source is None or target is None:
            yield LineReject(number, "invalid_utf8",
                             decode_line(raw_src, src_path, number, "replace").strip(),
                             decode_line(raw_tgt, tgt_path, number, "replace").strip())
            continue
        decoded = (source, target)
        source, target = source.strip(), target.strip()
        reason = pair_reject_reason(source, target, max_chars)
        if reason:
            yield LineReject(number, reason, source, target)
            continue
        block.append((number, source, target))
        if raw is not None:
            raw.append((decoded[0].rstrip(), decoded[1].rstrip()))
        if len(block) == block_pairs:
            yield PairBlock(block, False, raw)
            block = []
            raw = [] if keep_raw else None
    if block:
        yield PairBlock(block, False, raw)
    if cleaned:
        yield PairBlock(cleaned, True)


def read_unmatched(lines: Iterator[bytes], path: str, side: str, first_line: int,
                   skip: int) -> Iterator[LineReject]:
    """The lines of the longer file of a misaligned pair (--on_misaligned reject), each a
    reject `unmatched_{side}_line`: `lines` are the file's raw lines from a seek point `skip`
    lines before line `first_line + 1`, the shorter file's end."""
    for _ in range(skip):
        next(lines, None)
    for read, raw in enumerate(lines, 1):
        number = first_line + read
        text = decode_line(raw, path, number, "replace").strip()
        yield LineReject(number, "unmatched_%s_line" % side,
                         text if side == "source" else "", text if side == "target" else "")
