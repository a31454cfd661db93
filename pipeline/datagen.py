"""`python -m pipeline.datagen`: Tensor2Tensor's t2t-datagen for translation, on Apache Beam.

One command turns line-aligned parallel text into T2T subword vocabularies and sharded,
globally shuffled TFRecord files of `tf.train.Example`s (`inputs`, `targets`: ids + EOS).
The job runs as several Beam pipelines (passes), each on the runner given by the Beam options:

1. scan: line counts, sizes and UTF-8 validity of every file; misaligned pairs stop the job
   here, before anything is written;
2. vocab passes (`pipeline.vocab_passes`), unless the vocab files already exist;
3. encode: encode every pair in parallel, shuffle deterministically and write the shards
   under a temporary directory;
4. finish: check that pairs read = written + rejected, move shards and rejects into place,
   write the JSON summary and, last, the completion marker.

Example:
  python -m pipeline.datagen --train_source 'data/train.en' --train_target 'data/train.zh' \\
      --output_dir /tmp/t2t_data --runner DirectRunner
"""

import datetime
import logging
import sys
import threading
import time

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from pipeline import vocab_passes
from pipeline.layout import OutputLayout, lang_of
from pipeline.options import DatagenOptions, datagen_flag_values
from pipeline.runners import DatagenError, check_workers_can_import_project, is_dry_run, runner_name
from pipeline.summary import format_summary
from transforms import file_io
from transforms.codecs.subword import vocab_file_text
from transforms.encode_pairs import EncodePairs, load_subword_vocab, plan_chunks
from transforms.file_scan import ScanTextFiles
from transforms.json_result import WriteJsonResult
from transforms.shuffled_shards import WriteRejects, WriteShuffledShards

LOG = logging.getLogger("datagen")
PROGRESS_SECONDS = 60  # a long pass logs that it is still running this often


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _delete_tree(path):
    if FileSystems.exists(path):
        FileSystems.delete([path])


def build_scan_pass(p, paths, checkpoint_every, result_path):
    facts = (p | "Paths" >> beam.Create(paths)
             | "Scan" >> ScanTextFiles(checkpoint_every)
             | "AsList" >> beam.Map(list))
    _ = {"files": facts} | "Result" >> WriteJsonResult(result_path)


def build_encode_pass(p, chunks, vocab_paths, seed, problem, num_shards, shard_dir, rejects_dir,
                      result_path):
    encoded = (p | "Chunks" >> beam.Create(chunks)
               | "Encode" >> EncodePairs(vocab_paths[0], vocab_paths[1], seed, num_shards))
    shards = encoded.records | "Write" >> WriteShuffledShards(problem, num_shards, shard_dir)
    rejects = encoded.rejects | "Rejects" >> WriteRejects(rejects_dir)
    _ = {"shards": shards, "rejects": rejects} | "Result" >> WriteJsonResult(result_path)


