"""The encode step: every pair encoded, shuffled and written as shards in one pass.

`build_encode_pass` is the pass, for a real run and a dry run alike: `EncodePairs` reads the
chunks of every prepared dataset in parallel and writes sorted shard fragments,
`WriteShuffledShards` merges them into the shards, and every reject (with those the prepare
step found while materializing) goes to one JSONL file per split. The encode DoFn's per-chunk
length counts are summed per split by `LengthReportFn` into the length figures of the summary
and the length report (`pipeline.output.length_report`). Everything lands under the work directory;
`pipeline.output.commit` moves it into place once the books balance.
"""

from typing import Callable, Dict, List, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipeline.runtime import console
from pipeline.driver.datasets import Dataset
from pipeline.driver.passes import PassRunner
from pipeline.driver.prepare import Prepared, every_dataset
from pipeline.output.layout import OutputLayout
from transforms.config import DatagenConfig
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores
from transforms.elements import (Chunk, FileFacts, JsonValue, RejectsReport, ShardReport,
                                 TokenCounts)
from transforms.encode_pairs import EncodePairs, plan_chunks
from transforms.json_result import WriteJsonResult
from transforms.length_stats import LengthReportFn, candidate_max_lengths
from transforms.shard_fragments import fragment_chunk
from transforms.shuffled_shards import WriteRejects, WriteShuffledShards, rejects_file_split

WORK_DIRS = ("fragments", "shards", "rejects")


def build_encode_pass(p: beam.Pipeline, chunks: List[Chunk], vocab_paths: Tuple[str, str],
                      seed: int, problem: str, num_shards: Dict[str, int],
                      work_dirs: Dict[str, str], result_path: str, config: DatagenConfig,
                      earlier_rejects: Sequence[str] = ()) -> None:
    """Encodes `chunks`, writes shuffled shards, and all rejects (with those of `prepare`).

    `work_dirs`: where shard fragments, shards and rejects files are written
    ({"fragments", "shards", "rejects"}); the shard and rejects files are moved into place by
    the driver once the books balance.
    """
    encoded = (p | "Chunks" >> beam.Create(chunks, reshuffle=False)
               | "Encode" >> EncodePairs(config.vocab.loader,
                                         vocab_paths[0], vocab_paths[1], seed, num_shards,
                                         work_dirs["fragments"], config))
    shards = encoded.records | "Write" >> WriteShuffledShards(
        problem, num_shards, work_dirs["shards"], config.job.output_format,
        config.job.packed_length)
    token_stats = (encoded.stats
                   | "SumTokenStats" >> beam.CombinePerKey(
                       lambda rows: [sum(column) for column in zip(*rows)])
                   | "StatsToList" >> beam.Map(list))
    lengths = (encoded.lengths
               | "SumLengths" >> beam.CombinePerKey(LengthReportFn(
                   candidate_max_lengths(config.read.max_length)))
               | "LengthsToList" >> beam.Map(list))
    rejects = encoded.rejects
    if earlier_rejects:
        # by name: the writer streams them (`transforms.shuffled_shards._WriteRejectsFn`)
        earlier = (p | "RejectFiles" >> beam.Create(list(earlier_rejects), reshuffle=False)
                   | "RejectFileSplits" >> beam.FlatMap(rejects_file_split))
        rejects = (rejects, earlier) | "AllRejects" >> beam.Flatten()
    written = rejects | "Rejects" >> WriteRejects(work_dirs["rejects"])
    _ = {"shards": shards, "rejects": written, "tokens": token_stats, "lengths": lengths} | (
        "Result" >> WriteJsonResult(result_path))


