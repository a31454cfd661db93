"""The multi-pass driver that learns T2T subword vocabularies with Beam.

Pass 1 samples every file (T2T's byte budget), counts tokens with a combine, checkpoints the
counts under the work directory and runs the first bisection probes. Every later pass reads the
checkpoint and runs the next probes. Each pass runs all four refinement iterations of its
probes (`LearnSubwordVocabs`), for every vocabulary still searching, so the source and target
vocabularies share passes. With `bisection_lookahead` L a pass also probes the L bisection
levels below the current one, so the search advances L+1 levels per pass.

The bisection itself (`subword_learner.bisect_min_count`) is replayed from the start after each
pass with every size learnt so far; where it needs a size it does not have, that is the next
pass's probe.
"""

import logging

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipeline.runtime import console
from pipeline.runtime.runners import DatagenError
from transforms.storage import file_io
from transforms.codecs import subword_learner as learner
from transforms.json_result import WriteJsonResult
from transforms.subword_refine import BuildTokenIndexes, LearnSubwordVocabs
from transforms.token_counts import SampleAndCountTokens

LOG = logging.getLogger("datagen")

MIN_COUNT_LOW, MIN_COUNT_HIGH = 1, 1000


def _probe_key(name, min_count):
    return "%s:%d" % (name, min_count)


def _vocab_report(vocabs):
    return {_probe_key(name, t): v for (name, t), v in vocabs.items()}


def _round_report(item):
    round_no, vocabs = item
    return {"round": round_no, "vocabs": _vocab_report(vocabs)}


def _sizes_report(item):
    round_no, iteration, sizes = item
    return {"round": round_no, "iteration": iteration,
            "sizes": {_probe_key(n, t): s for (n, t), s in sizes.items()}}


def _probes_report(item):
    round_no, probes = item
    return {"round": round_no, "probes": probes}


class SubwordVocabSearch:
    """Bisection state of several vocabularies: what was learnt, what to probe, what was chosen."""

    def __init__(self, names, target_size, lookahead):
        self.names = list(names)
        self.target_size = target_size
        self.lookahead = lookahead
        self.vocabs = {name: {} for name in names}
        self.chosen = {}

    def known_sizes(self):
        return {name: {t: len(v) for t, v in self.vocabs[name].items()} for name in self.names}

    def next_probes(self):
        """{name: [min_count, ...]} for the names whose bisection needs more sizes."""
        probes = {}
        for name, sizes in self.known_sizes().items():
            if name in self.chosen:
                continue
            chosen, wanted = learner.next_probes(sizes, self.target_size, self.lookahead,
                                                 MIN_COUNT_LOW, MIN_COUNT_HIGH)
            if chosen is not None:
                self.chosen[name] = chosen
            else:
                probes[name] = wanted
        return probes

    def add(self, vocabs):
        for (name, min_count), vocab in vocabs.items():
            self.vocabs[name][min_count] = vocab

    def result(self, name):
        return self.vocabs[name][self.chosen[name]]


def check_sampling(sampling):
    """Raises DatagenError when a file could not be sampled (its statistics carry the error:
    the sampler reports it instead of failing the pipeline). Returns `sampling` sorted."""
    errors = sorted({s["error"] for s in sampling if s.get("error")})
    if errors:
        raise DatagenError("bad input, nothing written: " + "; ".join(errors))
    return sorted(sampling, key=lambda s: (s["vocab"], s["path"]))


def _with_size(item, facts):
    name, path, size, *rest = item
    # A file the scan could not read has no size; the driver reports its error after the pass.
    return (name, path, facts[path].get("bytes", 0) if size is None else size, *rest)


def sample_items(p, files, scanned=None):
    """(vocab_name, path, size[, rejected_path]) of every file to sample: {name: [(path,
    size[, rejected_path])]} as a PCollection; a size None is taken from `scanned` ((path,
    facts) of a scan in the same pipeline)."""
    items = p | "Files" >> beam.Create(  # spread by the sampler (no reshuffle here)
        [(name, *entry) for name in sorted(files) for entry in files[name]], reshuffle=False)
    if scanned is not None:
        items = items | "FileSizes" >> beam.Map(_with_size, facts=beam.pvalue.AsDict(scanned))
    return items


def _one_file_each(files):
    """Whether every vocabulary samples exactly one file ({name: [(path, size), ...]})."""
    return all(len(entries) == 1 for entries in files.values())


def _on_invalid_for_counting(config, scanned):
    """With the scan in the same pipeline, invalid UTF-8 is the scan's to report (the driver
    stops before writing anything), so counting replaces it rather than failing the pipeline."""
    on_invalid = config.read.on_invalid_utf8
    return "replace" if scanned is not None and on_invalid == "error" else on_invalid


