"""DatagenConfig: the settings the passes and transforms read, typed and frozen.

`pipeline.driver.options.parse_command_line` builds it once from the checked flags
(`DatagenConfig.from_flags`) and the driver hands each step and transform the parts it reads,
instead of dicts re-defaulted wherever they were read. Each field of a part is also its flag,
declared once in the field's metadata (`transforms.contracts.settings.setting`: name, default,
help, type, fingerprint role), so a setting has one name and one default, and a misspelt
setting is an AttributeError at once rather than a silent `.get` default. Nothing below `pipeline.driver.options` sees the argparse Namespace:
the job's own settings (`JobConfig`) and its input patterns (`InputConfig`) are here too, and
`flag_values` keeps every flag's value, in the flags' order, for the summary and the
fingerprint.

It lives in `transforms` and not in `pipeline` because DoFns carry it to the workers: every
field is a plain value (a kind's settings are a frozen dataclass of its learner's module, its
`loader` a Vocabulary class and options), so it pickles on any runner, and unpickling it
imports nothing of the driver.
"""

import dataclasses
from typing import Any, ClassVar, Dict, Mapping, Optional, Tuple

from transforms.codecs.lang_tags import LANG_TAG_CHOICES
from transforms.codecs.vocabulary import VocabularyLoader
from transforms.contracts.flag_ranges import INT32_MAX, bounded
from transforms.contracts.settings import (INPUT, LANG_MAX, LOG_LEVELS, MAX_SHARDS, OPERATIONAL,
                                           PROBLEM_MAX, Declared, derived, flag_fields,
                                           optional_length, setting)

MIN_COUNT_LOW, MIN_COUNT_HIGH = 1, 1000  # T2T's subword bisection over min_count
# The subword search bisects min_count over [MIN_COUNT_LOW, MIN_COUNT_HIGH]: a round probes
# at most that many min_counts, and the search is that many levels deep at most.
SEARCH_PROBES = MIN_COUNT_HIGH - MIN_COUNT_LOW + 1
SEARCH_LEVELS = SEARCH_PROBES.bit_length()
_COLUMN = bounded(int, 0, INT32_MAX)


def _format_help(split: str) -> str:
    return ("Format of --%s_source/--%s_target: from the file name (.sgm, .xml, else lines) "
            "or as given." % (split, split))


@dataclasses.dataclass(frozen=True)
class InputConfig:
    """The input flags as given (comma-separated patterns; listed by `pipeline.driver.datasets`)."""
    flags_title: ClassVar[str] = "input (the training and dev data)"  # its group in --help
    train_source: Optional[str] = setting(
        "File pattern(s), comma-separated, of training source text: one sentence per line "
        "(plain, .gz, .bz2, .zst, .xz, ...), or SGM/IWSLT XML; `archive.tgz!path/inside` reads "
        "a member of a .tar/.tar.gz/.tgz/.zip archive. The i-th source file (sorted) pairs "
        "with the i-th target file.", role=INPUT, vocab=True, corpora_replace=True)
    train_target: Optional[str] = setting(
        "File pattern(s) of the aligned training target text.", role=INPUT, vocab=True,
        corpora_replace=True)
    dev_source: Optional[str] = setting(
        "File pattern(s) of dev source text (optional).", role=INPUT, corpora_replace=True)
    dev_target: Optional[str] = setting(
        "File pattern(s) of dev target text.", role=INPUT, corpora_replace=True)
    train_format: str = setting(_format_help("train"), "auto",
                                choices=("auto", "lines", "sgm", "iwslt"), vocab=True)
    train_tsv: Optional[str] = setting(
        "TSV file pattern(s) for train: one pair per row, columns "
        "--source_column/--target_column.", role=INPUT, vocab=True, corpora_replace=True)
    train_tmx: Optional[str] = setting(
        "TMX file pattern(s) for train: sides chosen by xml:lang = --source_lang/--target_lang.",
        role=INPUT, vocab=True, corpora_replace=True)
    dev_format: str = setting(_format_help("dev"), "auto",
                              choices=("auto", "lines", "sgm", "iwslt"))
    dev_tsv: Optional[str] = setting(
        "TSV file pattern(s) for dev: one pair per row, columns "
        "--source_column/--target_column.", role=INPUT, corpora_replace=True)
    dev_tmx: Optional[str] = setting(
        "TMX file pattern(s) for dev: sides chosen by xml:lang = --source_lang/--target_lang.",
        role=INPUT, corpora_replace=True)
    corpora: Optional[str] = setting(
        "Many language pairs in one job: a YAML file listing named corpora, each with "
        "source_lang, target_lang, train (and dev) inputs in any form the input flags take, "
        "and an optional weight (docs/many-pairs.md). Replaces the input and "
        "language flags.", vocab=True, new=True)


