"""`python -m pipeline.datagen`: Tensor2Tensor's t2t-datagen for translation, on Apache Beam.

One command turns parallel text (line-aligned files, TSV, TMX, SGM, IWSLT XML, members of
archives) into T2T subword vocabularies and sharded, globally shuffled TFRecord files of
`tf.train.Example`s (`inputs`, `targets`: ids + EOS). The job runs as several Beam pipelines
(passes), each on the runner given by the Beam options:

1. plan (`pipeline.driver.datasets`, `VocabStep.plan`): which files form which dataset, which
   vocabularies are needed; nothing is read yet;
2. prepare (`pipeline.driver.prepare`): line counts, sizes and UTF-8 validity of every line-aligned
   file, and every other dataset converted into line pairs; misaligned or invalid input
   stops the job here, before anything is written (unless told to reject it). When every
   dataset is read in place and a vocabulary is learnt, this scan rides along in the first
   vocab pass (one pipeline fewer: a pipeline's fixed cost is much of a small job's time);
3. vocab (`pipeline.driver.vocabularies`, `pipeline.driver.vocab_passes`): each vocabulary given, reused
   or learnt, as its VocabKind says;
4. encode (`pipeline.driver.encode`): encode every pair in parallel, shuffle deterministically and
   write the shards under the work directory;
5. commit (`pipeline.output.books`, `pipeline.output.commit`): check that pairs read = written + rejected
   for every dataset, move shards and rejects into place, write the JSON summary and, last,
   the completion marker.

Every pass runs through one `PassRunner` (`pipeline.driver.passes`); `--dry_run` builds the same
passes with the same builders and only translates them.

Example:
  python -m pipeline.datagen --train_source 'data/train.en' --train_target 'data/train.zh' \\
      --output_dir /tmp/t2t_data --runner DirectRunner
"""

import signal

if __name__ == "__main__":
    # Before any import starts a thread: every thread must block these for the driver to
    # hear them while its worker processes ignore them (see pipeline.runtime.interrupts).
    signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGTERM))
    # The worker processes' fork server imports Beam beside the driver's own imports.
    import sys
    from pipeline.runtime import local_worker_pool
    local_worker_pool.start_early(sys.argv[1:])

import argparse  # noqa: E402 (after the signal mask, on purpose)
import contextlib
import datetime
import functools
import logging
import sys
import time
import uuid

from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from pipeline.output import books, commit
from pipeline.runtime import console, local_worker_pool, staging
from pipeline.driver import fingerprint, preflight
from pipeline.output.complete_check import missing_outputs, read_summary
from pipeline.driver.encode import EncodeStep
from pipeline.runtime.interrupts import InterruptWatcher, Interrupted
from pipeline.output.lock import OutputLock
from pipeline.driver.datasets import expand_listing, literal_patterns, plan_datasets
from pipeline.output.layout import OutputLayout
from pipeline.driver.options import (check_known_flags, datagen_config, datagen_flag_values,
                                     job_flag_parser, parse_flags, validate_flags)
from pipeline.driver.passes import PassFailed, PassRunner, WorkerDied
from pipeline.driver.prepare import PrepareStep, rides_along
from pipeline.runtime.storage_errors import storage_error, storage_message
from pipeline.runtime.runners import (DatagenError, check_workers_can_import_project, is_dry_run,
                              one_line, run_small_input_in_process)
from pipeline.output.summary import format_summary
from pipeline.driver.vocabularies import VocabStep, encoder_vocab_paths
from transforms.storage import file_io
from transforms.length_stats import summary_lengths

