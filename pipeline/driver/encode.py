"""The encode step: every pair encoded, shuffled and written as shards in one pass.

`build_encode_pass` is the pass, for a real run and a dry run alike: `EncodePairs` reads the
chunks of every prepared dataset in parallel and writes sorted shard fragments,
`WriteShuffledShards` merges them into the shards, and every reject (with those the prepare
step found while materializing) goes to one JSONL file per split. The encode DoFn's per-chunk
length counts are summed per split by `LengthReportFn` into the length figures of the summary
and the length report (`pipeline.output.length_report`). Everything lands under the work directory;
`pipeline.output.commit` moves it into place once the books balance.
"""

from typing import Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipeline.runtime import console
from pipeline.driver import resume as resuming
from pipeline.driver.datasets import Dataset
from pipeline.driver.passes import PassRunner
from pipeline.driver.prepare import Prepared, every_dataset
from pipeline.output.layout import OutputLayout
from transforms.contracts.config import DatagenConfig
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores
from transforms.contracts.elements import (Chunk, FileFacts, JsonValue, RejectsReport, ShardReport,
                                 TokenCounts)
from transforms.encode import chunk_manifests
from transforms.encode.chunk_manifests import Resume
from transforms.encode.shard_manifests import ShardResume
from transforms.shards.format_base import DEFAULT_LANGS
from transforms.shards.record_formats import Langs
from transforms.encode.encode_pairs import EncodePairs, plan_chunks
from transforms.reporting.json_result import WriteJsonResult
from transforms.encode.length_stats import LengthReportFn, candidate_max_lengths
from transforms.pairs import mixing
from transforms.encode.shuffled_shards import (PairShards, WriteRejects, WriteShuffledShards,
                                        rejects_file_split)

WORK_DIRS = ("fragments", "shards", "rejects")


class ShardPlan(NamedTuple):
    """Where each split's records go: `num_shards` {split: shards}; with several language
    pairs `pair_shards` {split: [(pair, first shard, shards)]} (each pair's own range, named
    with it) and, with --mix_shards, `copies` {dataset index: [the dataset's first line's
    index in its pair, the pair's lines, the records they give]} for the train split."""
    num_shards: Dict[str, int]
    pair_shards: Dict[str, List[Tuple[str, int, int]]]
    copies: Dict[int, List[int]]


def plan_shards(prepared: Mapping[str, Sequence[Prepared]], config: DatagenConfig) -> ShardPlan:
    """The ShardPlan of the prepared datasets (`--num_train_shards`/`--num_dev_shards`).

    With one corpus: the flags' shards per split. With several: each pair gets its own
    shards, as many as its share of the split's lines (pairs read) of the flag's number, at
    least one; with --mix_shards the train split is one set of the flag's shards, where each
    pair is repeated to its rate p (`transforms.pairs.mixing.temperature_shares` of its lines at
    --sampling_temperature, weights multiplied): the pair whose lines are largest against
    its rate is written once, every other pair's lines give p / p_that * its lines records
    (each line once or more, evenly)."""
    flags = {"train": config.job.num_train_shards, "dev": config.job.num_dev_shards}
    plan = ShardPlan({split: flags[split] for split in prepared}, {}, {})
    if not config.several_corpora:
        return plan
    for split, items in sorted(prepared.items()):
        lines: Dict[str, int] = {}
        parts: Dict[str, List[Tuple[int, float]]] = {}
        for p in items:
            pair = p.ds["pair"]
            lines[pair] = lines.get(pair, 0) + p.units
            parts.setdefault(pair, []).append((p.units, config.corpora[p.ds["corpus"]].weight))
        if split == "train" and config.job.mix_shards:
            rates = mixing.temperature_shares(parts, config.vocab.sampling_temperature)
            total = max((lines[pair] / rates[pair] for pair in lines if rates[pair]),
                        default=0.0)
            records = {pair: max(lines[pair], int(round(total * rates[pair])))
                       for pair in lines}
            seen: Dict[str, int] = {}
            for p in items:
                pair = p.ds["pair"]
                plan.copies[p.ds["index"]] = [seen.get(pair, 0), lines[pair], records[pair]]
                seen[pair] = seen.get(pair, 0) + p.units
            continue
        everything = sum(lines.values())
        first = 0
        plan.pair_shards[split] = []
        for pair in sorted(lines):
            count = max(1, int(round(flags[split] * lines[pair] / everything))
                        if everything else 1)
            plan.pair_shards[split].append((pair, first, count))
            first += count
        plan.num_shards[split] = first
    return plan