def build_vocab_pass(p, files, indexes, index_dir, known, result_path, config, scanned=None):
    """Adds one vocab pass to pipeline `p`.

    The first pass (`files` given: {name: [(path, size)]}) samples and counts tokens and
    writes each vocabulary's token index under `index_dir`; later passes (`files` None) read
    the indexes the first pass wrote (`indexes`: {name: info}); a size None in `files` comes
    from `scanned`, the prepare stage's scan in the same pipeline. Then up to
    `bisection_rounds` rounds of the bisection run, from the sizes already `known`
    ({name: {min_count: size}}). The pass's results go to `result_path`.
    """
    outputs = {}
    if files is not None:
        names = sorted(files)
        counted = (sample_items(p, files, scanned)
                   | "SampleAndCount" >> SampleAndCountTokens(
                       names, config.vocab.file_byte_budget,
                       _on_invalid_for_counting(config, scanned),
                       count_tokens=config.vocab.kind.token_counter(),
                       one_file_each=_one_file_each(files)))
        index_pc = counted["totals"] | "Index" >> BuildTokenIndexes(
            index_dir, config.vocab.max_subtoken_length)
        outputs.update(indexes=index_pc, sampling=counted["stats"],
                       distinct=counted["distinct"] | "DistinctToList" >> beam.Map(list))
    else:
        names = sorted(indexes)
        index_pc = p | "Indexes" >> beam.Create(sorted(indexes.items()), reshuffle=False)
    learnt = index_pc | "Learn" >> LearnSubwordVocabs(
        names, config.vocab.vocab_size, config.vocab.vocab_partitions,
        rounds=config.vocab.bisection_rounds, lookahead=config.vocab.bisection_lookahead,
        known=known)
    outputs.update(vocabs=learnt["vocabs"] | "VocabReport" >> beam.Map(_round_report),
                   sizes=learnt["sizes"] | "SizesReport" >> beam.Map(_sizes_report),
                   probes=learnt["probes"] | "ProbesReport" >> beam.Map(_probes_report))
    _ = outputs | "Result" >> WriteJsonResult(result_path)


def token_index_dir(work_dir):
    return FileSystems.join(work_dir, "token_index")


def learn_subword_vocabs(work_dir, files, config, run_pass, first_pass=None):
    """Learns one vocabulary per name in `files` ({name: [(path, size_in_bytes), ...]}).

    `config` is the run's `transforms.config.DatagenConfig`; `run_pass(label, build)` runs
    one Beam pipeline built by `build(pipeline)` and times it. `first_pass`, if given, is
    (add, label, after): `add(pipeline)` adds another stage to the first pass and returns a scan
    ((path, facts)) that sizes the files whose size is None, and `after()` runs when that
    pass has finished. Returns ({name: vocab list}, statistics).
    """
    names = sorted(files)
    search = SubwordVocabSearch(names, config.vocab.vocab_size, config.vocab.bisection_lookahead)
    stats = {"passes": [], "sampling": [], "distinct_tokens": {}, "chosen_min_count": {}}
    indexes = None
    pass_no = 0
    while pass_no == 0 or search.next_probes():
        pass_no += 1
        first = pass_no == 1
        extra = first_pass if first else None
        label, build, result_path = _subword_pass(
            pass_no, work_dir, files, indexes, search.known_sizes(), config, extra)
        seconds = run_pass(label, build)
        if extra:
            extra[2]()
        result = file_io.read_work_json(result_path, getattr(run_pass, "stores", None))
        if first:
            indexes = dict(result["indexes"])
            stats["sampling"] = check_sampling(result["sampling"])
            stats["distinct_tokens"] = {name: 0 for name in files}
            stats["distinct_tokens"].update(dict(result.get("distinct", [])))
        learnt = {}
        for report in result.get("vocabs", []):
            for key, vocab in report["vocabs"].items():
                name, t = key.rsplit(":", 1)
                learnt[(name, int(t))] = vocab
        # a pass numbers its rounds from 1; the job numbers them on, as the pass labels do
        first_round = (pass_no - 1) * config.vocab.bisection_rounds
        rounds = {}  # one report per vocabulary and round: merged per round
        for report in sorted(result.get("probes", []), key=lambda r: sorted(r["probes"])):
            rounds.setdefault(first_round + report["round"], {}).update(report["probes"])
        by_iteration = {}  # one report per work item: merged per (round, iteration)
        for report in result.get("sizes", []):
            by_iteration.setdefault((first_round + report["round"], report["iteration"]),
                                    {}).update(report["sizes"])
        last_iteration = {r: sizes for (r, _), sizes in sorted(by_iteration.items())}
        for round_no, sizes in sorted(last_iteration.items()):
            LOG.info("%s", console.round_line(round_no, sizes))
        if not learnt:
            raise RuntimeError("vocab pass %d learnt nothing; the bisection cannot advance"
                               % pass_no)
        search.add(learnt)
        stats["passes"].append({
            "pass": pass_no, "seconds": round(seconds, 3),
            "rounds": [{"round": r, "probes": rounds[r]} for r in sorted(rounds)],
            "iterations": [{"round": r, "iteration": i, "sizes": dict(sorted(sizes.items()))}
                           for (r, i), sizes in sorted(by_iteration.items())],
            "sizes": {_probe_key(n, t): len(v) for (n, t), v in learnt.items()}})
    stats["chosen_min_count"] = dict(search.chosen)
    return {name: search.result(name) for name in files}, stats


