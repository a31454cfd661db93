"""DatagenJob: one run, plan -> prepare -> vocab -> encode -> commit, in that order.

Each step is its own object with one job (`PrepareStep`, `VocabStep`, `EncodeStep`,
`pipeline.output.commit`); every pass goes through one `PassRunner`; what the run did is
kept by a `JobRecord` (the summary), and a rerun over a complete output is judged by
`pipeline.driver.reruns`. This class only orders the steps and holds the lock. The order
is spelt out here, commit point included: once the prepare step's facts are checked (after
its own pass, or after the first vocab pass it rode along), the run starts writing into
--output_dir (`_start_writing`), and only then are vocabularies written.
"""

import contextlib
import functools
import logging
import time
import uuid
from typing import Any, Callable, Collection, Dict, List, Optional, Set, Tuple

from apache_beam.io.filesystems import FileSystems

from pipeline.driver import corpora, fingerprint, preflight, reruns, resume
from pipeline.driver.cleaning import CleaningStep
from pipeline.driver.datasets import Dataset, expand_listing, literal_patterns, plan_datasets
from pipeline.driver.encode import EncodeStep
from pipeline.driver.job_record import JobRecord
from pipeline.driver.options import Command
from pipeline.driver.passes import PassRunner
from pipeline.driver.prepare import Prepared, PrepareStep, rides_along
from pipeline.driver.vocabularies import VocabPlan, VocabStep, encoder_vocab_paths, lang_of
from pipeline.output import books, commit, fairseq_data, own_outputs
from pipeline.output.books import SplitReport
from pipeline.output.complete_check import read_summary
from pipeline.output.layout import OutputLayout, summary_languages
from pipeline.output.lock import OutputLock
from pipeline.runtime import staging
from pipeline.runtime.interrupts import Interrupted
from pipeline.runtime.job_server import check_prism_location
from pipeline.runtime.options_views import JobOptions
from pipeline.runtime.runners import check_pipeline_options, check_workers_can_import_project, run_small_input_in_process
from pipeline.runtime.errors import DatagenError
from pipeline.runtime.storage_errors import (StoreLost, storage_error, storage_message,
                                             store_lost_message, unreachable_store)
from transforms.pairs import mixing
from transforms.encode.shard_manifests import REUSED as SHARDS_REUSED
from transforms.encode.encode_pairs import BEFORE_CLEANING, BEFORE_MAX_LENGTH
from transforms.contracts.elements import RejectsReport, ShardReport, TokenCounts
from transforms.encode.length_stats import summary_lengths
from transforms.codecs.lang_tags import TAGS_BOTH_SIDES
from transforms.shards.format_base import DEFAULT_LANGS
from transforms.shards.record_formats import FairseqFormat
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores, StoreSettings

LOG = logging.getLogger("datagen")


