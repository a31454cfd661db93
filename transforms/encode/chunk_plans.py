"""What the encode DoFn does with a chunk, read once from the chunk's optional keys.

A `Chunk` is the wire element (`transforms.contracts.elements.Chunk`): a dict whose JSON is
also a chunk's identity in its manifest (`chunk_manifests.chunk_identity`), so it keeps its
optional keys. Five behaviours hang on them: the lines past the shorter file of a misaligned
pair (`unmatched`: rejects only), the cleaning stage's dropped lines (`dropped`) and the lengths
before cleaning (`lengths_before`), a pair's own range of shards (`shards`) and --mix_shards'
repeated records (`copies`). `plan_of` reads them here, and only here, into a typed plan: an
`UnmatchedPlan` or a `PairsPlan` whose parts say what else to do, so the DoFn picks a
behaviour from a field of a type, never from whether a key is there.
"""

from typing import Dict, NamedTuple, Optional, Union

from transforms.contracts.elements import Chunk, DatasetSpec
from transforms.pairs.chunk_reading import ChunkSpan


class UnmatchedPlan(NamedTuple):
    """The lines of the longer file of a misaligned pair past the shorter one's end
    (--on_misaligned reject): each is rejected. `path` is read from byte `offset`, `skip`
    lines in, and its first line to reject is line `first_line` + 1."""
    chunk: Chunk
    split: str
    side: str  # "source" or "target"
    path: str
    offset: int
    first_line: int
    skip: int


class Cleaned(NamedTuple):
    """The cleaning stage ran: `bitmap`, the dataset's dropped-lines bitmap (None: it
    dropped none of them), whose lines are skipped; with `measure_before`, the chunk also
    measures them for the split's lengths before cleaning (the driver's chunks always do)."""
    bitmap: Optional[str]
    measure_before: bool


class Copies(NamedTuple):
    """--mix_shards: the chunk's records are repeated as their pair's rate asks (a line gives
    `mixing.take_count(offset + line - 1, lines, records)` records)."""
    offset: int   # the dataset's first line's index in its pair
    lines: int    # the pair's lines
    records: int  # the records they give


class PairsPlan(NamedTuple):
    """A range of line pairs to encode: `span`, read from the byte `offsets` of both files,
    written to the shards `first_shard` .. `first_shard + num_shards - 1` of its split;
    `cleaned` and `copies` when those stages apply to it."""
    chunk: Chunk
    ds: DatasetSpec
    span: ChunkSpan
    offsets: tuple[int, int]
    first_shard: int
    num_shards: int
    cleaned: Optional[Cleaned]
    copies: Optional[Copies]


ChunkPlan = Union[UnmatchedPlan, PairsPlan]


def plan_of(chunk: Chunk, num_shards: Dict[str, int]) -> ChunkPlan:
    """The plan of `chunk` (`encode_pairs.plan_chunks`' and the driver's); `num_shards`:
    {split: its shards}, all of which a chunk without a range of its own is written to."""
    ds = chunk["ds"]
    split = ds["split"]
    side = chunk.get("unmatched")
    if side:
        path = chunk["source"] if side == "source" else chunk["target"]
        return UnmatchedPlan(chunk, split, side, path, chunk["offset"], chunk["first_line"],
                             chunk["skip"])
    first_shard, count = chunk.get("shards") or (0, num_shards[split])
    copies = chunk.get("copies")
    return PairsPlan(
        chunk, ds, ChunkSpan(chunk["source"], chunk["target"], chunk["first_line"],
                             chunk["num_lines"]),
        (chunk["source_offset"], chunk["target_offset"]), first_shard, count,
        Cleaned(chunk.get("dropped"), bool(chunk.get("lengths_before")))
        if chunk.get("dropped") or chunk.get("lengths_before") else None,
        Copies(*copies) if copies else None)