LOG = logging.getLogger("datagen")


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class DatagenJob:
    """One run: plan -> prepare -> vocab -> encode -> commit, and the summary of it.

    Each step is its own object with one job (`PrepareStep`, `VocabStep`, `EncodeStep`,
    `pipeline.output.commit`); every pass goes through one `PassRunner`. This class only orders
    them, holds the lock, and records what happened (stages, summary, failure).
    """

    def __init__(self, flags, options, interrupted=lambda: None):
        """`flags`: the job's own flags (`pipeline.driver.options.parse_flags`); `options`: Beam's
        PipelineOptions of every pass; `interrupted()`: the signal number that stopped the
        run, or None (`InterruptWatcher.received`)."""
        self.options = options
        # The driver's own file work (listing, fingerprint, lock, commit) runs before any
        # Pipeline hands these options to FileSystems: without them s3:// has no endpoint
        # or credentials, gs:// no project.
        FileSystems.set_options(options)
        self.flags = flags
        f = self.flags
        validate_flags(f)
        check_workers_can_import_project(options)
        self.config = datagen_config(f)  # what the passes read; built once, never changed
        self.run_id = uuid.uuid4().hex
        self.layout = OutputLayout(file_io.absolute(f.output_dir), f.problem, f.vocab_size,
                                   self.run_id)
        self.run_pass = PassRunner(options, is_dry_run(options), interrupted, flags.log_level)
        # One client per object store for the driver's own lease, marker and summary writes.
        self.stores = self.run_pass.stores
        self.prepare = PrepareStep(self.layout, self.config.read, self.stores)
        self.vocab = VocabStep(f, self.config, self.layout, self.run_pass)
        self.encode = EncodeStep(self.layout, self.config, f.seed, f.problem, self.run_pass)
        self.stages = {}
        self.fingerprint = None         # pipeline.driver.fingerprint.output_fingerprint

    def _timed(self, stage, fn, *args):
        start = time.time()
        value = fn(*args)
        self.stages[stage] = {"seconds": round(time.time() - start, 3)}
        return value

    # -- plan ------------------------------------------------------------------------------
    def plan(self, **expand):
        """{split: [Dataset]} of the flags (`expand`: how patterns are listed; by default
        with the job's store clients)."""
        expand = expand or {"expand": functools.partial(expand_listing, stores=self.stores)}
        f = self.flags
        datasets = {"train": plan_datasets(f, "train", **expand)}
        if f.dev_source or f.dev_tsv or f.dev_tmx:
            datasets["dev"] = plan_datasets(f, "dev", **expand)
        return datasets

    def num_shards(self, splits):
        shards = {"train": self.flags.num_train_shards}
        if "dev" in splits:
            shards["dev"] = self.flags.num_dev_shards
        return shards

    # -- prepare and vocab -----------------------------------------------------------------
    def prepare_and_vocab(self, datasets, plan, on_prepared):
        """Runs the prepare step and the vocab step; returns (prepared, vocab report).

        Reused vocabularies are checked first. When the prepare stage rides along the first
        vocab pass (`pipeline.driver.prepare.rides_along`), `on_prepared(prepared)` runs once its
        facts are checked, right after that pass and before any vocabulary is written;
        otherwise the prepare pass runs on its own first.
        """
        report, given, to_learn = self.vocab.choose(plan)
        prepared = {}
        first_pass = None
        riding = rides_along(datasets, to_learn)
        learning = self.vocab.kind.learning_passes
        self.run_pass.expect((0 if riding else 1) + ((learning or 1) if to_learn else 0) + 1,
                             exact=not to_learn or learning is not None)
        if riding:
            def read_back():
                prepared.update(self.prepare.read_back(datasets))
                on_prepared(prepared)

            first_pass = self.prepare.riding(datasets, read_back)
            self.stages["prepare"] = {"seconds": 0.0, "ran_with": "vocab"}
        else:
            prepared.update(self._timed("prepare", self.prepare.run, self.run_pass, datasets))
            on_prepared(prepared)
        report.update(self.vocab.write_given(plan, given))
        if to_learn:
            report.update(self.vocab.learn(plan, to_learn, None if first_pass else prepared,
                                           first_pass))
        return prepared, report

    # -- commit ----------------------------------------------------------------------------
    def finish(self, prepared, num_shards, shards, rejects, tokens):
        """Checks the books of every dataset, then moves outputs into place; marker last."""
        self.run_pass.lock.check()  # a run that lost its lock must not replace the new
        report = {split: books.split_report(  # holder's files
            split, items, num_shards[split], shards, rejects, tokens.get(split, [0, 0, 0, 0]),
            self.layout.rejects_path(split), self.vocab.kind.counts_oov)
            for split, items in sorted(prepared.items())}
        if not self.flags.allow_empty:
            books.check_written(prepared, report)
        for difference in books.compare_with_counters(report, self.run_pass.counters):
            LOG.warning("%s", difference)
        commit.promote_outputs(self.layout, shards, rejects, self.stores)
        return report

    # -- the job ---------------------------------------------------------------------------
    def dry_run(self):
        """--dry_run: builds and translates every kind of pass with the real run's builders;
        reads and writes nothing.

        Inputs are not listed (patterns are taken as file names) and file facts are
        placeholders, so this needs no access to the input or output file systems.
        """
        f = self.flags
        datasets = self.plan(expand=literal_patterns)
        plan = self.vocab.plan(datasets)
        given = self.vocab.given(plan)
        first_pass = None
        if rides_along(datasets, {n: v for n, v in plan.items() if n not in given}):
            first_pass = self.prepare.riding(datasets, lambda: None)
        else:
            self.run_pass(*self.prepare.build(datasets))
        self.vocab.dry_run(plan, first_pass)
        self.encode.dry_run(datasets, encoder_vocab_paths(plan), self.num_shards(datasets))
        return {"status": "dry_run", "passes": self.run_pass.count, "problem": f.problem,
                "runner": self.options.get_all_options().get("runner")}

    def run(self):
        # A Dataflow dry run needs no network; a --setup_file sdist is built once per job.
        staging.offline_dry_run(self.options)
        try:
            with staging.project_sdist_once(self.options):
                return self._run()
        except Exception as e:
            if isinstance(e, DatagenError) or storage_error(e) is None:
                raise
            raise DatagenError(storage_message(e, self.layout.output_dir)) from None
        finally:
            self.run_pass.close()  # worker processes the passes shared

    def _run(self):
        f = self.flags
        if self.run_pass.dry_run:
            return self.dry_run()
        preflight.check_file_systems(f)
        self.vocab.check_given()
        # Inputs are listed and checked before the lock is written: bad input must leave
        # nothing behind, not even a new output directory.
        datasets = self.plan()
        plan = self.vocab.plan(datasets)
        lock = OutputLock(self.layout.output_dir, f.problem, f.lock_stale_seconds, self.stores,
                          on_lost=self.run_pass.abort_for_lost_lock, run_id=self.run_id)
        self.run_pass.lock = lock
        started, t0 = _now(), time.time()
        with contextlib.ExitStack() as held:
            try:
                held.enter_context(lock)
            except (OSError, DatagenError) as e:
                # A read-only --output_dir (a published data set) holding this very output:
                # nothing to do, and nothing needs the lock (README: exit 0).
                unwritable = storage_error(e) or isinstance(e, PermissionError) or isinstance(
                    e.__context__, PermissionError)
                summary = self._complete_unchanged(plan) if unwritable else None
                if summary is None:
                    raise
                return summary
            try:
                return self._run_locked(started, t0, datasets, plan)
            except (Interrupted, KeyboardInterrupt) as e:
                if not lock.lost:
                    self._record_failure(started, t0, e, "interrupted")
                raise

    def _marked_complete(self):
        """(its summary or None when unreadable, the names of files it lists that are gone)
        of a complete output here, or None when there is no marker (or --overwrite)."""
        layout = self.layout
        if self.flags.overwrite or not file_io.exists(layout.complete_path, self.stores):
            return None
        summary = read_summary(layout, self.stores)
        return summary, (None if summary is None
                         else missing_outputs(layout, summary, self.stores))

    def _nothing_to_do(self, summary, note):
        LOG.info("%s is complete (%s exists): nothing to do%s", self.layout.output_dir,
                 self.layout.complete_path, note)
        summary["noop"] = True
        return summary

    def _complete_unchanged(self, plan):
        """The noop summary when --output_dir holds a complete output of this run's inputs
        and flags with every file there; else None (or DatagenError when it was made from
        other inputs or flags)."""
        marked = self._marked_complete()
        if marked is None or marked[0] is None or marked[1]:
            return None
        self.fingerprint = fingerprint.output_fingerprint(datagen_flag_values(self.flags),
                                                          None, self.stores)
        self.check_same_fingerprint(marked[0])
        return self._nothing_to_do(marked[0], " (it cannot be written, and need not be)")

    def choose_direct_mode(self):
        """Small inputs run in this process under DirectRunner (see
        `run_small_input_in_process`); the input size comes from the fingerprint."""
        input_bytes = sum(facts["size"] or 0
                          for flag, files in self.fingerprint["inputs"].items()
                          if flag not in fingerprint.GIVEN_VOCAB_FLAGS
                          for facts in files.values())
        if run_small_input_in_process(self.options, input_bytes, self.flags.in_process_below_mb):
            LOG.info("input is %.1f MB (< --in_process_below_mb %g): passes run in this "
                     "process, not in worker processes", input_bytes / 1e6,
                     self.flags.in_process_below_mb)

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
        flag_values = datagen_flag_values(self.flags)
        listed = {}
        self.fingerprint = fingerprint.output_fingerprint(flag_values, listed, self.stores)
        self.vocab.fingerprint = fingerprint.vocab_fingerprint(flag_values, listed, self.stores)
        marked = self._marked_complete()
        if marked is not None:
            summary, missing = marked
            if summary is not None:
                self.check_same_fingerprint(summary)
            if summary is not None and not missing:
                return self._nothing_to_do(summary, "; pass --overwrite to redo it")
            # a marker over missing files (a shard deleted since) is not trusted: redo it
            LOG.warning("%s is marked complete but %s: redoing it", layout.output_dir,
                        "its summary %s cannot be read" % layout.summary_path
                        if summary is None else "%s %s missing" % (
                            ", ".join(missing[:3]) + (" and %d more" % (len(missing) - 3)
                                                      if len(missing) > 3 else ""),
                            "is" if len(missing) == 1 else "are"))
        # Leftovers of a killed run must not be read back, nor look like output.
        file_io.delete_tree(layout.problem_work_dir, self.stores)
        for stray in file_io.remove_temporaries(layout.output_dir, self.stores):
            LOG.info("removed %s (a temporary file a killed run left)", stray)
        preflight.check_output_writable(layout, self.stores)
        self.choose_direct_mode()
        writing = []

        def start_writing(prepared):
            if not f.allow_empty:
                books.check_has_pairs(prepared)
            # The input is valid: from here on this run writes into output_dir (vocab files
            # first), so a previous complete output stops being complete now, not at the end.
            file_io.delete_tree(layout.complete_path, self.stores)
            file_io.write_json(layout.summary_path, self._summary("running", started, t0),
                               self.stores)
            writing.append(True)

        try:
            try:
                start = time.time()
                prepared, vocab = self.prepare_and_vocab(datasets, plan, start_writing)
                self.stages["vocab"] = {"seconds": round(
                    time.time() - start - self.stages["prepare"]["seconds"], 3)}
                num_shards = self.num_shards(prepared)
                self.run_pass.expect(1)
                *encoded, lengths = self._timed("encode", self.encode.run, prepared,
                                                encoder_vocab_paths(plan), num_shards)
                split_report = self._timed("finish", self.finish, prepared, num_shards,
                                           *encoded)
            except Exception as e:
                if writing and not self.run_pass.lock.lost:
                    self._record_failure(started, t0, e)
                raise
        finally:
            # A run that lost its lock deletes nothing: the directory is another run's now.
            if not self.run_pass.lock.lost:
                commit.remove_work_dir(layout, self.stores)
        summary = self._summary("complete", started, t0, vocab=vocab, splits=split_report,
                                lengths=summary_lengths(lengths, prepared),
                                metrics=dict(sorted(self.run_pass.counters.items())))
        self.run_pass.lock.check()
        try:
            commit.mark_complete(layout, summary, self.stores)
        except Exception as e:  # a full disk at the very end: no marker, a "failed" summary
            self._record_failure(started, t0, e)
            raise
        return summary

    def _summary(self, status, started, t0, **facts):
        f = self.flags
        summary = {
            "status": status, "started_at": started, "finished_at": _now(),
            "seconds": round(time.time() - t0, 3), "problem": f.problem, "seed": f.seed,
            "output_dir": self.layout.output_dir,
            "flags": datagen_flag_values(self.flags),
            "runner": self.options.get_all_options().get("runner"),
            "passes": self.run_pass.count, "stages": self.stages,
            "fingerprint": self.fingerprint}
        if self.run_pass.job_server_seconds is not None:  # FlinkRunner, SparkRunner
            summary["job_server_start_seconds"] = self.run_pass.job_server_seconds
        summary.update(facts)
        return summary

    def _record_failure(self, started, t0, error, status="failed"):
        """A failed or interrupted run leaves a summary saying so (unless a complete output
        is still there: then the summary describes that output)."""
        if file_io.exists(self.layout.complete_path, self.stores):
            return
        if storage_error(error):
            # a full disk: the work directory's files go first, so the summary fits
            commit.remove_work_dir(self.layout, self.stores)
        try:
            file_io.write_json(self.layout.summary_path, self._summary(
                status, started, t0, error="%s: %s" % (type(error).__name__, error)),
                self.stores)
        except Exception:  # the original error matters more
            LOG.exception("could not write the failure summary")


