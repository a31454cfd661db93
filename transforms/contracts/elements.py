"""The elements that flow between the job's stages, as named types: the typed contracts of
its PTransforms and DoFns.

Pure Python (no Beam, no TensorFlow), so the formats and codecs can use these types too.

Two kinds, chosen by what each element must stay at run time:

- `NamedTuple`s (`Pair`, `Reject`, `ChunkLengths`, `SampleFile`, ...) where the element is
  a tuple and never reaches a JSON file as an object: a NamedTuple *is* a tuple (unpacking, indexing,
  `zip(*rows)` and pickling by value work as before), and it costs no more to build than
  the tuple it names.
- `TypedDict`s where the element is a dict that ends up in a JSON file (facts, reports,
  reject records) or that the driver builds (datasets, chunks): at run time a TypedDict is
  a plain `dict`, so the JSON bytes, the pickles and the Beam coders (`MapCoder` from
  `Dict[str, Any]`, which Beam makes of a TypedDict hint) are those of the dict.

The hot loops (an encoded pair's fragment entry, a pair's lengths) keep plain tuples,
described by type aliases (`FragmentEntry`): a NamedTuple built per record would cost a
Python-level `__new__` per record. Keys that cross a GroupByKey (`ShardKey`) stay plain
tuples as well: Beam's key coders must encode a key the same way from every branch of a
CoGroupByKey, and a tuple subclass would not be a tuple to its fast coder.
"""

from array import array
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple, TypedDict, Union


# -- line pairs (corpus readers -> MaterializeDatasets) ----------------------------------------

class Pair(NamedTuple):
    """An aligned source/target pair of a corpus file; `where` is its human position
    (`line 12`, `tu 5`, `doc 2455 seg 3`)."""
    source: str
    target: str
    where: str


class Reject(NamedTuple):
    """A unit of a corpus file that is not a pair, with a snake_case `reason`."""
    where: str
    reason: str
    source: str
    target: str


Unit = Union[Pair, Reject]  # what a corpus reader yields


# -- datasets and their files (driver -> ScanTextFiles, MaterializeDatasets, EncodePairs) ------

class _DatasetSpecRequired(TypedDict):
    split: str
    index: int
    name: str
    format: str              # lines | tsv | tmx | sgm | iwslt
    source: str              # a path, or `archive!member`
    target: Optional[str]    # None for TSV and TMX (both sides in one file)


class DatasetSpec(_DatasetSpecRequired, total=False):
    """One dataset of a split (`pipeline.driver.datasets.Dataset.spec`); with several
    corpora it carries its corpus, pair ("en-de"), languages and TSV columns."""
    corpus: int
    pair: str
    source_lang: str
    target_lang: str
    source_column: int
    target_column: int


Checkpoint = Tuple[int, int]  # (line index, byte offset) where a line starts


class _FileFactsRequired(TypedDict):
    bytes: int
    lines: int
    checkpoints: List[Checkpoint]
    first_invalid_utf8_line: Optional[int]


class FileFacts(_FileFactsRequired, total=False):
    """What `ScanTextFiles` (or a materialized side) knows of one line file; a file that
    cannot be read has only an `error` (`ScanError`)."""
    warnings: List[str]        # what T2T reads as text but a user likely did not mean
    rejected_lines: str        # a materialized side: its rejected units' lines, for the sample
    rejected_bytes: int


class ScanError(TypedDict):
    error: str


ScannedFile = Tuple[str, Union[FileFacts, ScanError]]  # ScanTextFiles' (path, facts)


class MaterializedDataset(TypedDict, total=False):
    """`MaterializeDatasets`' fact of one dataset: its line files, or an `error`."""
    split: str
    index: int
    error: str
    units: int
    source_path: str
    target_path: str
    facts: Dict[str, FileFacts]          # "source", "target"
    rejected_by_reason: Dict[str, int]
    rejects_path: str


class _ChunkRequired(TypedDict):
    ds: DatasetSpec
    source: str
    target: str
    first_line: int


class Chunk(_ChunkRequired, total=False):
    """One encode task (`transforms.encode.encode_pairs.plan_chunks`): `num_lines` lines of a line
    file pair from byte offsets `source_offset`/`target_offset`; or, with `unmatched`
    ("source" or "target"), the lines of the longer file past the shorter one's end (read
    from byte `offset`, `skip` lines in)."""
    num_lines: int
    source_offset: int
    target_offset: int
    unmatched: str
    offset: int
    skip: int
    # with cleaning (`transforms.clean.clean_pairs`, `pipeline.driver.cleaning`):
    source_file: List[int]     # [lines, bytes] of the source file (the cleaning pass)
    target_file: List[int]
    dropped: Optional[str]     # the dataset's dropped-lines bitmap, skipped by the encoder
    lengths_before: bool       # the encoder also measures the dropped pairs
    # with several corpora (`pipeline.driver.encode`):
    shards: List[int]          # [first shard, shards]: the range of its split's shards its
    #                            pair's records go to (a pair's own, or all with --mix_shards)
    copies: List[int]          # --mix_shards: [line offset of the dataset in its pair, the
    #                            pair's lines, the records the pair's lines give]


# -- encoded pairs and shards (EncodePairs -> WriteShuffledShards) -----------------------------