def build_encode_pass(p: beam.Pipeline, chunks: List[Chunk], vocab_paths: Tuple[str, str],
                      seed: int, problem: str, num_shards: Dict[str, int],
                      work_dirs: Dict[str, str], result_path: str, config: DatagenConfig,
                      earlier_rejects: Sequence[str] = (),
                      prefixes: Optional[Dict[str, List[int]]] = None,
                      pair_shards: Optional[PairShards] = None,
                      resume: Optional[Resume] = None,
                      target_prefixes: Optional[Dict[str, List[int]]] = None,
                      shard_resume: Optional[ShardResume] = None,
                      langs: Langs = DEFAULT_LANGS,
                      pass_bytes: Optional[int] = None) -> None:
    """Encodes `chunks`, writes shuffled shards, and all rejects (with those of `prepare`).

    `work_dirs`: where shard fragments, shards and rejects files are written
    ({"fragments", "shards", "rejects"}); the shard and rejects files are moved into place by
    the driver once the books balance. `prefixes`: {pair: ids before every input}, the
    language tags (`target_prefixes`: before every target, `--lang_tags nllb`);
    `pair_shards`: the pairs' own shards (`ShardPlan.pair_shards`);
    `resume`: where chunk manifests go and a killed run's are looked for (then the result's
    `resume` counts the chunks reused and encoded); `shard_resume`: where shard manifests go
    and a killed run's merged shards are looked for; `langs`: a one-pair output's (source,
    target) languages, which a text shard's files end with; `pass_bytes`: the chunks' input
    bytes, which bound each encode worker's fragment group (`fragment_groups.flush_bytes`).
    """
    encoded = (p | "Chunks" >> beam.Create(chunks, reshuffle=False)
               | "Encode" >> EncodePairs(config.vocab.loader,
                                         vocab_paths[0], vocab_paths[1], seed, num_shards,
                                         work_dirs["fragments"], config, prefixes, resume,
                                         target_prefixes, pass_bytes))
    shards = encoded.records | "Write" >> WriteShuffledShards(
        problem, num_shards, work_dirs["shards"], config.job.output_format, pair_shards,
        config.job.packed_length, shard_resume, langs)
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
        # by name: the writer streams them (`transforms.encode.shuffled_shards._WriteRejectsFn`)
        earlier = (p | "RejectFiles" >> beam.Create(list(earlier_rejects), reshuffle=False)
                   | "RejectFileSplits" >> beam.FlatMap(rejects_file_split))
        rejects = (rejects, earlier) | "AllRejects" >> beam.Flatten()
    written = rejects | "Rejects" >> WriteRejects(work_dirs["rejects"])
    reuse = (encoded.resume | "SumResume" >> beam.CombinePerKey(sum)
             | "ResumeToList" >> beam.Map(list))
    _ = {"shards": shards, "rejects": written, "tokens": token_stats, "lengths": lengths,
         "resume": reuse} | ("Result" >> WriteJsonResult(result_path))


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
        self.prefixes: Dict[str, List[int]] = {}  # {pair: ids before its inputs}: the tags
        self.target_prefixes: Dict[str, List[int]] = {}  # {pair: ids before its targets}
        self.shard_plan = ShardPlan({}, {}, {})  # set by `plan_shards` before `run`
        # the run's resume key and whether a killed run left chunks under it (set by the
        # job once the fingerprint is known; a dry run has none)
        self.resume_key: Optional[str] = None
        self.look = False
        self.reuse: Dict[str, int] = {}  # after `run`: chunks_reused, chunks_encoded

    def plan_shards(self, prepared: Mapping[str, Sequence[Prepared]]) -> Dict[str, int]:
        """Plans where the records go (`plan_shards`); returns {split: shards}."""
        self.shard_plan = plan_shards(prepared, self._config)
        return self.shard_plan.num_shards

    def build(self, chunks: List[Chunk], vocab_paths: Tuple[str, str],
              num_shards: Dict[str, int], earlier_rejects: Sequence[str],
              pass_bytes: Optional[int] = None
              ) -> Tuple[str, Callable[[beam.Pipeline], None]]:
        """(label, build(pipeline)) of the encode pass; `pass_bytes`: the input bytes of
        its datasets (both sides)."""
        work = self._layout.work
        label = "encode %d chunks into %s" % (len(chunks), ", ".join(
            "%d %s shards" % (n, s) for s, n in sorted(num_shards.items())))
        return label, lambda p: build_encode_pass(
            p, chunks, vocab_paths, self._seed, self._problem, num_shards,
            self.work_dirs(), work("encode.json"), self._config,
            earlier_rejects, self.prefixes, self.shard_plan.pair_shards,
            None if self.resume_key is None else resuming.resume_of(
                self._layout, self.resume_key, self.look), self.target_prefixes,
            None if self.resume_key is None else resuming.shard_resume_of(
                self._layout, self.resume_key, self.look), self._layout.shards.langs,
            pass_bytes)

    def work_dirs(self) -> Dict[str, str]:
        """{"fragments", "shards", "rejects"}: where the pass writes; the fragments and the
        shards in the resume directory when the run has a resume key."""
        dirs = {name: self._layout.work(name) for name in WORK_DIRS}
        if self.resume_key is not None:
            dirs["fragments"] = resuming.fragment_dir(self._layout, self.resume_key)
            dirs["shards"] = resuming.shard_dir(self._layout, self.resume_key)
        return dirs

    def run(self, prepared: Dict[str, List[Prepared]], vocab_paths: Tuple[str, str],
            num_shards: Dict[str, int]
            ) -> Tuple[List[ShardReport], List[RejectsReport], Dict[str, TokenCounts],
                       Dict[str, Dict[str, JsonValue]]]:
        """Encodes `prepared` ({split: [Prepared]}); returns (shards, rejects, tokens,
        lengths) as the pass reported them (`lengths`: {split: length_stats.length_report})."""
        # with cleaning: each chunk skips its dataset's dropped lines, and every chunk also
        # measures them for the lengths before cleaning
        cleaned = any(p.dropped for split in prepared for p in prepared[split])
        ranges = {(split, pair): [first, count]
                  for split, pairs in self.shard_plan.pair_shards.items()
                  for pair, first, count in pairs}
        chunks: List[Chunk] = []
        for split in sorted(prepared):
            for p in prepared[split]:
                for c in plan_chunks(p.ds, p.source_lines, p.target_lines, p.source_facts,
                                     p.target_facts):
                    if cleaned:
                        c["dropped"], c["lengths_before"] = p.dropped, True
                    if (split, p.ds.get("pair", "")) in ranges:  # a pair's own shards
                        c["shards"] = ranges[(split, p.ds.get("pair", ""))]
                    if split == "train" and p.ds["index"] in self.shard_plan.copies:
                        c["copies"] = self.shard_plan.copies[p.ds["index"]]
                    chunks.append(c)
        # the prepare step's rejects (materializing) and the cleaning step's
        earlier = [path for split in sorted(prepared) for p in prepared[split]
                   for path in (p.rejects_path, p.cleaning_rejects) if path]
        # this run's own, new work directory (and the resume directory): nothing to delete
        directories = list(self.work_dirs().values())
        if self.resume_key is not None:
            directories.append(resuming.resume_of(self._layout, self.resume_key,
                                                  self.look).manifest_dir)
            directories.append(resuming.shard_resume_of(self._layout, self.resume_key,
                                                        self.look).manifest_dir)
        for directory in directories:
            if not FileSystems.exists(directory):  # a killed run's resume directory is
                FileSystems.mkdirs(directory)      # (mkdirs: a no-op on object stores)
        pass_bytes = sum(p.source_facts["bytes"] + p.target_facts["bytes"]
                         for split in prepared for p in prepared[split])
        self._run_pass(*self.build(chunks, vocab_paths, num_shards, earlier, pass_bytes),
                       progress=self.progress(chunks, num_shards))
        result = file_io.read_work_json(self._layout.work("encode.json"), self._stores)
        self.reuse = dict(result.get("resume", []))
        return (result.get("shards", []), result.get("rejects", []),
                dict(result.get("tokens", [])), dict(result.get("lengths", [])))

    def progress(self, chunks: List[Chunk], num_shards: Dict[str, int]
                 ) -> Callable[[float], str]:
        """progress(seconds): the pairs encoded so far, out of every pair, and the time left
        to encode them; once every chunk is done, the shards: the shuffle that groups the
        fragments by shard until the first is written, then how many are written and the
        time left. The pairs from the pass's counters where the runner reports them while it
        runs, else from the names of the chunk manifests (a listing of an object per group
        of chunks, `chunk_manifests.lines_done`); never a listing of the fragments."""
        counted = [c["num_lines"] for c in chunks if not c.get("unmatched")]
        total = sum(counted)
        shards = sum(num_shards.values())
        live = getattr(self._run_pass, "live_counters", dict)
        manifests = (None if self.resume_key is None else resuming.resume_of(
            self._layout, self.resume_key, self.look).manifest_dir)
        written_shards = FileSystems.join(file_io.glob_literal(self.work_dirs()["shards"]),
                                          "*")
        encoded_at: List[float] = []  # when every chunk was first seen done

        def progress(seconds):
            read = [n for name, n in live().items() if name.endswith(".pairs_read")]
            encoded = min(total, sum(read) if read else (
                0 if manifests is None else chunk_manifests.lines_done(manifests, self._stores)))
            if encoded < total:
                return console.progress_line(encoded, total, seconds,
                                             then="then %d shards" % shards,
                                             chunks=len(counted))
            if not encoded_at:
                encoded_at.append(seconds)
            names = (FileSystems.split(m.path)[1]
                     for m in FileSystems.match([written_shards])[0].metadata_list)
            written = sum(1 for name in names if not file_io.is_temporary_name(name))
            return console.shards_line(total, written, shards, seconds, encoded_at[0])
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
