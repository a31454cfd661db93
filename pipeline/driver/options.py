"""DatagenOptions: the job's own flags, parsed apart from Beam's pipeline options.

`parse_flags` splits one command line in two: the job's flags (an argparse Namespace) and
everything else, which becomes Beam's `PipelineOptions`. DatagenOptions is deliberately not a
`PipelineOptions` subclass: Beam sends the options of every such subclass to its workers,
which do not know the job's flags and log "Discarding unparseable args" for each pass.
"""

import argparse
import logging
from typing import Any, Dict, List, NamedTuple, Sequence, Tuple

from pipeline.runtime.console import LOG_LEVELS
from pipeline.runtime.flag_ranges import INT32_MAX, bounded
from pipeline.runtime.flags import FlagParser
from pipeline.output.names import LANG_MAX, PROBLEM_MAX, check_name
from pipeline.runtime.errors import DatagenError
from transforms.contracts.config import DatagenConfig
from pipeline.driver.corpora import read_corpora
from pipeline.driver.kinds import KindPlugin, every_plugin, kind_part
from transforms.codecs.kinds import DEFAULT_KIND, KIND_NAMES
from transforms.shards.record_formats import DEFAULT_FORMAT, FORMATS, SPLITS
from transforms.vocab.subword_learning import MIN_COUNT_HIGH, MIN_COUNT_LOW
from transforms.storage import file_io

LOG = logging.getLogger("datagen")


_SUBTOKEN_LENGTH = bounded(int, 0, INT32_MAX)


def _optional_length(value):
    """`--max_subtoken_length none` (or 0) means no limit, as T2T's None; else a length of
    at most INT32_MAX (the index's C code takes no larger one)."""
    if value is None or str(value).lower() in ("none", "0", ""):
        return None
    return _SUBTOKEN_LENGTH(value)


# The subword search bisects min_count over [MIN_COUNT_LOW, MIN_COUNT_HIGH]: a round probes
# at most that many min_counts, and the search is that many levels deep at most.
_SEARCH_PROBES = MIN_COUNT_HIGH - MIN_COUNT_LOW + 1
SEARCH_LEVELS = _SEARCH_PROBES.bit_length()
# T2T's shard names number shards with 5 digits (`-00000-of-00010`).
MAX_SHARDS = 99999


IN_PROCESS_BELOW_MB_DEFAULT = 16.0