ShardKey = Tuple[str, int]                    # (split, shard)
FragmentEntry = Tuple[int, int, int, bytes]   # (shuffle key, dataset index, line number, record)
EntryKey = Tuple[int, int, int]               # a fragment entry's sort key, as read back
DatasetCount = Tuple[int, int]                # (dataset index, records or pairs)


class _FragmentReportRequired(TypedDict):
    path: str
    records: int
    by_dataset: List[List[int]]   # [[dataset index, records]]


class FragmentReport(_FragmentReportRequired, total=False):
    """A shard fragment written by the encode pass: its path, its records, per dataset;
    with --mix_shards, how many of them are repeated records (`copies`); `run`: the name of
    the chunk's run (`shard_fragments.fragment_name`), one of several in the fragment file
    of a group (`transforms.shards.fragment_groups`)."""
    copies: List[List[int]]       # [[dataset index, repeated records]]
    run: str


class PackingReport(TypedDict):
    """What packing one shard did (`transforms.formats.packed_examples.PackingTally`)."""
    records: int                          # packed records written
    pairs: int                            # pairs in them
    ids: List[int]                        # [inputs, targets] ids, spacing excluded
    over_length: int                      # records with a side over --packed_length
    pairs_per_record: List[Tuple[int, int]]  # [(pairs in a record, records)]


class _ShardReportRequired(TypedDict):
    split: str
    shard: int
    name: str
    records: int  # records in the file (packed records with --packed_length)
    bytes: int  # the file's size
    crc32c: str  # the whole file's crc32c (google_crc32c's hexdigest, 8 hex digits)
    by_dataset: List[DatasetCount]  # pairs per dataset


class ShardReport(_ShardReportRequired, total=False):
    """One shard file written (`WriteShuffledShards`), as the encode result lists it; with
    --packed_length, what packing did; a language pair's own shard names its `pair`; with
    --mix_shards, the repeated records among `records`, per dataset (`copies_by_dataset`)."""
    packing: PackingReport
    pair: str
    copies_by_dataset: List[DatasetCount]


# -- rejects (EncodePairs, MaterializeDatasets -> WriteRejects) --------------------------------

class _RejectRecordRequired(TypedDict):
    split: str
    dataset: str
    dataset_index: int
    ordinal: int
    file: str
    where: str
    reason: str
    source: str
    target: str


class RejectRecord(_RejectRecordRequired, total=False):
    """A rejected pair, as its JSON line in `rejects/{problem}-{split}.jsonl` holds it; a
    duplicate (`transforms.clean.clean_pairs`) names the first occurrence in `duplicate_of`
    ({split, dataset, line})."""
    duplicate_of: Dict[str, Any]


class RejectsReport(TypedDict):
    """One split's rejects file written (`WriteRejects`)."""
    split: str
    name: str
    rejected: int
    by_dataset_reason: List[Tuple[str, int]]   # ("{dataset index}\t{reason}", pairs)


# -- vocabulary samples (driver -> SampleAndCountTokens, TrainSentencePiece) ------------------

class SampleFile(NamedTuple):
    """One file a vocabulary samples (`transforms.vocab.token_counts`), T2T's byte budget spread
    over `size` bytes: a converted side's `rejected_lines` (`transforms.prepare.materialize`) are put
    back in place, a cleaned file's `dropped` lines (`transforms.clean.clean_pairs`' bitmap) left
    out. With several corpora, `mixture` (lines, take) replaces the byte budget: the file's
    (kept) lines and how many the temperature-sampled mix takes of them
    (`transforms.pairs.mixing`)."""
    vocab: str                      # the vocabulary's name: source, target or shared
    path: str
    size: Optional[int]             # bytes; None until a scan in the same pass says
    rejected_lines: Optional[str] = None
    dropped: Optional[str] = None
    mixture: Optional[Tuple[int, int]] = None


SampleRange = Tuple[int, int, int]  # (start byte, end byte, line number before start)


class SampleTask(NamedTuple):
    """A file's sample, or one part of it (`text_lines.plan_counted_sample_parts`), to be
    read on any worker."""
    file: SampleFile
    part: Optional[SampleRange]     # None: the whole file
    # a part's: how often each of its sampled lines counts (0: a repeat, counted where the
    # line first occurs); None: every line read is counted (repeats found in windows)
    times: Optional["array[int]"] = None


class FileSample(NamedTuple):
    """What the sampled lines of a file (or part) hold: also the sum of a file's parts."""
    counts: Mapping[str, int]       # {token: count}: a dict, or `token_count_kernel.TokenArrays`
    lines: int
    chars: int
    error: Optional[str]            # why the file could not be read to the end, or None
    bytes: int = 0                  # UTF-8 bytes of the lines (measured for a mix only)


# -- counts (EncodePairs -> the driver's sums and LengthReportFn) ------------------------------

TokenCounts = List[int]  # [source ids, source OOV words, target ids, target OOV words]
Histogram = Dict[int, int]  # {length: pairs}


class ChunkLengths(NamedTuple):
    """One chunk's length counts (`transforms.encode.length_stats.chunk_lengths`); also the
    accumulator `LengthReportFn` sums them into."""
    inputs: Histogram
    targets: Histogram
    pair: Histogram           # of max(inputs, targets)
    chars: List[int]          # [inputs, targets] characters of the stripped lines
    tokens: List[int]         # [inputs, targets] ids without EOS
    ratio: Histogram          # {bucket of targets/inputs length (RATIO_EDGES): pairs}


JsonValue = Any  # what `json.dumps` takes: the job's results and summaries
