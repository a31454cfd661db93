"""`python -m pipeline.datagen`: Tensor2Tensor's t2t-datagen for translation, on Apache Beam.

One command turns parallel text (line-aligned files, TSV, TMX, SGM, IWSLT XML, members of
archives) into T2T subword vocabularies and sharded, globally shuffled TFRecord files of
`tf.train.Example`s (`inputs`, `targets`: ids + EOS). The job runs as several Beam pipelines
(passes), each on the runner given by the Beam options:

1. prepare: line counts, sizes and UTF-8 validity of every line-aligned file, and every other
   dataset converted into line pairs; misaligned or invalid input stops the job here, before
   anything is written (unless told to reject it). When every dataset is read in place and a
   vocabulary is learnt, this scan rides along in the first vocab pass (one pipeline fewer:
   worker start-up is most of a small job's time); the sample reads the file sizes from it;
2. vocab passes (`pipeline.vocab_passes`), unless the vocab files already exist;
3. encode: encode every pair in parallel, shuffle deterministically and write the shards
   under a temporary directory;
4. finish: check that pairs read = written + rejected for every dataset, move shards and
   rejects into place, write the JSON summary and, last, the completion marker.

Example:
  python -m pipeline.datagen --train_source 'data/train.en' --train_target 'data/train.zh' \\
      --output_dir /tmp/t2t_data --runner DirectRunner
"""

import signal

if __name__ == "__main__":
    # Before any import starts a thread: every thread must block these for the driver to
    # hear them while its worker processes ignore them (see pipeline.interrupts).
    signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGTERM))

import dataclasses  # noqa: E402 (after the signal mask, on purpose)
import datetime
import json
import logging
import os
import sys
import threading
import time

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from pipeline import books, fingerprint, vocab_passes
from pipeline.interrupts import InterruptWatcher, Interrupted, kill_worker_processes
from pipeline.lock import OutputLock
from pipeline.datasets import literal_patterns, plan_datasets
from pipeline.layout import WORK_NAME, OutputLayout, lang_of
from pipeline.options import (DatagenOptions, check_known_flags, datagen_config,
                              datagen_flag_values, validate_flags)
from pipeline.runners import DatagenError, check_workers_can_import_project, is_dry_run, runner_name
from pipeline.summary import format_summary
from transforms import file_io
from transforms.encode_pairs import EncodePairs, plan_chunks
from transforms.file_scan import ScanTextFiles
from transforms.json_result import WriteJsonResult
from transforms.materialize import MaterializeDatasets
from transforms.shuffled_shards import WriteRejects, WriteShuffledShards

LOG = logging.getLogger("datagen")
PROGRESS_SECONDS = 60  # a long pass logs that it is still running this often


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")




def one_line(text):
    """A message as one line: a scheduler's log shows one line per failure."""
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


def _read_rejects_file(path):
    with FileSystems.open(path) as f:
        for line in f.read().decode("utf-8").splitlines():
            record = json.loads(line)
            yield record["split"], record


class PrepareInputs(beam.PTransform):
    """Scans the line-aligned files in `paths` and materializes the `structured` datasets.

    Applied to the pipeline; writes the facts to `result_path` and returns the (path, facts)
    of the scanned files, so a vocab pass in the same pipeline can size its samples.
    """

    def __init__(self, paths, structured, work_dir, read, result_path):
        super().__init__()
        self._paths = paths
        self._structured = structured
        self._work_dir = work_dir
        self._read = read  # transforms.config.ReadConfig
        self._result_path = result_path

    def expand(self, pbegin):
        outputs = {}
        scanned = None
        if self._paths:
            scanned = (pbegin | "Paths" >> beam.Create(self._paths)
                       | "Scan" >> ScanTextFiles(self._read.encode_chunk_lines))
            outputs["files"] = scanned | "AsList" >> beam.Map(list)
        if self._structured:
            outputs["materialized"] = (
                pbegin | "Datasets" >> beam.Create(self._structured)
                | "Materialize" >> MaterializeDatasets(self._work_dir, self._read))
        _ = outputs | "Result" >> WriteJsonResult(self._result_path)
        return scanned