@dataclasses.dataclass(frozen=True)
class ReadConfig:
    """How input is read and which pairs are rejected (prepare, vocab sample and encode)."""
    flags_title: ClassVar[str] = "reading the input"
    source_column: int = setting("TSV column of the source text (0-based).", 0,
                                 type=_COLUMN, vocab=True)
    target_column: int = setting("TSV column of the target text (0-based).", 1,
                                 type=_COLUMN, vocab=True)
    on_misaligned: str = setting(
        "Files with different line counts, TMX units missing a side, SGM/IWSLT segments "
        "without a partner, TSV rows missing a column: stop with an error naming the first "
        "one (default), or reject them and go on.", "error", choices=("error", "reject"),
        vocab=True)
    on_invalid_utf8: str = setting(
        "A line that is not UTF-8: stop with an error naming file and line (default), "
        "reject its pair, or decode it with U+FFFD replacement characters.", "error",
        choices=("error", "reject", "replace"), vocab=True)
    max_line_chars: int = setting(
        "Reject pairs with a side longer than this many characters (0: no limit).", 0,
        type=bounded(int, 0))
    source_lang: Optional[str] = setting(
        "Source language: the vocab file's suffix (as --problem's characters, at most %d), "
        "and for TMX the xml:lang of the source side; required for TSV/TMX-only runs "
        "(default: the source files' extension)." % LANG_MAX, vocab=True, corpora_replace=True)
    target_lang: Optional[str] = setting(
        "Target language: as --source_lang, for the target side (default: the target "
        "files' extension).", vocab=True, corpora_replace=True)
    encode_chunk_lines: int = setting(
        "Lines per parallel encoding chunk of an uncompressed file. Runners hand each worker "
        "its share of the chunks up front, so small chunks keep the workers equally busy to "
        "the end.", 10000, type=bounded(int, 1), role=OPERATIONAL)
    fragment_group_mb: float = setting(
        "Encoded bytes (MiB) an encode worker gathers before it writes them, one work file "
        "per shard (sooner at a 64th of the pass's input, at least 1 MiB): larger, fewer "
        "objects; smaller, less to encode again after a kill (docs/scaling.md).", 64.0, type=bounded(float, above=0), role=OPERATIONAL, new=True)
    max_length: int = setting(
        "Reject train pairs whose longer side has more than this many ids, as stored (EOS "
        "included): T2T's training-time length filter applied at datagen time (reason "
        "over_max_length); dev is kept whole, as T2T's evaluation keeps it. 0: no limit.", 0,
        type=bounded(int, 0, INT32_MAX), new=True)