WORKER_DIED_STATUS = 1  # as any other failure, but with one line and no traceback


def run(argv=None, interrupted=lambda: None):
    """Runs the job; returns the summary dict. Raises DatagenError on bad input or flags,
    Interrupted when `interrupted()` reports a signal."""
    argv = list(sys.argv[1:] if argv is None else argv)
    check_known_flags(argv)
    flags, beam_args = parse_flags(argv)
    return DatagenJob(flags, PipelineOptions(beam_args), interrupted).run()


class _HelpFormatter(argparse.HelpFormatter):
    """Every flag's help ends with its default, 0 included (`off` for a switch, `none` for
    a flag unset by default), unless the help says it already."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if (not action.option_strings or "%(default)" in text
                or default is argparse.SUPPRESS):
            return text
        if default is False and action.nargs == 0:
            return text + " (default: off)"
        if default is None:
            # a flag with a value and no default; not -v (a shorthand), nor a flag whose
            # help says what happens without it
            if action.nargs == 0 or "default" in text or text.startswith("Required"):
                return text
            return text + " (default: none)"
        return text + " (default: %(default)s)"


USAGE = ("%(prog)s --output_dir DIR (--train_source FILES --train_target FILES | "
         "--train_tsv FILES | --train_tmx FILES) [flags] [Beam pipeline options]")


def print_help():
    parser = job_flag_parser(
        prog="python -m pipeline.datagen", formatter_class=_HelpFormatter,
        usage=USAGE,
        description="Tensor2Tensor-compatible translation datagen on Apache Beam. Required: "
                    "--output_dir and training data (--train_source with --train_target, "
                    "--train_tsv or --train_tmx).",
        epilog="Every Apache Beam pipeline option is accepted too (--runner, "
               "--direct_num_workers, --project, --setup_file, ...).")
    parser.print_help()


def main(argv=None):
    argv = list(argv if argv is not None else sys.argv[1:])
    if "-h" in argv or "--help" in argv:
        print_help()
        return 0
    if not argv:
        print("usage: " + USAGE % {"prog": "python -m pipeline.datagen"}, file=sys.stderr)
        print("python -m pipeline.datagen --help lists every flag", file=sys.stderr)
        return 2
    console.install()
    try:
        log_level = parse_flags(argv)[0].log_level
        with console.library_logging(log_level), InterruptWatcher() as watcher:
            summary = run(argv, lambda: watcher.received)
    except DatagenError as e:
        LOG.error("%s", one_line(e))
        return 2
    except (Interrupted, KeyboardInterrupt) as e:
        stopped = e if isinstance(e, Interrupted) else Interrupted(signal.SIGINT)
        LOG.error("interrupted (%s)", stopped)
        return stopped.exit_status
    except (WorkerDied, PassFailed) as e:
        LOG.error("%s", e)
        return WORKER_DIED_STATUS
    if summary["status"] == "dry_run":
        print("dry run: %d passes translated for runner %s; nothing was run or written"
              % (summary["passes"], summary["runner"]))
        return 0
    print(format_summary(summary))
    return 0


def _leave(status):
    """Ends the process without the interpreter's teardown (`local_worker_pool.leave`).
    After a run, the exit handlers still run first; after an interrupt or a dead worker
    they do not: Beam's threads waiting on killed workers would delay or garble the exit,
    or block it, and the run has cleaned up what it had to."""
    local_worker_pool.leave(status, status <= 128 and status != WORKER_DIED_STATUS)


if __name__ == "__main__":
    _leave(main())