def build_encode_pass(p, chunks, vocab_paths, seed, problem, num_shards, work_dirs, result_path,
                      config, earlier_rejects=()):
    """Encodes `chunks`, writes shuffled shards, and all rejects (with those of `prepare`).

    `work_dirs`: where shard fragments, shards and rejects files are written
    ({"fragments", "shards", "rejects"}); the shard and rejects files are moved into place by
    the driver once the books balance.
    """
    encoded = (p | "Chunks" >> beam.Create(chunks)
               | "Encode" >> EncodePairs(vocab_paths[0], vocab_paths[1], seed, num_shards,
                                         work_dirs["fragments"], config))
    shards = encoded.records | "Write" >> WriteShuffledShards(problem, num_shards,
                                                              work_dirs["shards"])
    token_stats = (encoded.stats
                   | "SumTokenStats" >> beam.CombinePerKey(
                       lambda rows: [sum(column) for column in zip(*rows)])
                   | "StatsToList" >> beam.Map(list))
    rejects = encoded.rejects
    if earlier_rejects:
        earlier = (p | "RejectFiles" >> beam.Create(list(earlier_rejects))
                   | "ReadRejects" >> beam.FlatMap(_read_rejects_file))
        rejects = (rejects, earlier) | "AllRejects" >> beam.Flatten()
    written = rejects | "Rejects" >> WriteRejects(work_dirs["rejects"])
    _ = {"shards": shards, "rejects": written, "tokens": token_stats} | (
        "Result" >> WriteJsonResult(result_path))


@dataclasses.dataclass
class Prepared:
    """A dataset with the line-aligned files the rest of the job reads."""
    ds: dict
    source_lines: str
    target_lines: str
    source_facts: dict
    target_facts: dict
    units: int                      # pairs (or units) read from the original input
    rejects_path: str = None        # rejects found while materializing