class DatagenOptions:
    """Flags of `python -m pipeline.datagen` (Beam's own, like --runner, are parsed by Beam)."""

    @classmethod
    def _add_argparse_args(cls, parser):
        add = parser.add_argument
        add("--train_source", default=None, help="File pattern(s), comma-separated, of training "
            "source text: one sentence per line (plain, .gz, .bz2, .zst, .xz, ...), or SGM/IWSLT XML; "
            "`archive.tgz!path/inside` reads a member of a .tar/.tar.gz/.tgz/.zip archive. The i-th "
            "source file (sorted) pairs with the i-th target file.")
        add("--train_target", default=None, help="File pattern(s) of the aligned training target text.")
        add("--dev_source", default=None, help="File pattern(s) of dev source text (optional).")
        add("--dev_target", default=None, help="File pattern(s) of dev target text.")
        for split in SPLITS:
            add("--%s_format" % split, default="auto", choices=("auto", "lines", "sgm", "iwslt"),
                help="Format of --%s_source/--%s_target: from the file name (.sgm, .xml, "
                     "else lines) or as given." % (split, split))
            add("--%s_tsv" % split, default=None, help="TSV file pattern(s) for %s: one pair "
                "per row, columns --source_column/--target_column." % split)
            add("--%s_tmx" % split, default=None, help="TMX file pattern(s) for %s: sides "
                "chosen by xml:lang = --source_lang/--target_lang." % split)
        add("--source_column", type=bounded(int, 0, INT32_MAX), default=0,
            help="TSV column of the source text (0-based).")
        add("--target_column", type=bounded(int, 0, INT32_MAX), default=1,
            help="TSV column of the target text (0-based).")
        add("--on_misaligned", default="error", choices=("error", "reject"),
            help="Files with different line counts, TMX units missing a side, SGM/IWSLT "
                 "segments without a partner, TSV rows missing a column: stop with an error "
                 "naming the first one (default), or reject them and go on.")
        add("--on_invalid_utf8", default="error", choices=("error", "reject", "replace"),
            help="A line that is not UTF-8: stop with an error naming file and line (default), "
                 "reject its pair, or decode it with U+FFFD replacement characters.")
        add("--max_line_chars", type=bounded(int, 0), default=0,
            help="Reject pairs with a side longer than this many characters (0: no limit).")
        add("--filters", default=None,
            help="Clean the corpus: a YAML file whose `filters:` list uses OpusFilter's filter "
                 "names and parameters (README, Cleaning); dropped pairs go to the rejects "
                 "with the filter's name.")
        add("--dedup", default="none", choices=("none", "pairs", "source"),
            help="Drop exact duplicate pairs (or pairs with a duplicate source) within each "
                 "split, keeping the first in input order, as OpusFilter's remove_duplicates.")
        add("--drop_dev_overlap", action="store_true", default=False,
            help="Drop train pairs that also occur in dev.")
        add("--output_dir", help="Required: where vocab, shards and the summary go (any Beam "
            "FileSystems path).")
        add("--problem", default="translate_enzh_wmt8k", help="File-name prefix, as T2T's problem "
            "name: letters, digits and _ - . @ +, not starting with . or -, at most %d "
            "characters." % PROBLEM_MAX)
        add("--source_lang", default=None, help="Source language: the vocab file's suffix "
            "(as --problem's characters, at most %d), and for TMX the xml:lang of the source "
            "side; required for TSV/TMX-only runs (default: the source files' extension)."
            % LANG_MAX)
        add("--target_lang", default=None, help="Target language: as --source_lang, for the "
            "target side (default: the target files' extension).")
        add("--corpora", default=None, help="Many language pairs in one job: a YAML file "
            "listing named corpora, each with source_lang, target_lang, train (and dev) "
            "inputs in any form the input flags take, and an optional weight (README, Many "
            "language pairs). Replaces the input and language flags.")
        add("--vocab_type", default=DEFAULT_KIND, choices=KIND_NAMES,
            help="; ".join("%s: %s" % (kind.name, kind.description)
                           for kind in every_plugin()) + ".")
        add("--vocab_size", type=bounded(int, 1, INT32_MAX), default=8192,
            help="Target vocabulary size (subword: approximate, as T2T; byte_bpe: exact, "
                 "bytes + merges + special tokens; word and sentencepiece: exact, specials "
                 "included). With a given vocabulary it only names the copy.")
        for kind in every_plugin():  # each kind's own flags
            kind.add_flags(add)
        add("--shared_vocab", action="store_true", default=False,
            help="Learn one vocabulary from both sides, named without a language "
                 "(vocab.{problem}.{size}.subwords).")
        add("--sampling_temperature", type=bounded(float, above=0), default=5.0,
            help="With several corpora: language l's share of the vocabulary sample (and a "
                 "pair's rate with --mix_shards) is proportional to (n_l / N) ** (1 / T) "
                 "times its corpora's weight, n_l its lines; 1 is proportional to the data.")
        add("--lang_tags", default=None, choices=("target", "none"),
            help="Prepend the target language's tag <2xx> (a reserved vocabulary entry) to "
                 "every input: target (the default with more than one target language) or "
                 "none (the default otherwise).")
        add("--file_byte_budget", type=bounded(float, above=0), default=1e8,
            help="Characters sampled per file for the vocabulary (T2T's file_byte_budget).")
        add("--max_subtoken_length", type=_optional_length, default=200,
            help="subword: longest subtoken counted while learning (T2T's "
                 "max_subtoken_length); 'none' or 0 for no limit.")
        add("--num_train_shards", type=bounded(int, 1, MAX_SHARDS), default=10,
            help="Shard files of the train split ({problem}-train-00000-of-000NN).")
        add("--num_dev_shards", type=bounded(int, 1, MAX_SHARDS), default=1,
            help="Shard files of the dev split.")
        add("--output_format", default=DEFAULT_FORMAT, choices=sorted(FORMATS),
            help="Record format of the shards: tfrecord (tf.train.Example records, T2T's), "
                 "array_record (the same records, for Grain; names end .array_record) or "
                 "parquet (inputs/targets list<int32> columns; names end .parquet).")
        add("--mix_shards", action="store_true", default=False,
            help="With several corpora: write the train pairs of every language pair into "
                 "one globally shuffled set of shards, each pair at its --sampling_temperature "
                 "rate (smaller pairs repeated), instead of shards per pair.")
        add("--max_length", type=bounded(int, 0, INT32_MAX), default=0,
            help="Reject train pairs whose longer side has more than this many ids, as "
                 "stored (EOS included): T2T's training-time length filter applied at "
                 "datagen time (reason over_max_length); dev is kept whole, as T2T's "
                 "evaluation keeps it. 0: no limit.")
        add("--packed_length", type=bounded(int, 0, INT32_MAX), default=0,
            help="Pack pairs into records of at most this many ids per side, with "
                 "inputs/targets_segmentation and _position features, as T2T 1.15.7's "
                 "pack_examples packs a translate problem's shards (a pair longer than this "
                 "stays alone in its record). 0: one pair per record.")
        add("--seed", type=bounded(int), default=0, help="Seed of the deterministic global shuffle.")
        add("--allow_empty", action="store_true", default=False,
            help="Write empty shards (and mark the output complete) when a split has no pair "
                 "to write: empty input, or every pair rejected. Without it such a run "
                 "exits 2 (\"no pairs to write\").")
        add("--overwrite", action="store_true", default=False,
            help="Replace a completed output directory, also one made from other inputs or "
                 "flags (and relearn its vocabularies); without it that is exit 2.")
        add("--vocab_partitions", type=bounded(int, 1, _SEARCH_PROBES), default=2,
            help="Work items per vocabulary in each bisection round, each taking a share of "
                 "the round's probes. A round probes at least this many min_counts of a "
                 "vocabulary (the one the search needs, then those it likely needs next), "
                 "so it can advance the search that many levels (parallelism only; the "
                 "result does not depend on it).")
        add("--bisection_rounds_per_pass", type=bounded(int, 1, SEARCH_LEVELS), default=10,
            help="Bisection rounds (each: 4 refinement iterations of its probes) in one Beam "
                 "pipeline. Each round probes the min_count the search needs and enough levels "
                 "below it for the search to end within the pass's rounds (10 always decides "
                 "the search over [1, 1000] in one pass; a round left with nothing to probe "
                 "does no work); fewer rounds: fewer stages, more probes per round.")
        add("--bisection_lookahead", type=bounded(int, 0, SEARCH_LEVELS), default=0,
            help="Least number of bisection levels below the needed min_count that a round "
                 "probes too (more when the rounds left need it).")
        add("--encode_chunk_lines", type=bounded(int, 1), default=10000,
            help="Lines per parallel encoding chunk of an uncompressed file. Runners hand "
                 "each worker its share of the chunks up front, so small chunks keep the "
                 "workers equally busy to the end.")
        add("--lock_stale_seconds", type=bounded(float, above=0), default=120.0,
            help="A run holds {output_dir}/{problem}.datagen.lock, refreshes its heartbeat and "
                 "records this value in it: another host takes the lock over once the "
                 "heartbeat is older than the holder's value (a killed run); on this host a "
                 "live holder is never taken over, a dead one at once.")
        add("--progress_seconds", type=bounded(float, above=0), default=30.0,
            help="A pass running longer says how far it is this often: its stage, round and "
                 "units done, the encode pass's pairs and shards, and the time left.")
        add("--log_level", default=None, choices=LOG_LEVELS,
            help="Beam's and TensorFlow's own logging at this level (and the job's debug lines "
                 "with debug); by default only their errors show, beside the job's progress.")
        add("-v", dest="log_level", action="store_const", const="info",
            help="Same as --log_level info.")
        add("--in_process_below_mb", type=bounded(float, 0), default=IN_PROCESS_BELOW_MB_DEFAULT,
            help="With DirectRunner's multi_processing mode, run the passes in this process "
                 "instead when the input files total less than this many MB: starting the "
                 "worker processes takes longer than such a job's work. 0 always starts "
                 "the workers. The output is the same either way.")


