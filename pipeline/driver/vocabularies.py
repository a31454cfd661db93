"""The vocab step: which vocabularies the run needs, and for each whether it is given, reused
or learnt; writing them into the output directory.

- given (the kind's `given_flag`, e.g. `--word_vocab`): loaded before anything runs (a bad file is a
  one-line error, not a traceback in the encode pass), then copied into the output;
- reused: a vocab file already in the output directory whose fingerprint sidecar matches
  this run's vocab inputs and flags (one without a sidecar was put there by hand and is
  reused as T2T does);
- learnt: by the kind's learner (`transforms.vocab.learners`), whose passes
  `pipeline.driver.vocab_passes` runs.

Everything that differs between kinds is asked of the run's kind plugin
(`pipeline.driver.kinds`: its learner, its given flag) and of the config's `vocab.loader`;
files are read and written by one `transforms.storage.vocab_files.VocabularyFiles`.
"""

import logging
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

from apache_beam.io.filesystems import FileSystems

from pipeline.driver import fingerprint
from pipeline.driver.datasets import Dataset
from pipeline.driver.passes import PassRunner
from pipeline.driver.prepare import Prepared, RidingPrepare
from pipeline.driver.vocab_passes import VocabPassDriver
from pipeline.output.layout import OutputLayout, lang_of
from pipeline.output.names import check_name
from pipeline.runtime.errors import DatagenError, one_line
from transforms.pairs import mixing
from transforms.shards.record_formats import TEXT_FORMATS
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores
from transforms.storage.vocab_files import VocabularyFiles
from transforms.codecs.vocabulary import VocabFiles, Vocabulary
from pipeline.driver.kinds import KindPlugin
from transforms.contracts.config import DatagenConfig
from transforms.vocab.learners import LearnerInputs, VocabLearner
from transforms.codecs.lang_tags import TAGS_BOTH_SIDES, lang_tag

LOG = logging.getLogger("datagen")


class VocabChoice(NamedTuple):
    """What the vocab step does with each vocabulary of the plan (`VocabStep.choose`)."""
    reused: Dict[str, dict]          # {name: report} of those reused from the output
    given: Dict[str, str]            # {name: path} of those the flags name
    to_learn: Dict[str, List[Dataset]]  # {name: [train datasets]} of those learnt


VocabPlan = Dict[str, Tuple[str, List[Dataset]]]




def encoder_vocab_paths(plan: VocabPlan) -> Tuple[str, str]:
    """(source vocab path, target vocab path); the same file twice for a shared vocab;
    ("", "") for none (the text output)."""
    if not plan:
        return "", ""
    if "shared" in plan:
        return plan["shared"][0], plan["shared"][0]
    return plan["source"][0], plan["target"][0]