class DatagenJob:
    def __init__(self, options, interrupted=lambda: None):
        """`interrupted()`: the signal number that stopped the run, or None
        (`InterruptWatcher.received`)."""
        self.options = options
        self.interrupted = interrupted
        self.flags = options.view_as(DatagenOptions)
        f = self.flags
        validate_flags(f)
        check_workers_can_import_project(options)
        self.dry_run = is_dry_run(options)
        self.config = datagen_config(f)  # what the passes read; built once, never changed
        self.kind = self.config.vocab.kind
        self.layout = OutputLayout(file_io.absolute(f.output_dir), f.problem, f.vocab_size)
        self.stages = {}
        self.pass_count = 0
        self.lock = None                # OutputLock, held while the job runs
        self.fingerprint = None         # pipeline.fingerprint.output_fingerprint
        self.vocab_fingerprint = None   # pipeline.fingerprint.vocab_fingerprint

    # -- checks before anything runs or is deleted ------------------------------------------
    def _named_paths(self):
        """(flag, path) of every path the flags name (input patterns, vocabularies, output)."""
        f = self.flags
        named = [("--output_dir", f.output_dir)]
        for flag in ("train_source", "train_target", "train_tsv", "train_tmx", "dev_source",
                     "dev_target", "dev_tsv", "dev_tmx", "word_vocab", "bpe_vocab"):
            named += [("--" + flag, p.strip()) for p in (getattr(f, flag) or "").split(",")
                      if p.strip()]
        return named

    def check_file_systems(self):
        """Raises DatagenError when a path's scheme has no Beam file system here (gs://
        without apache-beam[gcp]): Beam would raise a ValueError with a traceback from
        whichever stage touched the path first."""
        for flag, path in self._named_paths():
            problem = file_io.filesystem_problem(path)
            if problem:
                raise DatagenError("%s %s" % (flag, problem))

    def _load_given(self, flag, path):
        try:
            return self.kind.load(path)
        except (OSError, ValueError) as e:  # BeamIOError is an OSError, bad JSON a ValueError
            raise DatagenError("%s %s: not a readable %s vocabulary (%s)" % (
                flag, path, self.kind.name, one_line(e))) from None

    def check_given_vocabs(self):
        """Loads the vocabularies the flags name (--word_vocab, --bpe_vocab) before anything
        runs, so a missing file, or a --bpe_eos_token the vocabulary lacks, is a one-line
        error (exit 2) instead of a traceback in the encode pass."""
        flag = self.kind.given_flag
        for path in self.kind.given_files(self.flags):
            missing = self.kind.missing(path)
            if missing:
                raise DatagenError("%s %s: %s" % (flag, path, missing))
            self.check_eos_token(self._load_given(flag, path), path)

    def check_eos_token(self, encoder, path):
        """Raises DatagenError when a vocabulary lacks the ids that end every example (a
        byte_bpe vocabulary without --bpe_eos_token)."""
        try:
            self.kind.eos_ids(encoder, self.config.vocab.bpe_eos_token)
        except ValueError:
            raise DatagenError("--bpe_eos_token %r is not in the vocabulary %s" % (
                self.config.vocab.bpe_eos_token, path)) from None

    def check_output_writable(self):
        """Writes and deletes a file in the work directory, so an --output_dir under a
        regular file, in /proc or without permission stops the job with one line before any
        pass runs (a pass would fail with a worker's traceback)."""
        probe = FileSystems.join(self.layout.work_dir, "write-test")
        try:
            with FileSystems.create(probe, compression_type=CompressionTypes.UNCOMPRESSED) as f:
                f.write(b"")
            FileSystems.delete([probe])
        except OSError as e:  # BeamIOError is an OSError too
            raise DatagenError("--output_dir %s: cannot write there (%s)" % (
                self.layout.output_dir, one_line(e))) from None

    # -- running passes -------------------------------------------------------------------
    def run_pass(self, label, build):
        if self.lock is not None:
            self.lock.check()
        self.pass_count += 1
        LOG.info("pass %d: %s", self.pass_count, label)
        start = time.time()
        pipeline = beam.Pipeline(options=self.options)
        build(pipeline)
        if self.dry_run and runner_name(self.options) != "dataflow":
            # Only Dataflow has a dry run of its own; elsewhere translating is the dry run.
            pipeline.to_runner_api()
            LOG.info("pass %d translated (dry run)", self.pass_count)
            return 0.0
        stop = threading.Event()
        number = self.pass_count

        def heartbeat():
            while not stop.wait(PROGRESS_SECONDS):
                LOG.info("pass %d still running, %.0f s so far", number, time.time() - start)

        threading.Thread(target=heartbeat, daemon=True).start()
        try:
            result = pipeline.run()
            state = result.wait_until_finish()
        except BaseException:
            signum = self.interrupted()
            if signum is not None:
                # Beam may have wrapped Interrupted into its own error; workers still
                # running (an in-process signal) must not write on into the work directory.
                kill_worker_processes()
                raise Interrupted(signum) from None
            raise
        finally:
            stop.set()
        if state not in (None, beam.runners.runner.PipelineState.DONE):
            raise RuntimeError("pass %d (%s) ended in state %s" % (self.pass_count, label, state))
        seconds = time.time() - start
        LOG.info("pass %d done in %.1f s", self.pass_count, seconds)
        return seconds

    def _timed(self, stage, fn, *args):
        start = time.time()
        value = fn(*args)
        self.stages[stage] = {"seconds": round(time.time() - start, 3)}
        return value

    # -- the job ---------------------------------------------------------------------------
    def plan(self, **expand):
        f = self.flags
        datasets = {"train": plan_datasets(f, "train", **expand)}
        if f.dev_source or f.dev_tsv or f.dev_tmx:
            datasets["dev"] = plan_datasets(f, "dev", **expand)
        return datasets

    def prepare_inputs(self, datasets):
        """The prepare stage of `datasets` as a transform to apply to a pipeline, and its label."""
        every = [ds for split in sorted(datasets) for ds in datasets[split]]
        structured = [dataclasses.asdict(ds) for ds in every if not ds.read_in_place]
        paths = sorted({p for ds in every if ds.read_in_place for p in (ds.source, ds.target)})
        label = "prepare: scan %d files, convert %d datasets" % (len(paths), len(structured))
        return PrepareInputs(paths, structured, self.layout.work("materialized"),
                             self.config.read, self.layout.work("prepare.json")), label

    def prepare(self, datasets):
        """Runs the prepare pass; returns {split: [Prepared]} or raises DatagenError."""
        transform, label = self.prepare_inputs(datasets)
        self.run_pass(label, lambda p: p | "Prepare" >> transform)
        return self.read_prepared(datasets)

    def read_prepared(self, datasets):
        """The prepare stage's facts as {split: [Prepared]}; raises DatagenError on bad input."""
        read = self.config.read
        every = [ds for split in sorted(datasets) for ds in datasets[split]]
        result = file_io.read_work_json(self.layout.work("prepare.json"))
        facts = dict(result.get("files", []))
        materialized = {(m["split"], m["index"]): m for m in result.get("materialized", [])}
        problems = []
        prepared = {split: [] for split in datasets}
        for ds in every:
            if ds.read_in_place:
                sf, tf_ = facts[ds.source], facts[ds.target]
                unreadable = [fact["error"] for fact in (sf, tf_) if "error" in fact]
                if unreadable:
                    problems.extend(e for e in unreadable if e not in problems)
                    continue
                for path, fact in ((ds.source, sf), (ds.target, tf_)):
                    if fact["first_invalid_utf8_line"] and read.on_invalid_utf8 == "error":
                        problems.append("%s:%d: invalid UTF-8 (--on_invalid_utf8 reject|replace "
                                        "to go on)" % (path, fact["first_invalid_utf8_line"]))
                if sf["lines"] != tf_["lines"] and read.on_misaligned == "error":
                    problems.append("%s: line counts differ: %s has %d lines, %s has %d lines" % (
                        ds.split, ds.source, sf["lines"], ds.target, tf_["lines"]))
                prepared[ds.split].append(Prepared(dataclasses.asdict(ds), ds.source, ds.target,
                                                   sf, tf_, max(sf["lines"], tf_["lines"])))
            else:
                m = materialized[(ds.split, ds.index)]
                if "error" in m:
                    problems.append(m["error"])
                    continue
                prepared[ds.split].append(Prepared(
                    dataclasses.asdict(ds), m["source_path"], m["target_path"],
                    m["facts"]["source"], m["facts"]["target"], m["units"], m["rejects_path"]))
        if problems:
            raise DatagenError("bad input, nothing written: " + "; ".join(problems))
        return prepared

    def vocab_plan(self, datasets):
        """{vocab name: (vocab path in the output, [train datasets])}."""
        f = self.flags
        kind = self.kind
        train = datasets["train"]
        if f.shared_vocab or len(kind.given_files(f)) == 1:
            return {"shared": (self.layout.vocab_path(kind), train)}
        first = train[0]
        src_lang = f.source_lang or (lang_of(first.source) if first.target else None)
        tgt_lang = f.target_lang or (lang_of(first.target) if first.target else None)
        if not src_lang or not tgt_lang:
            raise DatagenError("pass --source_lang and --target_lang (vocab file suffixes), "
                               "or --shared_vocab")
        if src_lang == tgt_lang:
            raise DatagenError("source and target language are both %r: pass --source_lang/"
                               "--target_lang, or --shared_vocab" % src_lang)
        return {"source": (self.layout.vocab_path(kind, src_lang), train),
                "target": (self.layout.vocab_path(kind, tgt_lang), train)}

    def _given_vocabs(self, plan):
        """{name: path} of vocabularies the user supplied (--bpe_vocab, --word_vocab)."""
        files = self.kind.given_files(self.flags)
        if len(files) > 2:
            raise DatagenError("%s takes FILE or SOURCE_FILE,TARGET_FILE" % self.kind.given_flag)
        return dict(zip(sorted(plan), files)) if len(files) == 2 else dict(
            {"shared": files[0]} if files else {})

    def check_reused_vocab(self, path):
        """Raises DatagenError when an existing vocab file was made from other vocab inputs
        or flags (e.g. left by a crashed run on another corpus); one without a fingerprint
        sidecar was put there by hand and is reused as T2T does."""
        recorded = fingerprint.read_sidecar(path)
        if recorded is None:
            LOG.info("%s has no %s: reused as given", path, fingerprint.sidecar_path(path))
            return
        changes = fingerprint.differences(recorded, self.vocab_fingerprint)
        if changes:
            raise DatagenError("%s was made from other vocab inputs/flags: %s; pass "
                               "--overwrite to relearn it" % (path, "; ".join(changes)))

    def _write_vocab(self, path, content):
        """Writes a vocab file, or for byte_bpe the directory's files (merges.txt last).

        Its fingerprint sidecar goes first, so a vocab file this job wrote never lacks one
        (a sidecar without its vocab file is rewritten with the next vocab)."""
        fingerprint.write_sidecar(path, self.vocab_fingerprint)
        self.kind.write(path, content)

    def vocabs(self, plan, datasets, prepared=None, on_prepared=None):
        """Writes, reuses or learns every vocabulary of `plan`; returns (prepared, report).

        With `prepared` None the prepare stage has not run yet: it is built into the first
        vocab pass (one pipeline fewer, which is most of a small job's time), the vocab
        sample sizes come from its scan, and `on_prepared(prepared)` runs once its facts are
        checked, before any vocabulary is written. That needs every dataset read in place and
        something to learn; otherwise the prepare pass runs on its own first.
        """
        f = self.flags
        kind = self.kind
        report = {}
        to_learn = {}
        given = self._given_vocabs(plan)
        for name, (path, train) in sorted(plan.items()):
            if name in given:
                continue
            if kind.exists(path) and not f.overwrite:
                self.check_reused_vocab(path)
                LOG.info("vocab %s: reusing %s", name, path)
                encoder = kind.load(path)
                self.check_eos_token(encoder, path)
                report[name] = {"path": path, "size": encoder.vocab_size, "reused": True}
                continue
            to_learn[name] = train
        every = [ds for items in datasets.values() for ds in items]
        if prepared is None and not (to_learn and all(ds.read_in_place for ds in every)):
            prepared = self._timed("prepare", self.prepare, datasets)
            on_prepared(prepared)
        facts = {}
        first_pass = None
        if prepared is None:
            transform, label = self.prepare_inputs(datasets)

            def read_back():
                facts["prepared"] = self.read_prepared(datasets)
                on_prepared(facts["prepared"])

            first_pass = (lambda p: p | "Prepare" >> transform, label, read_back)
            self.stages["prepare"] = {"seconds": 0.0, "ran_with": "vocab"}
        else:
            facts["prepared"] = prepared
        for name in sorted(given):
            encoder = kind.load(given[name])
            content, note = kind.content_of(encoder)
            if note:
                LOG.info("vocab %s: %s %s", name, given[name], note)
            self._write_vocab(plan[name][0], content)
            report[name] = {"path": plan[name][0], "size": encoder.vocab_size, "reused": False,
                            "given": given[name]}
        if not to_learn:
            return facts["prepared"], report
        report.update(self._learn_vocabs(plan, to_learn, prepared, first_pass))
        return facts["prepared"], report

    def _learn_vocabs(self, plan, to_learn, prepared, first_pass):
        """Runs the vocab passes of `to_learn` ({name: [train datasets]}); returns their report.

        Each vocabulary samples its side of every train dataset: the line files the prepare
        stage made, sized by its scan (`prepared`), or with `first_pass` the datasets' own
        files, sized by the scan in the same pipeline.
        """
        kind = self.kind
        by_index = {p.ds["index"]: p for p in (prepared or {}).get("train", [])}
        files = {}
        for name, train in to_learn.items():
            files[name] = []
            for ds in train:
                p = by_index.get(ds.index)
                if name in ("source", "shared"):
                    files[name].append((p.source_lines, p.source_facts["bytes"]) if p
                                       else (ds.source, None))
                if name in ("target", "shared"):
                    files[name].append((p.target_lines, p.target_facts["bytes"]) if p
                                       else (ds.target, None))
        contents, stats = kind.learn(vocab_passes, self.layout.work_dir, files,
                                     self.config, self.run_pass, first_pass)
        report = {}
        for name, content in sorted(contents.items()):
            path = plan[name][0]
            self._write_vocab(path, content)
            sampling = [s for s in stats["sampling"] if s["vocab"] == name]
            report[name] = {
                "path": path, "size": kind.load(path).vocab_size, "reused": False,
                "sampled_lines": sum(s["sampled_lines"] for s in sampling),
                "sampled_chars": sum(s["sampled_chars"] for s in sampling),
                "distinct_tokens": stats["distinct_tokens"].get(name, 0), "files": sampling}
            if name in stats.get("chosen_min_count", {}):  # learnt by bisection (subword)
                report[name]["min_count"] = stats["chosen_min_count"][name]
            LOG.info("vocab %s: %d entries -> %s", name, report[name]["size"], path)
        report["passes"] = stats["passes"]
        return report

    def _no_pairs(self, split, prepared, detail):
        """The DatagenError for a split with nothing to write, naming its inputs."""
        inputs = ", ".join(" + ".join(x for x in (p.ds["source"], p.ds["target"]) if x)
                           for p in prepared[split])
        return DatagenError("%s: no pairs to write: %s, inputs %s; pass --allow_empty to "
                            "write empty shards" % (split, detail, inputs))

    def check_has_pairs(self, prepared):
        """Raises DatagenError when a split's input holds no pair (empty files, or nothing
        left after the prepare stage's rejects), unless --allow_empty: a scheduled run over
        an empty download must fail, not publish empty shards as a complete output."""
        if self.flags.allow_empty:
            return
        for split in sorted(prepared):
            pairs = sum(min(p.source_facts["lines"], p.target_facts["lines"])
                        for p in prepared[split])
            if not pairs:
                read = sum(p.units for p in prepared[split])
                raise self._no_pairs(split, prepared, "the input is empty" if not read else
                                     "all %d units read were rejected" % read)

    def check_written(self, prepared, report):
        """Raises DatagenError, before any output is replaced, when the encode pass wrote
        no pair of a split (every pair rejected), unless --allow_empty."""
        if self.flags.allow_empty:
            return
        for split in sorted(report):
            if not report[split]["pairs_written"]:
                reasons = ", ".join("%s: %d" % kv
                                    for kv in sorted(report[split]["rejected_by_reason"].items()))
                raise self._no_pairs(split, prepared, "all %d pairs read were rejected (%s)" % (
                    report[split]["pairs_read"], reasons or "none"))

    def num_shards(self, splits):
        shards = {"train": self.flags.num_train_shards}
        if "dev" in splits:
            shards["dev"] = self.flags.num_dev_shards
        return shards

    @staticmethod
    def encoder_vocab_paths(plan):
        """(source vocab path, target vocab path); the same file twice for a shared vocab."""
        if "shared" in plan:
            return plan["shared"][0], plan["shared"][0]
        return plan["source"][0], plan["target"][0]

    def encode(self, prepared, plan):
        f = self.flags
        num_shards = self.num_shards(prepared)
        chunks = [c for split in sorted(prepared) for p in prepared[split]
                  for c in plan_chunks(p.ds, p.source_lines, p.target_lines,
                                       p.source_facts, p.target_facts)]
        earlier = [p.rejects_path for split in sorted(prepared) for p in prepared[split]
                   if p.rejects_path]
        vocab_paths = self.encoder_vocab_paths(plan)
        work_dirs = {name: self.layout.work(name) for name in ("fragments", "shards", "rejects")}
        result_path = self.layout.work("encode.json")
        for d in work_dirs.values():
            file_io.delete_tree(d)
            FileSystems.mkdirs(d)

        def build(p):
            build_encode_pass(p, chunks, vocab_paths, f.seed, f.problem, num_shards,
                              work_dirs, result_path, self.config, earlier)

        self.run_pass("encode %d chunks into %s" % (len(chunks), ", ".join(
            "%d %s shards" % (n, s) for s, n in sorted(num_shards.items()))), build)
        result = file_io.read_work_json(result_path)
        return (num_shards, result.get("shards", []), result.get("rejects", []),
                dict(result.get("tokens", [])))

    def finish(self, prepared, num_shards, shards, rejects, tokens):
        """Checks the books of every dataset, then moves outputs into place; marker last."""
        if self.lock is not None:  # a run that lost its lock must not replace the new holder's
            self.lock.check()      # files
        report = {split: books.split_report(
            split, items, num_shards[split], shards, rejects, tokens.get(split, [0, 0, 0, 0]),
            self.layout.rejects_path(split), self.kind.counts_oov)
            for split, items in sorted(prepared.items())}
        self.check_written(prepared, report)
        # Replace any previous outputs: marker first, so a crash here never looks complete.
        file_io.delete_tree(self.layout.complete_path)
        old = [m.path for split in ("train", "dev")
               for m in FileSystems.match([self.layout.shard_pattern(split)])[0].metadata_list]
        if old:
            FileSystems.delete(old)
        for split in ("train", "dev"):
            file_io.delete_tree(self.layout.rejects_path(split))
        FileSystems.rename([FileSystems.join(self.layout.work("shards"), s["name"]) for s in shards],
                           [self.layout.path(s["name"]) for s in shards])
        written_rejects = [r for r in rejects if r["rejected"]]
        if written_rejects:
            FileSystems.mkdirs(self.layout.path("rejects"))
            FileSystems.rename(
                [FileSystems.join(self.layout.work("rejects"), r["name"]) for r in written_rejects],
                [self.layout.rejects_path(r["split"]) for r in written_rejects])
        return report

    def translate_all_passes(self):
        """--dry_run: builds and translates one pass of every kind, reads and writes nothing.

        Inputs are not listed (patterns are taken as file names) and file facts are
        placeholders, so this needs no access to the input or output file systems.
        """
        f = self.flags
        datasets = self.plan(expand=literal_patterns)
        plan = self.vocab_plan(datasets)
        num_shards = self.num_shards(datasets)
        work = self.layout.work
        every = [ds for items in datasets.values() for ds in items]
        structured = [dataclasses.asdict(ds) for ds in every if not ds.read_in_place]
        prepare, _ = self.prepare_inputs(datasets)
        # As in a real run, the prepare stage rides along the first vocab pass when every
        # dataset is read in place (the files are then sized by its scan).
        with_vocab = not structured and not self._given_vocabs(plan)
        if not with_vocab:
            self.run_pass("prepare (dry run)", lambda p: p | "Prepare" >> prepare)
        files = {name: [(ds.source, None if with_vocab else 0) for ds in train]
                 for name, (_, train) in plan.items()}

        def scan(p):
            return p | "Prepare" >> prepare if with_vocab else None

        self.kind.translate(vocab_passes, self.layout.work_dir, files, self.config,
                            self.run_pass, scan)
        no_facts = {"lines": 0, "checkpoints": [(0, 0)]}
        chunks = [c for ds in every for c in plan_chunks(
            dataclasses.asdict(ds), ds.source, ds.target or ds.source, no_facts, no_facts)]
        self.run_pass("encode (dry run)", lambda p: build_encode_pass(
            p, chunks, self.encoder_vocab_paths(plan), f.seed, f.problem, num_shards,
            {name: work(name) for name in ("fragments", "shards", "rejects")},
            work("encode.json"), self.config,
            [work("materialized", "x.rejects.jsonl")] if structured else ()))
        return {"status": "dry_run", "passes": self.pass_count, "problem": f.problem,
                "runner": self.options.get_all_options().get("runner")}

    def run(self):
        f = self.flags
        layout = self.layout
        if self.dry_run:
            return self.translate_all_passes()
        self.check_file_systems()
        self.check_given_vocabs()
        # Inputs are listed and checked before the lock is written: bad input must leave
        # nothing behind, not even a new output directory.
        datasets = self.plan()
        plan = self.vocab_plan(datasets)
        self.lock = OutputLock(layout.output_dir, f.problem, f.lock_stale_seconds)
        started, t0 = _now(), time.time()
        with self.lock:
            try:
                return self._run_locked(started, t0, datasets, plan)
            except (Interrupted, KeyboardInterrupt) as e:
                self._record_failure(started, t0, e, "interrupted")
                raise

    def check_same_fingerprint(self, summary):
        """Raises DatagenError when a complete output was made from other inputs or flags:
        a scheduled rerun must not pass yesterday's output off as today's."""
        recorded = summary.get("fingerprint")
        if recorded is None:
            LOG.warning("%s records no fingerprint (written by an older version): cannot "
                        "tell whether its inputs or flags changed", self.layout.summary_path)
            return
        changes = fingerprint.differences(recorded, self.fingerprint)
        if changes:
            raise DatagenError("%s holds a complete output of other inputs/flags: %s; pass "
                               "--overwrite to replace it" % (
                                   self.layout.output_dir, "; ".join(changes)))

    def _run_locked(self, started, t0, datasets, plan):
        """The job, once this run holds the output directory's lock."""
        f = self.flags
        layout = self.layout
        flag_values = datagen_flag_values(self.options)
        self.fingerprint = fingerprint.output_fingerprint(flag_values)
        self.vocab_fingerprint = fingerprint.vocab_fingerprint(flag_values)
        if file_io.exists(layout.complete_path) and not f.overwrite:
            summary = file_io.read_json(layout.summary_path)
            self.check_same_fingerprint(summary)
            LOG.info("%s is complete (%s exists): nothing to do; pass --overwrite to redo it",
                     layout.output_dir, layout.complete_path)
            summary["noop"] = True
            return summary
        file_io.delete_tree(layout.work_dir)  # leftovers of a killed run must not be read back
        self.check_output_writable()
        writing = []

        def start_writing(prepared):
            self.check_has_pairs(prepared)
            # The input is valid: from here on this run writes into output_dir (vocab files
            # first), so a previous complete output stops being complete now, not at the end.
            file_io.delete_tree(layout.complete_path)
            file_io.write_json(layout.summary_path, self._summary("running", started, t0))
            writing.append(True)

        try:
            try:
                start = time.time()
                prepared, vocab = self.vocabs(plan, datasets, on_prepared=start_writing)
                self.stages["vocab"] = {"seconds": round(
                    time.time() - start - self.stages["prepare"]["seconds"], 3)}
                encoded = self._timed("encode", self.encode, prepared, plan)
                split_report = self._timed("finish", self.finish, prepared, *encoded)
            except Exception as e:
                if writing:
                    self._record_failure(started, t0, e)
                raise
        finally:
            file_io.delete_tree(layout.work_dir)
            parent = layout.path(WORK_NAME)
            if FileSystems.exists(parent) and not FileSystems.match(
                    [FileSystems.join(parent, "*")])[0].metadata_list:
                FileSystems.delete([parent])  # no other problem's run is using it
        summary = self._summary("complete", started, t0, vocab=vocab, splits=split_report)
        file_io.write_json(layout.summary_path, summary)
        file_io.write_bytes_atomically(layout.complete_path, (summary["finished_at"] + "\n").encode())
        return summary

    def _summary(self, status, started, t0, **facts):
        f = self.flags
        summary = {
            "status": status, "started_at": started, "finished_at": _now(),
            "seconds": round(time.time() - t0, 3), "problem": f.problem, "seed": f.seed,
            "flags": datagen_flag_values(self.options),
            "runner": self.options.get_all_options().get("runner"),
            "passes": self.pass_count, "stages": self.stages,
            "fingerprint": self.fingerprint}
        summary.update(facts)
        return summary

    def _record_failure(self, started, t0, error, status="failed"):
        """A failed or interrupted run leaves a summary saying so (unless a complete output
        is still there: then the summary describes that output)."""
        if file_io.exists(self.layout.complete_path):
            return
        try:
            file_io.write_json(self.layout.summary_path, self._summary(
                status, started, t0, error="%s: %s" % (type(error).__name__, error)))
        except Exception:  # the original error matters more
            LOG.exception("could not write the failure summary")


