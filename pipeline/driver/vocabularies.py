"""The vocab step: which vocabularies the run needs, and for each whether it is given, reused
or learnt; writing them into the output directory.

- given (`--word_vocab`, `--bpe_vocab`): loaded before anything runs (a bad file is a
  one-line error, not a traceback in the encode pass), then copied into the output;
- reused: a vocab file already in the output directory whose fingerprint sidecar matches
  this run's vocab inputs and flags (one without a sidecar was put there by hand and is
  reused as T2T does);
- learnt: by the kind's own passes (`VocabKind.learn`, `pipeline.driver.vocab_passes`).

Everything that differs between subword, byte_bpe and word vocabularies is asked of the
run's VocabKind (`transforms.vocab_kinds`); this module never compares kind names.
"""

import logging

from apache_beam.io.filesystems import FileSystems

from pipeline.driver import fingerprint, vocab_passes
from pipeline.output.layout import lang_of
from pipeline.output.names import check_name
from pipeline.runtime.runners import DatagenError, one_line

LOG = logging.getLogger("datagen")


def encoder_vocab_paths(plan):
    """(source vocab path, target vocab path); the same file twice for a shared vocab."""
    if "shared" in plan:
        return plan["shared"][0], plan["shared"][0]
    return plan["source"][0], plan["target"][0]