@dataclasses.dataclass(frozen=True)
class CleanConfig:
    """Corpus cleaning (`transforms.cleaning`): off with no --filters and --dedup none. The
    --filters file is read and checked by the driver (`pipeline.driver.cleaning`)."""
    flags_title: ClassVar[str] = "cleaning"
    filters: Optional[str] = setting(
        "Clean the corpus: a YAML file whose `filters:` list uses OpusFilter's filter names "
        "and parameters (docs/cleaning.md); dropped pairs go to the rejects with the "
        "filter's name.", role=INPUT, vocab=True)
    dedup: str = setting(
        "Drop duplicate pairs within each split, keeping the first in input order: pairs or "
        "source (exact, as OpusFilter's remove_duplicates), normalized (Bifixer-like "
        "normalization, then exact) or minhash (near-duplicates by MinHash-LSH); the last two "
        "compare --dedup_scope (docs/cleaning.md).", "none",
        choices=("none", "pairs", "source", "normalized", "minhash"), vocab=True, new=True)
    dedup_scope: str = setting(
        "What --dedup normalized and minhash compare: the whole pair, or one side.", "pair",
        choices=("pair", "source", "target"), vocab=True, new=True)
    minhash_threshold: float = setting(
        "--dedup minhash: least estimated Jaccard similarity of two duplicates.", 0.8,
        type=bounded(float, above=0, high=1), vocab=True, new=True)
    minhash_shingle: int = setting(
        "--dedup minhash: characters per shingle of the normalized text.", 5,
        type=bounded(int, 1), vocab=True, new=True)
    minhash_permutations: int = setting(
        "--dedup minhash: permutations (values) per signature.", 128,
        type=bounded(int, 2, 4096), vocab=True, new=True)
    minhash_bands: int = setting(
        "--dedup minhash: LSH bands (rows: permutations // bands); 0 picks them as "
        "datasketch's MinHashLSH does for the threshold.", 0, type=bounded(int, 0, 4096),
        vocab=True, new=True)
    minhash_seed: int = setting("--dedup minhash: seed of the permutations (datasketch's).",
                                1, type=bounded(int, 0, 2 ** 32 - 1), vocab=True, new=True)
    decontaminate: Optional[str] = setting(
        "Test file pattern(s), comma-separated: drop every train pair with a side equal to a "
        "test line after --dedup normalized's normalization, or sharing "
        "--decontaminate_ngram words with one (reason test_overlap:FILE).", role=INPUT,
        vocab=True, new=True)
    decontaminate_ngram: int = setting(
        "--decontaminate: words in a shared n-gram (lm-evaluation-harness's 13); 0: whole "
        "lines only.", 13, type=bounded(int, 0), vocab=True, new=True)
    drop_dev_overlap: bool = setting("Drop train pairs that also occur in dev.", False,
                                     switch=True, vocab=True, new=True)


@dataclasses.dataclass(frozen=True)
class VocabConfig:
    """What the vocabulary is and how it is learnt. The kind's own flags are its part,
    `kind_settings` (`pipeline.driver.kinds`); `loader` loads its vocabularies with the
    options they are built with (byte_bpe's EOS token)."""
    flags_title: ClassVar[str] = "vocabulary"
    vocab_type: str = setting(  # the kinds are declared in transforms.codecs.kinds
        Declared("transforms.codecs.kinds", "KINDS_HELP"),
        Declared("transforms.codecs.kinds", "DEFAULT_KIND"),
        choices=Declared("transforms.codecs.kinds", "KIND_NAMES"), vocab=True)
    vocab_size: int = setting(
        "Target vocabulary size (subword: approximate, as T2T; byte_bpe: exact, bytes + "
        "merges + special tokens; word and sentencepiece: exact, specials included). With a "
        "given vocabulary it only names the copy.", 8192, type=bounded(int, 1, INT32_MAX),
        vocab=True)
    shared_vocab: bool = setting(
        "Learn one vocabulary from both sides, named without a language "
        "(vocab.{problem}.{size}.subwords).", False, switch=True, vocab=True)
    sampling_temperature: float = setting(
        "With several corpora: language l's share of the vocabulary sample (and a pair's "
        "rate with --mix_shards) is proportional to (n_l / N) ** (1 / T) times its corpora's "
        "weight, n_l its lines; 1 is proportional to the data.", 5.0,
        type=bounded(float, above=0), vocab=True, new=True, several_only=True)
    lang_tags: Optional[str] = setting(
        "Prepend the target language's tag (a reserved vocabulary entry) to every input, "
        "spelt as the trainer does: t2t <2xx> (also named target; the default with more "
        "than one target language), fairseq __xx__, marian >>xx<<, nllb (__xx__ of the "
        "source language on the inputs and of the target first in the targets, as NLLB and "
        "M2M-100); or none (the default otherwise).", choices=LANG_TAG_CHOICES,
        vocab=True, new=True)
    file_byte_budget: float = setting(
        "Characters sampled per file for the vocabulary (T2T's file_byte_budget).", 1e8,
        type=bounded(float, above=0), vocab=True)
    max_subtoken_length: Optional[int] = setting(
        "subword: longest subtoken counted while learning (T2T's max_subtoken_length); "
        "'none' or 0 for no limit.", 200, type=optional_length, vocab=True)
    vocab_partitions: int = setting(
        "Work items per vocabulary in each bisection round, each taking a share of the "
        "round's probes. A round probes at least this many min_counts of a vocabulary (the "
        "one the search needs, then those it likely needs next), so it can advance the "
        "search that many levels (parallelism only; the result does not depend on it).", 2,
        type=bounded(int, 1, SEARCH_PROBES), role=OPERATIONAL)
    bisection_rounds: int = setting(
        "Bisection rounds built as parallel stages of the vocab pass (each: 4 refinement "
        "iterations of its probes; a round probes the min_count the search needs and the "
        "ones it likely needs next). A search still undecided after them ends in one more "
        "stage, a work item per vocabulary probing what the bisection asks one after "
        "another, so the pass always decides it and the vocabulary is the same for any "
        "value; more rounds: more stages, and each may have nothing left to do.", 4,
        type=bounded(int, 1, SEARCH_LEVELS), flag="bisection_rounds_per_pass",
        role=OPERATIONAL)
    bisection_lookahead: int = setting(
        "Bisection levels below the needed min_count that a parallel round probes too.", 0,
        type=bounded(int, 0, SEARCH_LEVELS), role=OPERATIONAL)
    given: Tuple[str, ...] = derived("absolute paths of the given vocabularies (none: learnt)")
    loader: VocabularyLoader = derived("the kind's Vocabulary class and its build options")
    kind_settings: Any = derived("a frozen dataclass of the kind's own flags, or None")