class VocabStep:
    """Plans, checks, writes and learns the run's vocabularies.

    `config`: the run's DatagenConfig; `run_pass`: the PassRunner (its passes run through
    `passes`, a VocabPassDriver). `fingerprint` (`pipeline.driver.fingerprint.vocab_fingerprint`)
    is set by the job once it holds the output directory's lock, before anything is chosen or
    written.
    """

    def __init__(self, config: DatagenConfig, kind: KindPlugin, layout: OutputLayout,
                 run_pass: PassRunner, stores: ObjectStores) -> None:
        self._config = config
        self.kind = kind
        self._layout = layout
        self._stores = stores
        self.passes = VocabPassDriver(run_pass, stores)
        self.files = VocabularyFiles(config.vocab.loader, stores)
        self.fingerprint: Optional[fingerprint.Fingerprint] = None
        self.mix: Optional[mixing.MixPlan] = None  # with several corpora, once planned
        self._languages: Dict[str, str] = {}  # a mix's files: {path: language}
        self.tags: Dict[str, str] = {}  # {language: tag}, decided by `plan`
        self.one_source = self.one_target = ""  # a one-corpus run's tagged languages

    # -- which vocabularies ----------------------------------------------------------------
    def plan(self, datasets: Mapping[str, List[Dataset]]) -> VocabPlan:
        """{vocab name: (vocab path in the output, [train datasets])}; also decides the
        language tags (`tags`)."""
        self.tags = self._plan_tags(datasets)
        if self._config.job.output_format in TEXT_FORMATS:
            self.tags = {}  # the text output holds the text: no vocabulary, no tag, no
            return {}       # vocab pass
        read, vocab = self._config.read, self._config.vocab
        kind = self.kind
        train = datasets["train"]
        if vocab.shared_vocab or len(vocab.given) == 1 or self._config.several_corpora:
            return {"shared": (self._layout.vocab_path(kind.codec), train)}
        first = train[0]
        src_lang = read.source_lang or (lang_of(first.source) if first.target else None)
        tgt_lang = read.target_lang or (lang_of(first.target) if first.target else None)
        if not src_lang or not tgt_lang:
            raise DatagenError("pass --source_lang and --target_lang (vocab file suffixes), "
                               "or --shared_vocab")
        for lang, flag, path in ((src_lang, read.source_lang, first.source),
                                 (tgt_lang, read.target_lang, first.target)):
            if not flag:
                check_name(lang, "the language taken from %s's extension (pass --source_lang/"
                                 "--target_lang)" % path)
        if src_lang == tgt_lang:
            raise DatagenError("source and target language are both %r: pass --source_lang/"
                               "--target_lang, or --shared_vocab" % src_lang)
        if self.tags:  # a tag is an entry of the vocabulary of the inputs it starts
            raise DatagenError("--lang_tags with one corpus needs --shared_vocab "
                               "(the tags are entries of one vocabulary of both sides)")
        return {"source": (self._layout.vocab_path(kind.codec, src_lang), train),
                "target": (self._layout.vocab_path(kind.codec, tgt_lang), train)}

    def _plan_tags(self, datasets: Mapping[str, List[Dataset]]) -> Dict[str, str]:
        """{target language: its tag `<2xx>`} of the run (`--lang_tags`: by default a tag
        for each target language when there is more than one, else none)."""
        targets = sorted({ds.target_lang for split in datasets for ds in datasets[split]
                          if ds.target_lang})
        choice = self._config.vocab.lang_tags or ("target" if len(targets) > 1 else "none")
        if choice == "none":
            return {}
        if not targets:  # one corpus: the target files' extension names the language
            first = datasets["train"][0]
            if first.target:
                targets = [check_name(lang_of(first.target), "the language taken from %s's "
                                      "extension (pass --target_lang)" % first.target) or ""]
        if not targets:
            raise DatagenError("--lang_tags needs the target language: pass "
                               "--target_lang")
        self.one_target = targets[0]  # a one-corpus run's
        langs = set(targets)
        if choice in TAGS_BOTH_SIDES:  # a source tag too, on the inputs
            sources = sorted({ds.source_lang for split in datasets for ds in datasets[split]
                              if ds.source_lang})
            first = datasets["train"][0]
            if not sources and first.target:
                sources = [check_name(lang_of(first.source), "the language taken from %s's "
                                      "extension (pass --source_lang)" % first.source) or ""]
            self.one_source = sources[0] if sources else ""
            langs.update(sources)
        return {lang: lang_tag(lang, choice) for lang in sorted(langs)}

    @property
    def reserved(self) -> Tuple[str, ...]:
        """The tokens every vocabulary of the run reserves: its language tags, in order."""
        return tuple(self.tags[lang] for lang in sorted(self.tags))

    def check_given_tags(self, plan: VocabPlan) -> None:
        """DatagenError when a given vocabulary lacks a language tag the run prepends."""
        flag = "--%s" % self.kind.given_flag
        for path in self.given(plan).values():
            vocabulary = self._load_given(flag, path)
            missing = [tag for tag in self.reserved if vocabulary.token_id(tag) is None]
            if missing:
                raise DatagenError("%s %s has no %s: a vocabulary for these pairs holds every "
                                   "language tag as one entry (or pass --lang_tags none)" % (
                                       flag, path, ", ".join(missing)))
            for tag in self.reserved:  # a tag text gives would not stay text (docs/many-pairs.md)
                why = vocabulary.text_gives(tag)
                if why:
                    raise DatagenError("%s %s: %s" % (flag, path, why))

    def tag_ids(self, plan: VocabPlan) -> Dict[str, int]:
        """{target language: the id of its tag} in the run's (source side) vocabulary, once
        it is written; DatagenError when one is missing (a vocab file put there by hand)."""
        if not self.tags:
            return {}
        path = encoder_vocab_paths(plan)[0]
        vocabulary = self.files.load(path)
        ids = {}
        for lang, tag in sorted(self.tags.items()):
            found = vocabulary.token_id(tag)
            if found is None:
                raise DatagenError("%s has no %s, the tag this run prepends to its %s inputs; "
                                   "pass --overwrite to relearn it" % (path, tag, lang))
            ids[lang] = found
        return ids

    def given(self, plan: VocabPlan) -> Dict[str, str]:
        """{name: path} of vocabularies the user supplied (--bpe_vocab, --word_vocab)."""
        files = self._config.vocab.given  # at most 2 (`kinds.kind_part`)
        if len(files) == 2:
            return dict(zip(sorted(plan), files))
        return {"shared": files[0]} if files else {}

    # -- checks before anything runs -------------------------------------------------------
    def _load_given(self, flag, path):
        try:
            return self.files.load(path)
        except (OSError, ValueError) as e:  # BeamIOError is an OSError, bad JSON a ValueError
            raise DatagenError("%s %s: not a readable %s vocabulary (%s)" % (
                flag, path, self.kind.name, one_line(e))) from None

    def check_given(self) -> None:
        """Loads the vocabularies the flags name (--word_vocab, --bpe_vocab) before anything
        runs, so a missing file, or a --bpe_eos_token the vocabulary lacks, is a one-line
        error (exit 2) instead of a traceback in the encode pass."""
        flag = "--%s" % self.kind.given_flag
        for path in self._config.vocab.given:
            missing = self.files.missing(path)
            if missing:
                raise DatagenError("%s %s: %s" % (flag, path, missing))
            self._load_given(flag, path)

    def check_reused(self, path: str) -> None:
        """Raises DatagenError when an existing vocab file was made from other vocab inputs
        or flags (e.g. left by a crashed run on another corpus); one without a fingerprint
        sidecar was put there by hand and is reused as T2T does."""
        recorded = fingerprint.read_sidecar(path, self._stores)
        if recorded is None:
            LOG.info("%s has no %s: reused as given", path, fingerprint.sidecar_path(path))
            return
        assert self.fingerprint is not None  # set by the job before anything is chosen
        changes = fingerprint.differences(recorded, self.fingerprint)
        if changes:
            raise DatagenError("%s was made from other vocab inputs/flags: %s; pass "
                               "--overwrite to relearn it" % (path, "; ".join(changes)))

    # -- choosing, writing, learning -------------------------------------------------------
    def choose(self, plan: VocabPlan) -> VocabChoice:
        """Which vocabularies are reused, given or learnt. Reused ones are checked and loaded
        here, before any pass runs."""
        reused = {}
        to_learn = {}
        given = self.given(plan)
        for name, (path, train) in sorted(plan.items()):
            if name in given:
                continue
            if self.files.exists(path) and not self._config.job.overwrite:
                self.check_reused(path)
                LOG.info("vocab %s: reusing %s", name, path)
                try:  # e.g. a byte_bpe vocabulary without --bpe_eos_token
                    vocabulary = self.files.load(path)
                except ValueError as e:
                    raise DatagenError("%s: %s" % (path, one_line(e))) from None
                reused[name] = {"path": path, "size": vocabulary.vocab_size, "reused": True,
                                **id_facts(vocabulary)}
                continue
            to_learn[name] = train
        return VocabChoice(reused, given, to_learn)

    def _write(self, path: str, files: VocabFiles) -> None:
        """Writes a vocabulary (`VocabularyFiles.write`). Its fingerprint sidecar goes
        first, so a vocab file this job wrote never lacks one (a sidecar without its vocab
        file is rewritten with the next vocab)."""
        assert self.fingerprint is not None  # set by the job before anything is written
        fingerprint.write_sidecar(path, self.fingerprint, self._stores)
        self.files.write(path, files)

    def write_given(self, plan: VocabPlan, given: Dict[str, str]) -> Dict[str, dict]:
        """Copies the given vocabularies into the output; returns their report."""
        report = {}
        for name in sorted(given):
            vocabulary = self.files.load(given[name])
            if vocabulary.load_note:
                LOG.info("vocab %s: %s %s", name, given[name], vocabulary.load_note)
            self._write(plan[name][0], vocabulary.to_files())
            report[name] = {"path": plan[name][0], "size": vocabulary.vocab_size,
                            "reused": False, "given": given[name], **id_facts(vocabulary)}
        return report

    @staticmethod
    def sample_files(to_learn: Mapping[str, List[Dataset]],
                     prepared: Optional[Mapping[str, List[Prepared]]]
                     ) -> Dict[str, List[tuple]]:
        """{name: [(path, size[, rejected_path[, dropped_path]])]}: each vocabulary samples its side of every train dataset,
        the line files the prepare step made, sized by its scan (`prepared`); with
        `prepared` None the datasets' own files, sized by a scan in the same pass (None)."""
        by_index = {p.ds["index"]: p for p in (prepared or {}).get("train", [])}

        def sampled(path, facts, p=None, side=0):
            # A cleaned dataset (pipeline.driver.cleaning): only its kept lines are sampled,
            # sized as the file of those lines would be (a converted side's rejected units
            # are not put back then: the vocabulary is learnt from clean text).
            if p is not None and p.dropped:
                return path, facts["bytes"] - p.dropped_bytes[side], None, p.dropped
            # A converted dataset's side with rejected units: its `.rejected` lines are
            # sampled too, in place (`transforms.prepare.materialize`), and count in the size.
            if facts.get("rejected_lines"):
                return path, facts["bytes"] + facts["rejected_bytes"], facts["rejected_lines"]
            return path, facts["bytes"]

        files: Dict[str, List[tuple]] = {}
        for name, train in to_learn.items():
            files[name] = []
            for ds in train:
                p = by_index.get(ds.index)
                if name in ("source", "shared"):
                    files[name].append(sampled(p.source_lines, p.source_facts, p, 0) if p
                                       else (ds.source, None))
                if name in ("target", "shared"):
                    files[name].append(sampled(p.target_lines, p.target_facts, p, 1) if p
                                       else (ds.target, None))
        return files

    def mixed_sample_files(self, to_learn: Mapping[str, List[Dataset]],
                           prepared: Mapping[str, List[Prepared]]
                           ) -> Tuple[Dict[str, List[tuple]], Dict[str, str]]:
        """With several corpora: ({name: [(path, size, None, dropped, (lines, take))]},
        {path: language}) of every side of every train dataset, each file taking the lines
        the temperature-sampled mix gives it (`transforms.pairs.mixing.plan_mix`; files it takes
        nothing from are left out). The plan's figures are kept for the report (`mix`)."""
        weights = {number: corpus.weight for number, corpus in enumerate(self._config.corpora)}
        by_index = {p.ds["index"]: p for p in prepared.get("train", [])}
        sides = []
        for ds in next(iter(to_learn.values())):
            p = by_index[ds.index]
            for side, (path, facts, lang) in enumerate((
                    (p.source_lines, p.source_facts, ds.source_lang),
                    (p.target_lines, p.target_facts, ds.target_lang))):
                dropped = p.dropped_bytes[side] if p.dropped else 0
                sides.append((path, facts["bytes"] - dropped, p.dropped,
                              mixing.MixFile(lang or "", facts["lines"] - p.dropped_pairs,
                                             facts["bytes"] - dropped, weights[ds.corpus])))
        vocab = self._config.vocab
        self.mix = mixing.plan_mix([side[3] for side in sides], vocab.sampling_temperature,
                                   vocab.file_byte_budget)
        files = [(path, size, None, dropped, (mix.lines, take))
                 for (path, size, dropped, mix), take in zip(sides, self.mix.takes) if take]
        languages = {side[0]: side[3].language for side in sides}
        return {name: files for name in to_learn}, languages

    def learner(self, to_learn: Mapping[str, List[Dataset]],
                prepared: Optional[Mapping[str, List[Prepared]]]) -> VocabLearner:
        """The run's kind's learner of `to_learn` ({name: [train datasets]}), sampling the
        files `sample_files` says (`prepared` None: the prepare stage rides along its first
        pass and sizes them), or with several corpora the mix's (`mixed_sample_files`)."""
        if self._config.several_corpora:
            assert prepared is not None  # a mix needs every file's lines first
            files, self._languages = self.mixed_sample_files(to_learn, prepared)
        else:
            files = self.sample_files(to_learn, prepared)
        return self.kind.learner(LearnerInputs(self._layout.vocab_work_dir, files, self._config,
                                               self.reserved))

    def _mix_report(self, sampling: List[dict]) -> Dict[str, Any]:
        """The summary's figures of the mix: the temperature, and per language its lines,
        weight, share (the formula's), the sample's lines planned and what was sampled."""
        assert self.mix is not None
        languages = {lang: dict(figures, sampled_lines=0, sampled_chars=0, sampled_bytes=0)
                     for lang, figures in self.mix.languages.items()}
        for s in sampling:
            figures = languages[self._languages[s["path"]]]
            for key in ("sampled_lines", "sampled_chars", "sampled_bytes"):
                figures[key] += s.get(key, 0)
        total = sum(f["sampled_lines"] for f in languages.values())
        for figures in languages.values():
            figures["sampled_share"] = (round(figures["sampled_lines"] / total, 6)
                                        if total else 0.0)
        return {"sampling_temperature": self._config.vocab.sampling_temperature,
                "sample_lines": self.mix.sample_lines, "languages": languages}

    def learn(self, plan: VocabPlan, learner: VocabLearner) -> Dict[str, Any]:
        """Runs the learner's passes not run yet (`passes`), writes the vocabularies;
        returns their report."""
        learnt = self.passes.run_rest(learner)
        stats = learnt.stats
        report: Dict[str, Any] = {}
        for name, files in sorted(learnt.vocabs.items()):
            path = plan[name][0]
            self._write(path, files)
            sampling = [s for s in stats.sampling if s["vocab"] == name]
            vocabulary = self.files.load(path)
            report[name] = {
                "path": path,
                "size": vocabulary.vocab_size,
                **id_facts(vocabulary),
                "reused": False,
                "sampled_lines": sum(s["sampled_lines"] for s in sampling),
                "sampled_chars": sum(s["sampled_chars"] for s in sampling),
                "files": sampling}
            if name in stats.distinct_tokens:  # a kind that counts tokens
                report[name]["distinct_tokens"] = stats.distinct_tokens[name]
            if name in stats.chosen_min_count:  # learnt by bisection (subword)
                report[name]["min_count"] = stats.chosen_min_count[name]
            report[name].update(stats.vocab_facts.get(name, {}))
            if self.mix is not None:
                report[name]["mix"] = self._mix_report(sampling)
            LOG.info("vocab %s: %d entries -> %s", name, report[name]["size"],
                     FileSystems.split(path)[1])
        report["passes"] = stats.passes
        # The learner's work files have no reader left (the vocabularies are written), and
        # the subword token indexes alone outweigh the whole output at the bench's size: kept
        # through the encode pass they made its temporary disk 1.3x the output (issue 49).
        file_io.delete_tree(self._layout.vocab_work_dir, self._stores)
        return report

    def dry_run(self, plan: VocabPlan, riding: Optional[RidingPrepare] = None) -> None:
        """--dry_run: builds the kind's vocab passes (`VocabLearner.dry_run_passes`: the
        builders a real run uses) over every vocabulary of `plan`, with placeholder file
        sizes unless `riding` (the prepare stage along the first pass) sizes them."""
        files = {name: [(ds.source, None if riding else 0) for ds in train]
                 for name, (_, train) in plan.items()}
        self.passes.translate(self.kind.learner(LearnerInputs(
            self._layout.vocab_work_dir, files, self._config, self.reserved)), riding)


def id_facts(vocabulary: Vocabulary) -> Dict[str, Any]:
    """The summary's `pad_id` and `eos_ids` of a vocabulary (its kind's codec declares them):
    what the readers pad its records with and what ends each one, read from the summary by
    the readers (`pipeline.tools.reader`), so a trainer need not know the kind's layout."""
    return {"pad_id": vocabulary.pad_id(), "eos_ids": vocabulary.eos_ids()}