class VocabStep:
    """Plans, checks, writes and learns the run's vocabularies.

    `flags`: the DatagenOptions view; `config`: the run's DatagenConfig; `run_pass`: the
    PassRunner. `fingerprint` (`pipeline.driver.fingerprint.vocab_fingerprint`) is set by the job
    once it holds the output directory's lock, before anything is chosen or written.
    """

    def __init__(self, flags, config, layout, run_pass):
        self._flags = flags
        self._config = config
        self._layout = layout
        self._run_pass = run_pass
        self.kind = config.vocab.kind
        self.fingerprint = None

    # -- which vocabularies ----------------------------------------------------------------
    def plan(self, datasets):
        """{vocab name: (vocab path in the output, [train datasets])}."""
        f = self._flags
        kind = self.kind
        train = datasets["train"]
        if f.shared_vocab or len(kind.given_files(f)) == 1:
            return {"shared": (self._layout.vocab_path(kind), train)}
        first = train[0]
        src_lang = f.source_lang or (lang_of(first.source) if first.target else None)
        tgt_lang = f.target_lang or (lang_of(first.target) if first.target else None)
        if not src_lang or not tgt_lang:
            raise DatagenError("pass --source_lang and --target_lang (vocab file suffixes), "
                               "or --shared_vocab")
        for lang, flag, path in ((src_lang, f.source_lang, first.source),
                                 (tgt_lang, f.target_lang, first.target)):
            if not flag:
                check_name(lang, "the language taken from %s's extension (pass --source_lang/"
                                 "--target_lang)" % path)
        if src_lang == tgt_lang:
            raise DatagenError("source and target language are both %r: pass --source_lang/"
                               "--target_lang, or --shared_vocab" % src_lang)
        return {"source": (self._layout.vocab_path(kind, src_lang), train),
                "target": (self._layout.vocab_path(kind, tgt_lang), train)}

    def given(self, plan):
        """{name: path} of vocabularies the user supplied (--bpe_vocab, --word_vocab)."""
        files = self.kind.given_files(self._flags)  # at most 2 (`validate_flags`)
        if len(files) == 2:
            return dict(zip(sorted(plan), files))
        return {"shared": files[0]} if files else {}

    # -- checks before anything runs -------------------------------------------------------
    def _load_given(self, flag, path):
        try:
            return self.kind.load(path, self._run_pass.stores)
        except (OSError, ValueError) as e:  # BeamIOError is an OSError, bad JSON a ValueError
            raise DatagenError("%s %s: not a readable %s vocabulary (%s)" % (
                flag, path, self.kind.name, one_line(e))) from None

    def check_given(self):
        """Loads the vocabularies the flags name (--word_vocab, --bpe_vocab) before anything
        runs, so a missing file, or a --bpe_eos_token the vocabulary lacks, is a one-line
        error (exit 2) instead of a traceback in the encode pass."""
        flag = self.kind.given_flag
        for path in self.kind.given_files(self._flags):
            missing = self.kind.missing(path)
            if missing:
                raise DatagenError("%s %s: %s" % (flag, path, missing))
            self.check_eos_token(self._load_given(flag, path), path)

    def check_eos_token(self, encoder, path):
        """Raises DatagenError when a vocabulary lacks the ids that end every example (a
        byte_bpe vocabulary without --bpe_eos_token)."""
        eos_token = self._config.vocab.bpe_eos_token
        try:
            self.kind.eos_ids(encoder, eos_token)
        except ValueError:
            raise DatagenError("--bpe_eos_token %r is not in the vocabulary %s" % (
                eos_token, path)) from None

    def check_reused(self, path):
        """Raises DatagenError when an existing vocab file was made from other vocab inputs
        or flags (e.g. left by a crashed run on another corpus); one without a fingerprint
        sidecar was put there by hand and is reused as T2T does."""
        recorded = fingerprint.read_sidecar(path, self._run_pass.stores)
        if recorded is None:
            LOG.info("%s has no %s: reused as given", path, fingerprint.sidecar_path(path))
            return
        changes = fingerprint.differences(recorded, self.fingerprint)
        if changes:
            raise DatagenError("%s was made from other vocab inputs/flags: %s; pass "
                               "--overwrite to relearn it" % (path, "; ".join(changes)))

    # -- choosing, writing, learning -------------------------------------------------------
    def choose(self, plan):
        """(report of the reused vocabularies, {name: given path}, {name: [train datasets]}
        to learn). Reused ones are checked and loaded here, before any pass runs."""
        kind = self.kind
        reused = {}
        to_learn = {}
        given = self.given(plan)
        for name, (path, train) in sorted(plan.items()):
            if name in given:
                continue
            if kind.exists(path, self._run_pass.stores) and not self._flags.overwrite:
                self.check_reused(path)
                LOG.info("vocab %s: reusing %s", name, path)
                encoder = kind.load(path, self._run_pass.stores)
                self.check_eos_token(encoder, path)
                reused[name] = {"path": path, "size": encoder.vocab_size, "reused": True}
                continue
            to_learn[name] = train
        return reused, given, to_learn

    def _write(self, path, content):
        """Writes a vocabulary (`VocabKind.write`). Its fingerprint sidecar goes first, so a
        vocab file this job wrote never lacks one (a sidecar without its vocab file is
        rewritten with the next vocab)."""
        fingerprint.write_sidecar(path, self.fingerprint, self._run_pass.stores)
        self.kind.write(path, content, self._run_pass.stores)

    def write_given(self, plan, given):
        """Copies the given vocabularies into the output; returns their report."""
        kind = self.kind
        report = {}
        for name in sorted(given):
            encoder = kind.load(given[name])
            content, note = kind.content_of(encoder)
            if note:
                LOG.info("vocab %s: %s %s", name, given[name], note)
            self._write(plan[name][0], content)
            report[name] = {"path": plan[name][0], "size": encoder.vocab_size, "reused": False,
                            "given": given[name]}
        return report

    @staticmethod
    def sample_files(to_learn, prepared):
        """{name: [(path, size[, rejected_path])]}: each vocabulary samples its side of every train dataset,
        the line files the prepare step made, sized by its scan (`prepared`); with
        `prepared` None the datasets' own files, sized by a scan in the same pass (None)."""
        by_index = {p.ds["index"]: p for p in (prepared or {}).get("train", [])}

        def sampled(path, facts):
            # A converted dataset's side with rejected units: its `.rejected` lines are
            # sampled too, in place (`transforms.materialize`), and count in the size.
            if facts.get("rejected_lines"):
                return path, facts["bytes"] + facts["rejected_bytes"], facts["rejected_lines"]
            return path, facts["bytes"]

        files = {}
        for name, train in to_learn.items():
            files[name] = []
            for ds in train:
                p = by_index.get(ds.index)
                if name in ("source", "shared"):
                    files[name].append(sampled(p.source_lines, p.source_facts) if p
                                       else (ds.source, None))
                if name in ("target", "shared"):
                    files[name].append(sampled(p.target_lines, p.target_facts) if p
                                       else (ds.target, None))
        return files

    def learn(self, plan, to_learn, prepared, first_pass=None):
        """Runs the vocab passes of `to_learn` ({name: [train datasets]}), writes the
        vocabularies; returns their report.

        `first_pass`: (add, label, after) when the prepare stage rides along the first
        vocab pass (`pipeline.driver.vocab_passes.learn_subword_vocabs` says how).
        """
        kind = self.kind
        contents, stats = kind.learn(vocab_passes, self._layout.work_dir,
                                     self.sample_files(to_learn, prepared), self._config,
                                     self._run_pass, first_pass)
        report = {}
        for name, content in sorted(contents.items()):
            path = plan[name][0]
            self._write(path, content)
            sampling = [s for s in stats["sampling"] if s["vocab"] == name]
            report[name] = {
                "path": path, "size": kind.load(path, self._run_pass.stores).vocab_size,
                "reused": False,
                "sampled_lines": sum(s["sampled_lines"] for s in sampling),
                "sampled_chars": sum(s["sampled_chars"] for s in sampling),
                "distinct_tokens": stats["distinct_tokens"].get(name, 0), "files": sampling}
            if name in stats.get("chosen_min_count", {}):  # learnt by bisection (subword)
                report[name]["min_count"] = stats["chosen_min_count"][name]
            LOG.info("vocab %s: %d entries -> %s", name, report[name]["size"],
                     FileSystems.split(path)[1])
        report["passes"] = stats["passes"]
        return report

    def dry_run(self, plan, first_pass=None):
        """--dry_run: builds the kind's vocab passes (`VocabKind.translate`: the builders a
        real run uses) over every vocabulary of `plan`, with placeholder file sizes unless
        `first_pass` (add, label, after) has the prepare stage ride along and size them."""
        files = {name: [(ds.source, None if first_pass else 0) for ds in train]
                 for name, (_, train) in plan.items()}
        self.kind.translate(vocab_passes, self._layout.work_dir, files, self._config,
                            self._run_pass, first_pass)