@dataclasses.dataclass(frozen=True)
class JobConfig:
    """Where the output goes and how the job runs (the driver's own settings)."""
    flags_title: ClassVar[str] = "output and run"
    output_dir: str = setting(
        "Required: where vocab, shards and the summary go (any Beam FileSystems path).",
        role=OPERATIONAL)
    problem: str = setting(
        "File-name prefix, as T2T's problem name: letters, digits and _ - . @ +, not "
        "starting with . or -, at most %d characters." % PROBLEM_MAX, "translate_enzh_wmt8k",
        role=OPERATIONAL)
    num_train_shards: int = setting(
        "Shard files of the train split ({problem}-train-00000-of-000NN).", 10,
        type=bounded(int, 1, MAX_SHARDS))
    num_dev_shards: int = setting("Shard files of the dev split.", 1,
                                  type=bounded(int, 1, MAX_SHARDS))
    output_format: str = setting(
        "Record format of the shards: tfrecord (tf.train.Example records, T2T's), "
        "array_record (the same records, for Grain; names end .array_record), parquet "
        "(inputs/targets list<int32> columns; names end .parquet), fairseq (.fairseq "
        "shards and {problem}.data-bin/, fairseq-preprocess's binarized data), or text / "
        "text.gz (the cleaned pairs as line-aligned text, a shard's sides in files ending "
        "with the languages: .en and .zh, .en.gz and .zh.gz).",
        Declared("transforms.shards.record_formats", "DEFAULT_FORMAT"),
        choices=Declared("transforms.shards.record_formats", "FORMAT_NAMES"), new=True)
    mix_shards: bool = setting(
        "With several corpora: write the train pairs of every language pair into one "
        "globally shuffled set of shards, each pair at its --sampling_temperature rate "
        "(smaller pairs repeated), instead of shards per pair.", False, switch=True, new=True,
        several_only=True)
    packed_length: int = setting(
        "Pack pairs into records of at most this many ids per side, with "
        "inputs/targets_segmentation and _position features, as T2T 1.15.7's pack_examples "
        "packs a translate problem's shards (a pair longer than this stays alone in its "
        "record). 0: one pair per record.", 0, type=bounded(int, 0, INT32_MAX), new=True)
    seed: int = setting("Seed of the deterministic global shuffle.", 0, type=bounded(int))
    keep_order: bool = setting(
        "Write the pairs in input order instead of the global shuffle: with --output_format "
        "text or text.gz and one shard a split, the files OpusFilter writes for the same "
        "--filters.", False, switch=True, new=True)
    allow_empty: bool = setting(
        "Write empty shards (and mark the output complete) when a split has no pair to "
        "write: empty input, or every pair rejected. Without it such a run exits 2 (\"no "
        "pairs to write\").", False, switch=True, role=OPERATIONAL)
    overwrite: bool = setting(
        "Replace a completed output directory, also one made from other inputs or flags "
        "(and relearn its vocabularies); without it that is exit 2.", False, switch=True,
        role=OPERATIONAL)
    lock_stale_seconds: float = setting(
        "A run holds {output_dir}/{problem}.datagen.lock, refreshes its heartbeat and "
        "records this value in it: another host takes the lock over once the heartbeat is "
        "older than the holder's value (a killed run); on this host a live holder is never "
        "taken over, a dead one at once.", 120.0, type=bounded(float, above=0),
        role=OPERATIONAL)
    progress_seconds: float = setting(
        "A pass running longer says how far it is this often: its stage, round and units "
        "done, the encode pass's pairs and shards, and the time left.", 30.0,
        type=bounded(float, above=0), role=OPERATIONAL)
    log_level: Optional[str] = setting(
        "Beam's and TensorFlow's own logging at this level (and the job's debug lines with "
        "debug); by default only their errors show, beside the job's progress.",
        choices=LOG_LEVELS, role=OPERATIONAL, alias=("-v", "info"))
    in_process_below_mb: float = setting(
        "With DirectRunner's multi_processing mode, run the passes in this process instead "
        "when the input files total less than this many MB: starting the worker processes "
        "takes longer than such a job's work. 0 always starts the workers. The output is the "
        "same either way.", 16.0, type=bounded(float, 0), role=OPERATIONAL)