def _subword_pass(pass_no, work_dir, files, indexes, known, config, first_pass):
    """(label, build(pipeline), result path) of subword vocab pass `pass_no`: the first
    samples `files` (with `first_pass`'s stage riding along), a later one reads `indexes`;
    both continue the bisection from the sizes `known`. For a real run and a dry run alike."""
    first = pass_no == 1
    names = sorted(files)
    index_dir = token_index_dir(work_dir)
    result_path = FileSystems.join(work_dir, "vocab_pass_%03d.json" % pass_no)

    def build(p):
        scanned = first_pass[0](p) if first_pass else None
        build_vocab_pass(p, files if first else None, indexes, index_dir, known,
                         result_path, config, scanned)

    rounds = config.vocab.bisection_rounds
    label = "vocab %s: %s%sbisection rounds %d-%d" % (
        ", ".join(names), first_pass[1] + "; " if first_pass else "",
        "sample, count, index; " if first else "", (pass_no - 1) * rounds + 1, pass_no * rounds)
    return label, build, result_path


def translate_subword_vocab_passes(work_dir, files, config, run_pass, first_pass):
    """--dry_run: the first vocab pass (with `first_pass` riding along, as in a real run)
    and a later one reading placeholder token indexes."""
    index_dir = token_index_dir(work_dir)
    indexes = {name: {"path": FileSystems.join(index_dir, name + ".npz"), "alphabet": [],
                      "distinct_tokens": 0} for name in files}
    known = {name: {} for name in files}
    for pass_no in (1, 2):
        label, build, _ = _subword_pass(pass_no, work_dir, files, indexes, known, config,
                                        first_pass if pass_no == 1 else None)
        run_pass(label, build)


# -- word and byte-level BPE vocabularies: one pass over the same sampled counts ------------

def build_counted_vocab_pass(p, kind, files, config, result_path, scanned=None):
    """One pass: sample and count with the kind's tokenizer, then build every vocabulary
    (`kind.vocabs_from_counts`)."""
    counted = (sample_items(p, files, scanned)
               | "SampleAndCount" >> SampleAndCountTokens(
                   sorted(files), config.vocab.file_byte_budget,
                   _on_invalid_for_counting(config, scanned), count_tokens=kind.token_counter(),
                   one_file_each=_one_file_each(files)))
    vocabs = kind.vocabs_from_counts(counted["totals"], config.vocab)
    _ = {"vocabs": vocabs, "sampling": counted["stats"],
         "distinct": counted["distinct"] | "DistinctToList" >> beam.Map(list)} | (
        "Result" >> WriteJsonResult(result_path))


def _counted_pass(kind, work_dir, files, config, first_pass):
    """(label, build(pipeline), result path) of the one pass of `learn_counted_vocabs`, for
    a real run and a dry run alike."""
    result_path = FileSystems.join(work_dir, "vocab_pass_001.json")
    label = "%s vocab %s: %ssample, count, build" % (
        kind.name, ", ".join(sorted(files)), first_pass[1] + "; " if first_pass else "")
    return label, lambda p: build_counted_vocab_pass(
        p, kind, files, config, result_path, first_pass[0](p) if first_pass else None), \
        result_path


def learn_counted_vocabs(kind, work_dir, files, config, run_pass, first_pass=None):
    """Vocabularies of `kind` learnt in one pass; returns ({name: content}, stats).

    `first_pass` is as for `learn_subword_vocabs`."""
    label, build, result_path = _counted_pass(kind, work_dir, files, config, first_pass)
    run_pass(label, build)
    if first_pass:
        first_pass[2]()
    result = file_io.read_work_json(result_path, getattr(run_pass, "stores", None))
    vocabs = dict(result.get("vocabs", []))
    for name in files:  # a vocabulary with nothing sampled still gets its specials
        if name not in vocabs:
            vocabs[name] = kind.empty_content(config.vocab)
    distinct = {name: 0 for name in files}
    distinct.update(dict(result.get("distinct", [])))
    stats = {"sampling": check_sampling(result["sampling"]),
             "distinct_tokens": distinct, "passes": []}
    return vocabs, stats


def translate_counted_vocab_pass(kind, work_dir, files, config, run_pass, first_pass):
    """--dry_run: the one pass of `learn_counted_vocabs`."""
    label, build, _ = _counted_pass(kind, work_dir, files, config, first_pass)
    run_pass(label, build)