def job_flag_parser(**kwargs: Any) -> FlagParser:
    """A parser of the job's own flags (DatagenOptions); `kwargs` go to ArgumentParser."""
    parser = FlagParser(**kwargs)
    DatagenOptions._add_argparse_args(parser)
    return parser


def parse_flags(argv: Sequence[str]) -> "tuple[argparse.Namespace, list[str]]":
    """(the job's flags: an argparse Namespace, Beam's arguments: a list) of a command line.

    Every job flag is taken out; what is left, in its order, is for `PipelineOptions`."""
    return job_flag_parser().parse_known_args(list(argv))


def _defaults():
    """{flag: default} of DatagenOptions' own flags."""
    return vars(parse_flags([])[0])


def flag_defaults() -> Dict[str, Any]:
    """{flag: default} of the job's own flags (a copy: callers may keep it)."""
    return dict(_defaults())


# the flags a corpora file replaces (each entry names its inputs and languages)
CORPORA_REPLACE = ("train_source", "train_target", "dev_source", "dev_target", "train_tsv",
                   "dev_tsv", "train_tmx", "dev_tmx", "source_lang", "target_lang")


def _check_general_flags(f: argparse.Namespace) -> None:
    """Refuses impossible combinations of the flags every kind shares (DatagenError, exit 2);
    each numeric flag's range is checked where it is declared (its `bounded` type), the
    names by `pipeline.output.names`, a kind's own flags by its plugin."""
    if not f.output_dir:
        raise DatagenError("--output_dir is required")
    if f.corpora:
        given = [flag for flag in CORPORA_REPLACE if getattr(f, flag)]
        if given:
            raise DatagenError("--corpora names every input and language: leave out %s"
                               % ", ".join("--" + flag for flag in given))
    elif not (f.train_source or f.train_target or f.train_tsv or f.train_tmx):
        raise DatagenError("no training data: pass --train_source/--train_target, "
                           "--train_tsv or --train_tmx (or --corpora)")
    for split in SPLITS:
        if bool(getattr(f, split + "_source")) != bool(getattr(f, split + "_target")):
            raise DatagenError("--%s_source and --%s_target go together" % (split, split))
    if (f.train_tmx or f.dev_tmx) and not (f.source_lang and f.target_lang):
        raise DatagenError("TMX input needs --source_lang and --target_lang (xml:lang of "
                           "the sides)")
    if (f.train_tsv or f.dev_tsv) and f.source_column == f.target_column:
        raise DatagenError("--source_column and --target_column must be different columns")