def run(argv=None, interrupted=lambda: None):
    """Runs the job; returns the summary dict. Raises DatagenError on bad input or flags,
    Interrupted when `interrupted()` reports a signal."""
    argv = list(sys.argv[1:] if argv is None else argv)
    check_known_flags(argv)
    options = PipelineOptions(argv)
    return DatagenJob(options, interrupted).run()


class _StderrHandler(logging.StreamHandler):
    """Logs to whatever sys.stderr is when a record is written (callers may replace it)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _):
        pass


def print_help():
    import argparse
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.datagen",
        description="Tensor2Tensor-compatible translation datagen on Apache Beam.",
        epilog="Every Apache Beam pipeline option is accepted too (--runner, "
               "--direct_num_workers, --project, --setup_file, ...).")
    DatagenOptions._add_argparse_args(parser)
    parser.print_help()


def main(argv=None):
    argv = list(argv if argv is not None else sys.argv[1:])
    if "-h" in argv or "--help" in argv:
        print_help()
        return 0
    if not any(isinstance(h, _StderrHandler) for h in LOG.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S"))
        LOG.addHandler(handler)
        LOG.setLevel(logging.INFO)
        LOG.propagate = False
    try:
        with InterruptWatcher() as watcher:
            summary = run(argv, lambda: watcher.received)
    except DatagenError as e:
        LOG.error("%s", one_line(e))
        return 2
    except (Interrupted, KeyboardInterrupt) as e:
        stopped = e if isinstance(e, Interrupted) else Interrupted(signal.SIGINT)
        LOG.error("interrupted (%s)", stopped)
        return stopped.exit_status
    if summary["status"] == "dry_run":
        print("dry run: %d passes translated for runner %s; nothing was run or written"
              % (summary["passes"], summary["runner"]))
        return 0
    print(format_summary(summary))
    return 0


if __name__ == "__main__":
    status = main()
    if status > 128:
        # Interrupted: Beam's threads waiting on killed workers would delay or garble the
        # exit; everything the run had to clean up is done.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)