class EncodeStep:
    """Runs the encode pass (`run_pass`: the PassRunner) of the prepared datasets with the
    run's `config` (DatagenConfig), `seed` and `problem`, into `layout`'s work directory."""

    def __init__(self, layout: OutputLayout, config: DatagenConfig, run_pass: PassRunner,
                 stores: ObjectStores) -> None:
        self._layout = layout
        self._config = config
        self._seed = config.job.seed
        self._problem = config.job.problem
        self._run_pass = run_pass
        self._stores = stores

    def build(self, chunks: List[Chunk], vocab_paths: Tuple[str, str],
              num_shards: Dict[str, int], earlier_rejects: Sequence[str]
              ) -> Tuple[str, Callable[[beam.Pipeline], None]]:
        """(label, build(pipeline)) of the encode pass."""
        work = self._layout.work
        label = "encode %d chunks into %s" % (len(chunks), ", ".join(
            "%d %s shards" % (n, s) for s, n in sorted(num_shards.items())))
        return label, lambda p: build_encode_pass(
            p, chunks, vocab_paths, self._seed, self._problem, num_shards,
            {name: work(name) for name in WORK_DIRS}, work("encode.json"), self._config,
            earlier_rejects)

    def run(self, prepared: Dict[str, List[Prepared]], vocab_paths: Tuple[str, str],
            num_shards: Dict[str, int]
            ) -> Tuple[List[ShardReport], List[RejectsReport], Dict[str, TokenCounts],
                       Dict[str, Dict[str, JsonValue]]]:
        """Encodes `prepared` ({split: [Prepared]}); returns (shards, rejects, tokens,
        lengths) as the pass reported them (`lengths`: {split: length_stats.length_report})."""
        # with cleaning: each chunk skips its dataset's dropped lines, and every chunk also
        # measures them for the lengths before cleaning
        cleaned = any(p.dropped for split in prepared for p in prepared[split])
        chunks: List[Chunk] = []
        for split in sorted(prepared):
            for p in prepared[split]:
                for c in plan_chunks(p.ds, p.source_lines, p.target_lines, p.source_facts,
                                     p.target_facts):
                    if cleaned:
                        c["dropped"], c["lengths_before"] = p.dropped, True
                    chunks.append(c)
        # the prepare step's rejects (materializing) and the cleaning step's
        earlier = [path for split in sorted(prepared) for p in prepared[split]
                   for path in (p.rejects_path, p.cleaning_rejects) if path]
        for name in WORK_DIRS:  # this run's own, new work directory: nothing to delete
            FileSystems.mkdirs(self._layout.work(name))  # (a no-op on object stores)
        self._run_pass(*self.build(chunks, vocab_paths, num_shards, earlier),
                       progress=self.progress(chunks))
        result = file_io.read_work_json(self._layout.work("encode.json"), self._stores)
        return (result.get("shards", []), result.get("rejects", []),
                dict(result.get("tokens", [])), dict(result.get("lengths", [])))

    def progress(self, chunks: List[Chunk]) -> Callable[[float], str]:
        """progress(seconds): the pairs of the chunks whose shard fragments are written so
        far (a chunk writes its fragments when it is done), out of every pair; on any
        runner, as it asks the work directory's file system."""
        lines = {(c["ds"]["split"], c["ds"]["index"], c["first_line"]): c["num_lines"]
                 for c in chunks if not c.get("unmatched")}
        total = sum(lines.values())
        pattern = FileSystems.join(file_io.glob_literal(self._layout.work("fragments")), "*.frag")

        def progress(seconds):
            done = {fragment_chunk(FileSystems.split(m.path)[1])
                    for m in FileSystems.match([pattern])[0].metadata_list}
            written = sum(lines.get(c, 0) for c in done if c is not None)  # not another file
            return console.progress_line("encoded", written, total, seconds)
        return progress

    def dry_run(self, datasets: Dict[str, List[Dataset]], vocab_paths: Tuple[str, str],
                num_shards: Dict[str, int]) -> None:
        """--dry_run: the encode pass of `datasets` with placeholder chunks (no file facts)
        and, when some dataset is materialized, a placeholder rejects file of the prepare
        step."""
        no_facts: FileFacts = {"bytes": 0, "lines": 0, "checkpoints": [(0, 0)],
                               "first_invalid_utf8_line": None}
        every = every_dataset(datasets)
        chunks = [c for ds in every for c in plan_chunks(
            ds.spec(), ds.source, ds.target or ds.source, no_facts, no_facts)]
        earlier = ([self._layout.work("materialized", "x.rejects.jsonl")]
                   if not all(ds.read_in_place for ds in every) else [])
        self._run_pass(*self.build(chunks, vocab_paths, num_shards, earlier))