class Command(NamedTuple):
    """A command line of the job, parsed once: what every step reads from it."""
    config: DatagenConfig            # the job's flags, checked, typed and frozen
    kind: KindPlugin                 # the driver's part of the --vocab_type chosen
    beam_args: List[str]             # the rest, in order: Beam's PipelineOptions


def parse_command_line(argv: Sequence[str]) -> Command:
    """The one place a run's command line is parsed and checked (DatagenError: one line,
    exit 2); flags no one defines are refused before (`pipeline.datagen.refuse_unknown_flags`).

    In order: the general flags; the names that become file names; the kind's own flags
    (its plugin); the paths made absolute (a relative path means the same thing to every
    pass, worker and rerun)."""
    flags, beam_args = parse_flags(argv)
    _check_general_flags(flags)
    defaults = _defaults()
    check_name(flags.problem, "--problem", PROBLEM_MAX)
    for flag in ("source_lang", "target_lang"):
        check_name(getattr(flags, flag), "--" + flag, LANG_MAX)
    part = kind_part(flags, defaults)
    output_dir = file_io.absolute(flags.output_dir)
    given = tuple(file_io.absolute(name) for name in part.given)
    corpora = read_corpora(flags, beam_args) if flags.corpora else None
    several = corpora is not None and len(corpora) > 1
    if several and len(given) > 1:
        raise DatagenError("--%s: several corpora share one vocabulary: give one, not %d"
                           % (part.kind.given_flag, len(given)))
    for flag in ("mix_shards", "sampling_temperature"):  # not ignored: refused
        if not several and getattr(flags, flag) != defaults[flag]:
            raise DatagenError("--%s applies to several corpora (a --corpora file of two or "
                               "more) only" % flag)
    config = DatagenConfig.from_flags(vars(flags), output_dir=output_dir, given=given,
                                      loader=part.loader, kind_settings=part.settings,
                                      corpora_parsed=corpora)
    return Command(config, part.kind, beam_args)


def default_config(**flags: Any) -> DatagenConfig:
    """The DatagenConfig of a run given only `flags` ({flag: value}), every other setting at
    its flag's default, unchecked; for tests and library use, so defaults stay in the flag
    definitions."""
    parsed = parse_flags([])[0]
    for name, value in flags.items():
        if not hasattr(parsed, name):
            raise TypeError("no flag --%s" % name)
        setattr(parsed, name, value)
    part = kind_part(parsed, _defaults())
    return DatagenConfig.from_flags(vars(parsed), given=tuple(part.given), loader=part.loader,
                                    kind_settings=part.settings)