class DatagenJob:
    def __init__(self, options):
        self.options = options
        self.flags = options.view_as(DatagenOptions)
        f = self.flags
        for name in ("train_source", "train_target", "output_dir"):
            if not getattr(f, name):
                raise DatagenError("--%s is required" % name)
        if bool(f.dev_source) != bool(f.dev_target):
            raise DatagenError("--dev_source and --dev_target go together")
        if f.vocab_size < 1:
            raise DatagenError("--vocab_size must be positive")
        check_workers_can_import_project(options)
        self.dry_run = is_dry_run(options)
        self.layout = OutputLayout(file_io.absolute(f.output_dir), f.problem, f.vocab_size)
        self.stages = {}
        self.pass_count = 0

    # -- running passes -------------------------------------------------------------------
    def run_pass(self, label, build):
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
    def splits(self):
        f = self.flags
        splits = {"train": (file_io.expand_patterns(f.train_source),
                            file_io.expand_patterns(f.train_target))}
        if f.dev_source:
            splits["dev"] = (file_io.expand_patterns(f.dev_source),
                             file_io.expand_patterns(f.dev_target))
        for split, (sources, targets) in splits.items():
            if len(sources) != len(targets):
                raise DatagenError("%s: %d source files but %d target files (%s vs %s)" % (
                    split, len(sources), len(targets), sources, targets))
        return splits

    def scan(self, splits):
        paths = sorted({p for pair in splits.values() for files in pair for p in files})
        result_path = self.layout.work("scan.json")

        self.run_pass("scan %d files" % len(paths),
                      lambda p: build_scan_pass(p, paths, self.flags.encode_chunk_lines, result_path))
        facts = dict(file_io.read_json(result_path)["files"])
        problems = []
        for path in paths:
            if facts[path]["first_invalid_utf8_line"]:
                problems.append("%s:%d: invalid UTF-8" % (path, facts[path]["first_invalid_utf8_line"]))
        for split, (sources, targets) in splits.items():
            for src, tgt in zip(sources, targets):
                if facts[src]["lines"] != facts[tgt]["lines"]:
                    problems.append("%s: line counts differ: %s has %d lines, %s has %d lines" % (
                        split, src, facts[src]["lines"], tgt, facts[tgt]["lines"]))
        if problems:
            raise DatagenError("bad input, nothing written:\n  " + "\n  ".join(problems))
        return facts

    def vocab_plan(self, splits):
        """{vocab name: (vocab path, [train files])}."""
        f = self.flags
        sources, targets = splits["train"]
        if f.shared_vocab:
            return {"shared": (self.layout.vocab_path(None), sources + targets)}
        src_lang = f.source_lang or lang_of(sources[0])
        tgt_lang = f.target_lang or lang_of(targets[0])
        if src_lang == tgt_lang:
            raise DatagenError("source and target language are both %r: pass --source_lang/"
                               "--target_lang, or --shared_vocab" % src_lang)
        return {"source": (self.layout.vocab_path(src_lang), sources),
                "target": (self.layout.vocab_path(tgt_lang), targets)}

    def vocabs(self, plan, facts):
        f = self.flags
        report = {}
        to_learn = {}
        for name, (path, files) in sorted(plan.items()):
            if file_io.exists(path) and not f.overwrite:
                LOG.info("vocab %s: reusing %s", name, path)
                size = load_subword_vocab(path).vocab_size
                report[name] = {"path": path, "size": size, "reused": True}
            else:
                to_learn[name] = [(p, facts[p]["bytes"]) for p in files]
        if to_learn:
            learnt, stats = vocab_passes.learn_subword_vocabs(
                self.options, self.layout.work_dir, to_learn, self._vocab_config(), self.run_pass)
            for name, vocab in sorted(learnt.items()):
                path = plan[name][0]
                file_io.write_bytes_atomically(path, vocab_file_text(vocab).encode("utf-8"))
                sampling = [s for s in stats["sampling"] if s["vocab"] == name]
                report[name] = {
                    "path": path, "size": len(vocab), "reused": False,
                    "min_count": stats["chosen_min_count"][name],
                    "sampled_lines": sum(s["sampled_lines"] for s in sampling),
                    "sampled_chars": sum(s["sampled_chars"] for s in sampling),
                    "distinct_tokens": stats["distinct_tokens"].get(name, 0),
                    "files": sampling}
                LOG.info("vocab %s: %d subtokens (min_count %d) -> %s", name, len(vocab),
                         stats["chosen_min_count"][name], path)
            report["passes"] = stats["passes"]
        return report

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

    def encode(self, splits, facts, plan):
        f = self.flags
        num_shards = self.num_shards(splits)
        chunks = []
        for split, (sources, targets) in sorted(splits.items()):
            for index, (src, tgt) in enumerate(zip(sources, targets)):
                chunks.extend(plan_chunks(split, index, src, tgt, facts[src], facts[tgt]))
        vocab_paths = self.encoder_vocab_paths(plan)
        shard_dir = self.layout.work("shards")
        rejects_dir = self.layout.work("rejects")
        result_path = self.layout.work("encode.json")
        for d in (shard_dir, rejects_dir):
            _delete_tree(d)
            FileSystems.mkdirs(d)

        def build(p):
            build_encode_pass(p, chunks, vocab_paths, f.seed, f.problem, num_shards,
                              shard_dir, rejects_dir, result_path)

        self.run_pass("encode %d chunks into %s" % (len(chunks), ", ".join(
            "%d %s shards" % (n, s) for s, n in sorted(num_shards.items()))), build)
        result = file_io.read_json(result_path)
        return num_shards, result.get("shards", []), result.get("rejects", [])

    def finish(self, splits, facts, num_shards, shards, rejects):
        """Checks the books, then moves outputs into place; the marker comes last."""
        report = {}
        for split, (sources, _) in sorted(splits.items()):
            read = sum(facts[p]["lines"] for p in sources)
            split_shards = sorted((s for s in shards if s["split"] == split), key=lambda s: s["shard"])
            written = sum(s["records"] for s in split_shards)
            split_rejects = [r for r in rejects if r["split"] == split]
            rejected = sum(r["rejected"] for r in split_rejects)
            by_reason = {}
            for r in split_rejects:
                for reason, n in r["by_reason"].items():
                    by_reason[reason] = by_reason.get(reason, 0) + n
            if len(split_shards) != num_shards[split] or read != written + rejected:
                raise RuntimeError("%s: books do not balance: %d pairs read, %d written, %d rejected, "
                                   "%d of %d shards" % (split, read, written, rejected,
                                                        len(split_shards), num_shards[split]))
            report[split] = {"pairs_read": read, "pairs_written": written, "pairs_rejected": rejected,
                             "rejected_by_reason": by_reason,
                             "rejects_file": self.layout.rejects_path(split) if rejected else None,
                             "shards": [{"name": s["name"], "records": s["records"]} for s in split_shards]}
        # Replace any previous outputs: marker first, so a crash here never looks complete.
        _delete_tree(self.layout.complete_path)
        old = [m.path for split in num_shards
               for m in FileSystems.match([self.layout.shard_pattern(split)])[0].metadata_list]
        if old:
            FileSystems.delete(old)
        _delete_tree(self.layout.path("rejects"))
        src = [FileSystems.join(self.layout.work("shards"), s["name"]) for s in shards]
        dst = [self.layout.path(s["name"]) for s in shards]
        FileSystems.rename(src, dst)
        if rejects:
            FileSystems.mkdirs(self.layout.path("rejects"))
            FileSystems.rename([FileSystems.join(self.layout.work("rejects"), r["name"]) for r in rejects],
                               [self.layout.rejects_path(r["split"]) for r in rejects])
        return report

    def translate_all_passes(self):
        """--dry_run: builds and translates one pass of every kind, reads and writes nothing.

        Inputs are not listed (patterns are taken as file names) and file facts are
        placeholders, so this needs no access to the input or output file systems.
        """
        f = self.flags
        splits = {"train": (f.train_source.split(","), f.train_target.split(","))}
        if f.dev_source:
            splits["dev"] = (f.dev_source.split(","), f.dev_target.split(","))
        plan = self.vocab_plan(splits)
        num_shards = self.num_shards(splits)
        work = self.layout.work
        paths = sorted({p for pair in splits.values() for files in pair for p in files})
        self.run_pass("scan (dry run)", lambda p: build_scan_pass(
            p, paths, f.encode_chunk_lines, work("scan.json")))
        config = self._vocab_config()
        files = {name: [(path, 0) for path in plan_files] for name, (_, plan_files) in plan.items()}
        probes = vocab_passes.SubwordVocabSearch(sorted(plan), f.vocab_size,
                                                 f.bisection_lookahead).next_probes()
        prefix = vocab_passes.token_checkpoint_prefix(self.layout.work_dir)
        self.run_pass("first vocab pass (dry run)", lambda p: vocab_passes.build_vocab_pass(
            p, files, probes, None, prefix, work("vocab_pass_001.json"), config))
        self.run_pass("later vocab pass (dry run)", lambda p: vocab_passes.build_vocab_pass(
            p, None, probes, {name: [] for name in plan}, prefix, work("vocab_pass_002.json"),
            config))
        no_facts = {"lines": 0, "checkpoints": [(0, 0)]}
        chunks = [c for split, (sources, targets) in sorted(splits.items())
                  for i, (s, t) in enumerate(zip(sources, targets))
                  for c in plan_chunks(split, i, s, t, no_facts, no_facts)]
        self.run_pass("encode (dry run)", lambda p: build_encode_pass(
            p, chunks, self.encoder_vocab_paths(plan), f.seed, f.problem, num_shards,
            work("shards"), work("rejects"), work("encode.json")))
        return {"status": "dry_run", "passes": self.pass_count, "problem": f.problem,
                "runner": self.options.get_all_options().get("runner")}

    def _vocab_config(self):
        f = self.flags
        return {"vocab_size": f.vocab_size, "max_subtoken_length": f.max_subtoken_length,
                "file_byte_budget": f.file_byte_budget, "vocab_partitions": f.vocab_partitions,
                "bisection_lookahead": f.bisection_lookahead}

    def run(self):
        f = self.flags
        layout = self.layout
        if self.dry_run:
            return self.translate_all_passes()
        if file_io.exists(layout.complete_path) and not f.overwrite:
            LOG.info("%s is complete (%s exists): nothing to do; pass --overwrite to redo it",
                     layout.output_dir, layout.complete_path)
            summary = file_io.read_json(layout.summary_path)
            summary["noop"] = True
            return summary
        started, t0 = _now(), time.time()
        splits = self.splits()
        plan = self.vocab_plan(splits)
        _delete_tree(layout.work_dir)  # leftovers of a killed run must not be read back
        try:
            facts = self._timed("scan", self.scan, splits)
            try:
                vocab = self._timed("vocab", self.vocabs, plan, facts)
                num_shards, shards, rejects = self._timed("encode", self.encode, splits, facts, plan)
                split_report = self._timed("finish", self.finish, splits, facts, num_shards,
                                           shards, rejects)
            except Exception as e:
                self._record_failure(started, t0, e)
                raise
        finally:
            _delete_tree(layout.work_dir)
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
            "passes": self.pass_count, "stages": self.stages}
        summary.update(facts)
        return summary

    def _record_failure(self, started, t0, error):
        """A failed run leaves a summary saying so (unless a complete output is still there)."""
        if file_io.exists(self.layout.complete_path):
            return
        try:
            file_io.write_json(self.layout.summary_path, self._summary(
                "failed", started, t0, error="%s: %s" % (type(error).__name__, error)))
        except Exception:  # the original error matters more
            LOG.exception("could not write the failure summary")


def run(argv=None):
    """Runs the job; returns the summary dict. Raises DatagenError on bad input or flags."""
    options = PipelineOptions(argv)
    return DatagenJob(options).run()


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
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S"))
    LOG.addHandler(handler)
    LOG.setLevel(logging.INFO)
    LOG.propagate = False
    try:
        summary = run(argv)
    except DatagenError as e:
        LOG.error("%s", e)
        return 2
    if summary["status"] == "dry_run":
        print("dry run: %d passes translated for runner %s; nothing was run or written"
              % (summary["passes"], summary["runner"]))
        return 0
    print(format_summary(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