class DatagenJob:
    """One run of a parsed command line (`pipeline.driver.options.parse_command_line`: the
    config, the kind's plugin and Beam's arguments, which become the PipelineOptions of
    every pass); `interrupted()`: the signal number that stopped the run, or None
    (`InterruptWatcher.received`).

    The constructor only builds the steps, each given the parts of the config it reads and
    the job's store clients; what can fail is done by `run`."""

    def __init__(self, command: Command,
                 interrupted: Callable[[], Optional[int]] = lambda: None) -> None:
        # JobOptions: each view of the options made once (Beam parses them on every view_as)
        self.options = options = JobOptions(command.beam_args)
        # The driver's own file work (listing, fingerprint, lock, commit) runs before any
        # Pipeline hands these options to FileSystems: without them s3:// has no endpoint
        # or credentials, gs:// no project.
        FileSystems.set_options(options)
        self.config = config = command.config  # what the passes read; never changed
        job = config.job
        self.run_id = uuid.uuid4().hex
        self.layout = OutputLayout(job.output_dir, job.problem, config.vocab.vocab_size,
                                   self.run_id, job.output_format)
        # One client per object store for the driver's own lease, marker and summary writes.
        self.stores = ObjectStores(StoreSettings.from_options(options))
        self.run_pass = PassRunner(options, interrupted, job.log_level,
                                   job.progress_seconds)
        self.prepare = PrepareStep(self.layout, config.read, self.stores)
        self.vocab = VocabStep(config, command.kind, self.layout, self.run_pass, self.stores)
        self.encode = EncodeStep(self.layout, config, self.run_pass, self.stores)
        self.cleaning = CleaningStep(self.layout, config.clean,
                                     [corpus.inputs for corpus in config.corpora],
                                     config.read.on_invalid_utf8, self.stores,
                                     corpora.corpus_filters(config))
        self.record = JobRecord(config, options, self.layout, self.run_pass, self.stores)
        self._writing = False  # whether this run has started writing into --output_dir
        self.cleaned: Optional[dict] = None  # the summary's `cleaning`, when cleaning ran
        self.lang_tags: Dict[str, dict] = {}  # the summary's `lang_tags`, when tags are on
        self._previous_pairs: Set[str] = set()  # pairs with own shards in an earlier output
        self._vocab_paths: Tuple[str, str] = ("", "")  # (source, target) vocabularies
        self._langs = self._previous_langs = DEFAULT_LANGS  # one-pair file names' (`finish`)

    # -- plan ------------------------------------------------------------------------------
    def plan(self, **expand: Callable[..., List[str]]) -> Dict[str, List[Dataset]]:
        """{split: [Dataset]} of the flags (`expand`: how patterns are listed; by default
        with the job's store clients)."""
        expand = expand or {"expand": functools.partial(expand_listing, stores=self.stores)}
        datasets = {"train": plan_datasets(self.config, "train", **expand)}
        if any(c.inputs.dev_source or c.inputs.dev_tsv or c.inputs.dev_tmx
               for c in self.config.corpora):
            datasets["dev"] = plan_datasets(self.config, "dev", **expand)
        return datasets

    def num_shards(self, splits: Collection[str]) -> Dict[str, int]:
        shards = {"train": self.config.job.num_train_shards}
        if "dev" in splits:
            shards["dev"] = self.config.job.num_dev_shards
        return shards

    # -- prepare and vocab -----------------------------------------------------------------
    def _start_writing(self, prepared) -> None:
        """The commit point: the input is valid, so from here on this run writes into
        --output_dir (vocab files first), and a previous complete output stops being
        complete now, not at the end."""
        if not self.config.job.allow_empty:
            books.check_has_pairs(prepared)
            corpora.check_corpora_have_pairs(prepared, self.config)
        self.run_pass.stop_if_interrupted()
        self._lock.confirm()  # not into an --output_dir removed or replaced meanwhile
        file_io.delete_tree(self.layout.complete_path, self.stores)
        self.record.write_running()
        self._writing = True

    def prepare_and_vocab(self, datasets: Dict[str, List[Dataset]], plan: VocabPlan
                          ) -> Tuple[Dict[str, List[Prepared]], Dict[str, Any]]:
        """Runs the prepare step and the vocab step; returns (prepared, vocab report).

        Reused vocabularies are checked first. When the prepare stage rides along the first
        vocab pass (`pipeline.driver.prepare.rides_along`), its facts are read back and
        checked right after that pass, then the run starts writing, then the first pass's
        vocab result is read and the learning goes on; otherwise the prepare pass runs on
        its own first.
        """
        choice = self.vocab.choose(plan)
        report = dict(choice.reused)
        cleaning = self.cleaning.active  # its pass needs the prepare step's facts first
        riding = rides_along(datasets, choice.to_learn) and not cleaning
        learning = self.vocab.kind.learner.passes_needed
        self.run_pass.expect((0 if riding else 1) + ((learning or 1) if choice.to_learn else 0)
                             + int(cleaning) + 1,
                             exact=not choice.to_learn or learning is not None)
        learner = None
        if riding:
            self.record.stages["prepare"] = {"seconds": 0.0, "ran_with": "vocab"}
            learner = self.vocab.learner(choice.to_learn, None)
            first = learner.next_pass()
            assert first is not None  # every learner has a first pass
            seconds = self.vocab.passes.run(first, self.prepare.riding(datasets))
            prepared = self.prepare.read_back(datasets)
            self._start_writing(prepared)
            self.vocab.passes.read(first, seconds)
        else:
            prepared = self.record.timed("prepare", self.prepare.run, self.run_pass, datasets)
            if cleaning:  # before the commit point: it writes only to the work directory
                prepared, self.cleaned = self.record.timed(
                    "clean", self.cleaning.run, self.run_pass, prepared)
            self._start_writing(prepared)
            if choice.to_learn:
                learner = self.vocab.learner(choice.to_learn, prepared)
        report.update(self.vocab.write_given(plan, choice.given))
        if learner is not None:
            report.update(self.vocab.learn(plan, learner))
        return prepared, report

    def tag_prefixes(self, plan: VocabPlan, datasets: Dict[str, List[Dataset]]) -> None:
        """The encode step's prefixes: each pair's target language tag id ({pair ("" with
        one corpus): [id]}; with --lang_tags nllb its source language's, and the target's
        before the targets), for the summary `lang_tags`."""
        self._vocab_paths = encoder_vocab_paths(plan)  # the fairseq data-bin's dictionaries
        ids = self.vocab.tag_ids(plan)
        self.lang_tags = {lang: {"token": self.vocab.tags[lang], "id": ids[lang]}
                          for lang in sorted(ids)}
        if not ids:
            return
        pairs = {ds.pair or "": (ds.source_lang or self.vocab.one_source,
                                 ds.target_lang or self.vocab.one_target)
                 for split in datasets for ds in datasets[split]}
        if self.config.vocab.lang_tags in TAGS_BOTH_SIDES:  # NLLB: source tag, target tag
            self.encode.prefixes = {pair: [ids[src]] for pair, (src, _) in pairs.items()}
            self.encode.target_prefixes = {pair: [ids[tgt]] for pair, (_, tgt) in pairs.items()}
        else:
            self.encode.prefixes = {pair: [ids[tgt]] for pair, (_, tgt) in pairs.items()}

    def _data_bin_langs(self, datasets: Dict[str, List[Dataset]]) -> Tuple[str, str]:
        """The (source, target) languages naming a one-pair output's files (data-bin, text
        shards; the summary's `languages`): the vocab files' suffixes, else `src`, `tgt`."""
        read, train = self.config.read, datasets.get("train") or []
        first = train[0] if train else None
        found = [None, None] if first is None else [
            first.source_lang or (lang_of(first.source) if first.target else None),
            first.target_lang or (lang_of(first.target) if first.target else None)]
        return (read.source_lang or found[0] or "src", read.target_lang or found[1] or "tgt")

    # -- commit ----------------------------------------------------------------------------
    @property
    def _lock(self) -> OutputLock:
        """The output directory's lock (the PassRunner holds it once `_run` took it)."""
        assert self.run_pass.lock is not None, "the lock is taken before any pass runs"
        return self.run_pass.lock

    def finish(self, prepared: Dict[str, List[Prepared]], num_shards: Dict[str, int],
               shards: List[ShardReport], rejects: List[RejectsReport],
               tokens: Dict[str, TokenCounts]) -> Dict[str, SplitReport]:
        """Checks the books of every dataset, then moves outputs into place; marker last."""
        # a run stopped by a signal commits nothing (whatever became of the handler's own
        # exception); a run that lost its lock must not replace the new holder's files, nor
        # commit into an --output_dir removed or replaced under it
        self.run_pass.stop_if_interrupted()
        self._lock.confirm()
        report = {split: books.split_report(
            split, items, num_shards[split], shards, rejects, tokens.get(split, [0, 0, 0, 0]),
            self.layout.rejects_path(split), self.vocab.kind.codec.counts_oov,
            self.config.job.packed_length)
            for split, items in sorted(prepared.items())}
        weights = [corpus.weight for corpus in self.config.corpora]
        for split, figures in report.items():  # a pair's weight: its corpora's, by lines
            for pair, entry in figures.get("language_pairs", {}).items():
                entry["weight"] = mixing.mean_weight([
                    (p.units, weights[p.ds["corpus"]]) for p in prepared[split]
                    if p.ds.get("pair") == pair])
        if not self.config.job.allow_empty:
            books.check_written(prepared, report)
        for difference in books.compare_with_counters(report, self.run_pass.counters):
            LOG.warning("%s", difference)
        for unusable in books.nothing_usable(report):
            LOG.warning("%s", unusable)
        pairs = {p.ds.get("pair", "") for split in prepared for p in prepared[split]} - {""}
        if not file_io.is_local(self.layout.output_dir):  # a copy and a delete per object
            LOG.info("moving %d shards into %s", len(shards), self.layout.output_dir)
        commit.promote_outputs(self.layout, shards, rejects, self.stores,
                               sorted(pairs | self._previous_pairs),
                               self.encode.work_dirs()["shards"], self._previous_langs)
        fairseq_data.commit_data_bin(
            self.layout, shards, self._vocab_paths, self.vocab.files.load
            if isinstance(self.layout.shards.format, FairseqFormat) else None, self._langs,
            self.stores, {tag["id"]: tag["token"] for tag in self.lang_tags.values()})
        return report

    # -- the job ---------------------------------------------------------------------------
    def dry_run(self) -> dict:
        """--dry_run: builds and translates every kind of pass with the real run's builders;
        reads and writes nothing.

        Inputs are not listed (patterns are taken as file names) and file facts are
        placeholders, so this needs no access to the input or output file systems.
        """
        datasets = self.plan(expand=literal_patterns)
        plan = self.vocab.plan(datasets)
        given = self.vocab.given(plan)
        riding = None
        if rides_along(datasets, {n: v for n, v in plan.items() if n not in given}):
            riding = self.prepare.riding(datasets)
        else:
            self.run_pass(*self.prepare.build(datasets))
        self.vocab.dry_run(plan, riding)
        self.encode.dry_run(datasets, encoder_vocab_paths(plan), self.num_shards(datasets))
        return {"status": "dry_run", "passes": self.run_pass.count,
                "problem": self.config.job.problem,
                "runner": self.options.get_all_options().get("runner")}

    def run(self) -> dict:
        check_pipeline_options(self.options)
        check_workers_can_import_project(self.options)
        check_prism_location(self.options)
        # A Dataflow dry run needs no network; a --setup_file sdist is built once per job.
        staging.offline_dry_run(self.options)
        try:
            with staging.project_sdist_once(self.options):
                return self._run()
        except Exception as e:
            if isinstance(e, DatagenError):
                raise
            if storage_error(e) is not None:
                raise DatagenError(storage_message(e, self.layout.output_dir)) from None
            unanswered = unreachable_store(e)
            if unanswered is not None:
                raise StoreLost(store_lost_message(unanswered,
                                                   self.layout.output_dir)) from None
            raise
        finally:
            self.run_pass.close()  # worker processes the passes shared

    def _run(self) -> dict:
        job = self.config.job
        if self.run_pass.dry_run:  # reads no input: no cleaning pass is built
            return self.dry_run()
        # the --filters file is read and checked first: a bad one stops the job at once
        self.cleaning.load()
        preflight.check_file_systems(self.config)
        preflight.check_stores_reachable(self.config, self.stores)
        preflight.check_output_directories(self.layout)
        self.vocab.check_given()
        # Inputs are listed and checked before the lock is written: bad input must leave
        # nothing behind, not even a new output directory.
        datasets = self.plan()
        self.cleaning.check_languages(datasets, self.config.several_corpora)
        plan = self.vocab.plan(datasets)
        self.vocab.check_given_tags(plan)
        lock = OutputLock(self.layout.output_dir, job.problem, job.lock_stale_seconds,
                          self.stores, on_lost=self.run_pass.abort_for_lost_lock,
                          run_id=self.run_id)
        self.run_pass.lock = lock
        self.record.start()
        # what the lock creates: removed again when the run is refused before it writes
        new_dirs = preflight.missing_local_dirs(self.layout.output_dir)
        try:
            return self._run_holding(lock, datasets, plan)
        except DatagenError:
            if not self._writing and not lock.lost:
                preflight.remove_new_dirs(self.layout.output_dir, new_dirs)
            raise

    def _run_holding(self, lock: OutputLock, datasets: Dict[str, List[Dataset]],
                     plan: VocabPlan) -> dict:
        """The run under `lock`, released at the end whatever happens."""
        with contextlib.ExitStack() as held:
            try:
                held.enter_context(lock)
            except (OSError, DatagenError) as e:
                # A read-only --output_dir (a published data set) holding this very output:
                # nothing to do, and nothing needs the lock (docs/operations.md: exit 0).
                unwritable = storage_error(e) or isinstance(e, PermissionError) or isinstance(
                    e.__context__, PermissionError)
                summary = self._complete_unchanged() if unwritable else None
                if summary is None:
                    raise
                return summary
            try:
                return self._run_locked(datasets, plan)
            except (Interrupted, KeyboardInterrupt) as e:
                if not lock.lost:
                    self.record.record_failure(e, "interrupted")
                raise

    def _complete_unchanged(self):
        """The noop summary when --output_dir holds a complete output of this run's inputs
        and flags with every file there; else None (or DatagenError when it was made from
        other inputs or flags)."""
        marked = reruns.marked_complete(self.layout, self.config.job.overwrite, self.stores)
        if marked is None or marked[0] is None or marked[1]:
            return None
        self.record.fingerprint = fingerprint.output_fingerprint(
            fingerprint.fingerprint_values(self.config), None, self.stores)
        reruns.check_same_fingerprint(self.layout, marked[0], self.record.fingerprint)
        return reruns.nothing_to_do(self.layout, marked[0],
                                    " (it cannot be written, and need not be)")

    def choose_direct_mode(self) -> None:
        """Small inputs run in this process under DirectRunner (see
        `run_small_input_in_process`); the input size comes from the fingerprint."""
        below_mb = self.config.job.in_process_below_mb
        assert self.record.fingerprint is not None  # computed once the lock is held
        inputs: Dict[str, Dict[str, dict]] = self.record.fingerprint["inputs"]
        input_bytes: int = sum(facts["size"] or 0
                               for flag, files in inputs.items()
                               if flag not in fingerprint.GIVEN_VOCAB_FLAGS
                               for facts in files.values())
        if run_small_input_in_process(self.options, input_bytes, below_mb):
            LOG.info("input is %.1f MB (< --in_process_below_mb %g): passes run in this "
                     "process, not in worker processes", input_bytes / 1e6, below_mb)

    def _reuse(self, shards: int) -> Dict[str, int]:
        """The summary's `resume`: chunks reused and encoded, shards merged (and, when a killed
        run had merged some, kept: the shard writer's counter)."""
        kept = self.run_pass.counters.get(SHARDS_REUSED, 0)
        reuse = dict(self.encode.reuse, shards_written=shards - kept)
        if kept:
            reuse["shards_reused"] = kept
        return reuse

    def _changed_inputs(self) -> Optional[str]:
        """One line naming an input file changed or deleted since the run started, or None
        (also when the inputs cannot be listed now: the error at hand says more)."""
        recorded = self.record.fingerprint
        if recorded is None:
            return None
        try:
            return fingerprint.changed_inputs(recorded, fingerprint.fingerprint_values(
                self.config), self.stores)
        except Exception:  # a store gone unreachable: not a change
            return None

    def _output_dir_lost(self, error: Exception) -> Optional[str]:
        """One line when this run's lock is gone (the lease deleted, taken, or unreadable:
        --output_dir removed or replaced by a file), the cause of `error`; else None."""
        if isinstance(error, DatagenError):
            return None  # the job's own line says why already
        try:
            self._lock.confirm()
        except DatagenError as lost:
            return str(lost)
        except Exception:  # a store gone unreachable: the error at hand says more
            return None
        return None

    def _run_locked(self, datasets, plan) -> dict:
        """The job, once this run holds the output directory's lock."""
        layout = self.layout
        flag_values = fingerprint.fingerprint_values(self.config)
        listed: Dict[str, fingerprint.FileStamps] = {}  # patterns listed once for both fingerprints
        self.record.fingerprint = fingerprint.output_fingerprint(flag_values, listed,
                                                                 self.stores)
        self.vocab.fingerprint = fingerprint.vocab_fingerprint(flag_values, listed, self.stores)
        marked = reruns.marked_complete(layout, self.config.job.overwrite, self.stores)
        if marked is not None:
            summary, missing = marked
            if summary is not None:
                reruns.check_same_fingerprint(layout, summary, self.record.fingerprint)
            if summary is not None and not missing:
                return reruns.nothing_to_do(layout, summary, "; pass --overwrite to redo it")
            # a marker over missing files (a shard deleted since) is not trusted: redo it
            LOG.warning("%s is marked complete but %s: redoing it", layout.output_dir,
                        reruns.describe_missing(layout, summary, missing))
        # Language pairs whose own shards a previous output has: this run replaces them.
        previous = read_summary(layout, self.stores) or {}
        self._previous_pairs = {pair for split in (previous.get("splits") or {}).values()
                                if isinstance(split, dict)
                                for pair in split.get("language_pairs") or {}}
        self._previous_langs = summary_languages(previous)  # its text shards end with them
        self._langs = self._data_bin_langs(datasets)  # this run's: in each summary it writes
        self.layout.name_languages(self._langs)  # (`JobRecord.summary`: the running one too)
        # Leftovers of a killed run must not be read back, nor look like output; nor fill
        # the temporary directory (shard scratch of killed worker processes). Only its
        # finished encode chunks of this very fingerprint stay, each checked before reuse.
        key = resume.resume_key(self.record.fingerprint, self.config.read.encode_chunk_lines)
        self.encode.look = resume.sweep_work(layout, key, self.stores)
        self.encode.resume_key = key
        commit.remove_orphan_scratch()
        for stray in file_io.remove_temporaries(  # only this problem's: another problem's
                layout.output_dir, self.stores,       # run may be writing its own now
                owned=lambda name: own_outputs.is_problem_file(name, layout.problem)):
            LOG.info("removed %s (a temporary file a killed run left)", stray)
        preflight.check_output_writable(layout, self.stores)
        self.choose_direct_mode()
        stages = self.record.stages
        keep_chunks = False  # an interrupted run keeps its finished chunks for a rerun
        try:
            try:
                start = time.time()
                prepared, vocab = self.prepare_and_vocab(datasets, plan)
                stages["vocab"] = {"seconds": round(
                    time.time() - start - stages["prepare"]["seconds"]
                    - stages.get("clean", {}).get("seconds", 0), 3)}
                num_shards = self.encode.plan_shards(prepared)
                self.tag_prefixes(plan, datasets)
                self.run_pass.expect(1)
                *encoded, lengths = self.record.timed("encode", self.encode.run, prepared,
                                                      encoder_vocab_paths(plan), num_shards)
                changed = self._changed_inputs()
                if changed:  # before the commit: the output would mix two versions
                    raise DatagenError(changed)
                split_report = self.record.timed("finish", self.finish, prepared, num_shards,
                                                 *encoded)
            except (Interrupted, KeyboardInterrupt):
                keep_chunks = True
                raise
            except Exception as e:
                # A file changed, cut short or deleted mid-run is the cause of whatever the
                # pass that read it raised (a worker's traceback, misaligned lines); so is an
                # --output_dir (or its lock) removed or replaced under the run.
                changed = self._changed_inputs() or self._output_dir_lost(e)
                error = DatagenError(changed) if changed else e
                if self._writing and not self._lock.lost:
                    self.record.record_failure(error)
                if error is e:
                    raise
                raise error from None
        finally:
            # A run that lost its lock deletes nothing: the directory is another run's now.
            if self._lock.lost:
                pass
            elif keep_chunks and resume.keeps_chunks(layout, key, self.stores):
                file_io.delete_tree(layout.work_dir, self.stores)  # the rest of this run's
            else:
                commit.remove_work_dir(layout, self.stores)
            commit.remove_orphan_scratch()  # of worker processes killed with a pass
        extra: Dict[str, Any] = {} if self.cleaned is None else {"cleaning": self.cleaned}
        if self.lang_tags:
            extra["lang_tags"] = self.lang_tags
        summary = self.record.summary(
            "complete", vocab=vocab, splits=split_report,
            lengths=dict(summary_lengths(lengths, list(prepared) + [
                name for name in lengths if name.endswith((BEFORE_CLEANING, BEFORE_MAX_LENGTH))],
                self.config.read.max_length),
                ids_end_in_eos=self.vocab.kind.codec.ends_in_eos and bool(plan)),
            metrics=dict(sorted(self.run_pass.counters.items())),
            resume=self._reuse(len(encoded[0])), **extra)
        self.run_pass.stop_if_interrupted()
        self._lock.confirm()
        try:
            commit.mark_complete(layout, summary, self.stores, self.config.corpora)
        except Exception as e:  # a full disk at the very end: no marker, a "failed" summary
            self.record.record_failure(e)
            raise
        return summary