# The parts whose fields are the job's general flags, in --help's order, each a group of
# --help titled by its `flags_title` (a kind's own flags follow VocabConfig's:
# `pipeline.driver.options`).
FLAG_PARTS = (InputConfig, ReadConfig, CleanConfig, VocabConfig, JobConfig)


@dataclasses.dataclass(frozen=True)
class CorpusConfig:
    """One named corpus of the run: a corpora file's entry (`pipeline.driver.corpora`), or
    the single-pair flags as one corpus (name ""). Its datasets carry its index and languages
    (`pipeline.driver.datasets`); with more than one corpus the languages are required."""
    name: str
    source_lang: Optional[str]
    target_lang: Optional[str]
    weight: float                    # multiplies its share in the mix (1.0)
    inputs: InputConfig              # its train/dev patterns, as the input flags take them
    source_column: int               # its TSV columns
    target_column: int
    # what the dataset card says of it (`pipeline.output.card`): the corpora file's
    # `license` and `source_datasets` (none from the flags); no fingerprint reads them
    license: Optional[str] = None
    source_datasets: Tuple[str, ...] = ()
    filters: Optional[str] = None    # its own --filters file (a corpora entry's `filters:`)


@dataclasses.dataclass(frozen=True)
class DatagenConfig:
    read: ReadConfig
    vocab: VocabConfig
    inputs: InputConfig
    job: JobConfig
    clean: CleanConfig
    flag_values: Tuple[Tuple[str, Any], ...]  # (flag, value) of every flag, in their order
    corpora: Tuple[CorpusConfig, ...]  # the run's corpora, in order (one for the flags)

    @classmethod
    def from_flags(cls, flags: Mapping[str, Any], **derived: Any) -> "DatagenConfig":
        """The config of the job's flag values ({flag: value}, in the flags' order; checked
        by `pipeline.driver.options`): each field takes its flag's value, but for the
        fields `derived` names (values made from flags: absolute paths, the kind's part)."""
        values = dict(flags, **derived)
        for flag_part in FLAG_PARTS:  # fields named apart from their flag
            for field, flag, _ in flag_fields(flag_part):
                if field != flag and field not in derived:
                    values[field] = flags[flag]

        def part(part_class):
            return part_class(**{field.name: values[field.name]
                                 for field in dataclasses.fields(part_class)})

        inputs = part(InputConfig)
        corpora = values.get("corpora_parsed") or (CorpusConfig(
            "", values["source_lang"], values["target_lang"], 1.0, inputs,
            values["source_column"], values["target_column"]),)
        return cls(read=part(ReadConfig), vocab=part(VocabConfig), inputs=inputs,
                   job=part(JobConfig), clean=part(CleanConfig),
                   flag_values=tuple(flags.items()), corpora=tuple(corpora))

    @property
    def several_corpora(self) -> bool:
        """Whether the run has more than one corpus: then the vocabulary is one, learnt from
        the temperature-sampled mix, and records carry their language pair."""
        return len(self.corpora) > 1

    def flags(self) -> Dict[str, Any]:
        """{flag: value} of the job's own flags (for the summary and the fingerprint)."""
        return dict(self.flag_values)
