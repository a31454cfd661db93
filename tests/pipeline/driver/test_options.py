"""pipeline/driver/options: a command line becomes a DatagenConfig (defaults from the flag
definitions, Beam's arguments passed on in order) or one DatagenError line, which
`python -m pipeline.datagen` prints and exits 2 on, before any work is done."""

import dataclasses
import logging

import pytest

from driver_fixtures import command_line
from pipeline.driver.options import default_config, flag_defaults
from pipeline.runtime.errors import DatagenError
from registries import every_kind

BASE = ["--output_dir", "/tmp/out", "--train_source", "a.en", "--train_target", "a.de"]


def parsed(*flags):
    return command_line(BASE + list(flags))[0]


def error_of(argv):
    with pytest.raises(DatagenError) as raised:
        command_line(argv)
    message = str(raised.value)
    assert "\n" not in message
    return message


# -- defaults and values -------------------------------------------------------------------

def test_defaults_come_from_the_flag_definitions():
    config, beam_args = command_line(BASE)
    assert beam_args == []
    assert (config.vocab.vocab_type, config.vocab.vocab_size, config.vocab.shared_vocab) == (
        "subword", 8192, False)
    assert config.vocab.max_subtoken_length == 200
    assert config.vocab.file_byte_budget == 1e8
    assert config.vocab.bisection_rounds == 4  # from --bisection_rounds_per_pass
    assert (config.job.problem, config.job.seed, config.job.output_format) == (
        "translate_enzh_wmt8k", 0, "tfrecord")
    assert (config.job.num_train_shards, config.job.num_dev_shards) == (10, 1)
    assert (config.job.overwrite, config.job.allow_empty, config.job.log_level) == (
        False, False, None)
    assert (config.read.on_invalid_utf8, config.read.on_misaligned) == ("error", "error")
    assert (config.inputs.train_format, config.inputs.dev_source) == ("auto", None)
    assert (config.clean.filters, config.clean.dedup, config.clean.drop_dev_overlap) == (
        None, "none", False)


def test_every_flag_value_is_kept_in_order_for_the_summary_and_fingerprint():
    config = parsed("--vocab_size", "500", "--seed", "7")
    flags = config.flags()
    assert flags == dict(flag_defaults(), output_dir="/tmp/out", train_source="a.en",
                         train_target="a.de", vocab_size=500, seed=7)
    assert list(flags)[:2] == ["train_source", "train_target"]  # the definitions' order
    with pytest.raises(dataclasses.FrozenInstanceError):  # parsed once, never changed
        config.job.seed = 1  # type: ignore[misc]


def test_beam_arguments_are_passed_on_in_their_order():
    _, beam_args = command_line(["--runner", "DirectRunner"] + BASE
                                + ["--direct_num_workers", "2", "--seed", "3"])
    assert beam_args == ["--runner", "DirectRunner", "--direct_num_workers", "2"]


@pytest.mark.parametrize("value, expected", [("none", None), ("None", None), ("0", None),
                                             ("50", 50)])
def test_max_subtoken_length_none_or_zero_means_no_limit(value, expected):
    assert parsed("--max_subtoken_length", value).vocab.max_subtoken_length == expected


def test_paths_are_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = command_line(["--output_dir", "out", "--train_source", "a.en",
                           "--train_target", "a.de"])[0]
    assert config.job.output_dir == str(tmp_path / "out")


def test_v_is_log_level_info():
    assert parsed("-v").job.log_level == "info"
    assert parsed("--log_level", "debug").job.log_level == "debug"


def test_default_config_sets_named_flags_and_refuses_unknown_ones():
    config = default_config(vocab_size=300, vocab_type="word")
    assert (config.vocab.vocab_size, config.vocab.vocab_type) == (300, "word")
    assert config.job.num_train_shards == 10
    with pytest.raises(TypeError, match="no flag --vocab_sise"):
        default_config(vocab_sise=3)


# -- unknown flags and bad values ----------------------------------------------------------

def test_a_misspelt_flag_is_refused_with_the_closest_known_one():
    assert error_of(BASE + ["--vocab_sise", "100"]) == (
        "unknown flag --vocab_sise (did you mean --vocab_size?): neither a flag of this job "
        "(see --help) nor a Beam pipeline option")


def test_a_misspelt_beam_option_is_suggested_too():
    message = error_of(BASE + ["--direct_num_worker=2"])
    assert message.startswith("unknown flag --direct_num_worker=2 (did you mean "
                              "--direct_num_workers?)")


def test_two_unknown_flags_are_named_together():
    message = error_of(BASE + ["--vocab_sise", "1", "--shard_count", "2"])
    assert message.startswith("unknown flags --vocab_sise (did you mean --vocab_size?), "
                              "--shard_count")


def test_a_value_without_its_flag_is_refused():
    assert error_of(BASE + ["stray"]) == (
        "unexpected argument 'stray': every value goes after its --flag")


@pytest.mark.parametrize("flags, expected", [
    (["--vocab_size", "abc"], "argument --vocab_size: invalid int value: 'abc'"),
    (["--vocab_type", "bytes"], "argument --vocab_type: invalid choice: 'bytes'"),
    (["--output_format", "csv"], "argument --output_format: invalid choice: 'csv'"),
    (["--on_misaligned", "skip"], "argument --on_misaligned: invalid choice: 'skip'"),
])
def test_a_bad_value_is_one_line_naming_the_flag(flags, expected):
    assert error_of(BASE + flags).startswith(expected)


def test_abbreviated_flags_are_not_taken():
    assert "unknown flag --vocab_s " in error_of(BASE + ["--vocab_s", "100"]) + " "


# -- every validation error ----------------------------------------------------------------

TSV = ["--output_dir", "/tmp/out", "--train_tsv", "a.tsv"]
TMX = ["--output_dir", "/tmp/out", "--train_tmx", "a.tmx"]


@pytest.mark.parametrize("argv, expected", [
    (["--train_source", "a", "--train_target", "b"], "--output_dir is required"),
    (["--output_dir", "/tmp/out"],
     "no training data: pass --train_source/--train_target, --train_tsv or --train_tmx"),
    (["--output_dir", "/tmp/out", "--train_source", "a"],
     "--train_source and --train_target go together"),
    (BASE + ["--dev_target", "d.de"], "--dev_source and --dev_target go together"),
    (TMX + ["--source_lang", "en"],
     "TMX input needs --source_lang and --target_lang (xml:lang of the sides)"),
    (BASE + ["--vocab_type", "byte_bpe", "--bpe_eos_token", ""],
     "--bpe_eos_token must not be empty"),
    (BASE + ["--vocab_type", "byte_bpe", "--vocab_size", "256"],
     "--vocab_size for byte_bpe counts the 256 byte symbols, <pad> and <|endoftext|>: "
     "at least 258"),
    (BASE + ["--vocab_type", "byte_bpe", "--bpe_eos_token", "<pad>"],
     "--bpe_eos_token must not be <pad>: a learnt vocabulary reserves it for padding (id 0)"),
    (BASE + ["--vocab_type", "word", "--vocab_size", "2"],
     "--vocab_size for a word vocabulary counts <unk>, <s>, </s>: at least 3"),
    (BASE + ["--vocab_type", "word", "--word_vocab", "a,b,c"],
     "--word_vocab takes FILE or SOURCE_FILE,TARGET_FILE, not 'a,b,c'"),
    (BASE + ["--vocab_type", "word", "--word_vocab", ","],
     "--word_vocab takes FILE or SOURCE_FILE,TARGET_FILE, not ','"),
    (BASE + ["--vocab_type", "sentencepiece", "--spm_model", "a,b,c"],
     "--spm_model takes FILE or SOURCE_FILE,TARGET_FILE, not 'a,b,c'"),
    (TSV + ["--source_column", "1"],
     "--source_column and --target_column must be different columns"),
    # issue 50, item 11: mode "nmt" refuses packed records, mode "t2t" word records
    (BASE + ["--vocab_type", "word", "--packed_length", "64"],
     "--packed_length: packed records are read as T2T reads them, records ending in EOS; "
     "--vocab_type word writes records without EOS"),
])
def test_each_impossible_setting_is_one_line(argv, expected):
    assert error_of(argv).startswith(expected)


HUGE = "100000000000000000000"  # 1e20: more than any 64-bit integer


@pytest.mark.parametrize("flags, expected", [
    # every numeric flag, below and above its range: a flag error naming the range, where
    # Beam or a pass failed with a traceback (`Value out of range`, an int too large for C)
    # or a huge count hung the job (issue 42, item 9)
    (["--vocab_size", "0"], "--vocab_size: must be an integer from 1 to 2147483647, not 0"),
    (["--vocab_size", HUGE], "--vocab_size: must be an integer from 1 to 2147483647, not " + HUGE),
    (["--num_train_shards", "0"], "--num_train_shards: must be an integer from 1 to 99999"),
    (["--num_train_shards", HUGE], "--num_train_shards: must be an integer from 1 to 99999"),
    (["--num_dev_shards", "100000"], "--num_dev_shards: must be an integer from 1 to 99999"),
    (["--seed", HUGE], "--seed: must be an integer from -9223372036854775808 to "
                       "9223372036854775807, not " + HUGE),
    (["--seed", "-" + HUGE], "--seed: must be an integer from -9223372036854775808"),
    (["--max_line_chars", "-1"], "--max_line_chars: must be an integer from 0 to "
                                 "9223372036854775807, not -1"),
    (["--max_line_chars", HUGE], "--max_line_chars: must be an integer from 0 to"),
    (["--max_subtoken_length", "-1"], "--max_subtoken_length: must be an integer from 0 to "
                                      "2147483647, not -1"),
    (["--max_subtoken_length", HUGE], "--max_subtoken_length: must be an integer from 0 to "
                                      "2147483647"),
    (["--encode_chunk_lines", "0"], "--encode_chunk_lines: must be an integer from 1 to"),
    (["--encode_chunk_lines", HUGE], "--encode_chunk_lines: must be an integer from 1 to"),
    (["--vocab_partitions", "0"], "--vocab_partitions: must be an integer from 1 to 1000"),
    (["--vocab_partitions", HUGE], "--vocab_partitions: must be an integer from 1 to 1000"),
    (["--bisection_rounds_per_pass", "0"],
     "--bisection_rounds_per_pass: must be an integer from 1 to 10, not 0"),
    (["--bisection_rounds_per_pass", HUGE], "--bisection_rounds_per_pass: must be an integer"),
    (["--bisection_lookahead", "-1"], "--bisection_lookahead: must be an integer from 0 to 10"),
    (["--bisection_lookahead", HUGE], "--bisection_lookahead: must be an integer from 0 to 10"),
    (["--file_byte_budget", "0"], "--file_byte_budget: must be a finite number above 0, not 0"),
    (["--file_byte_budget", "nan"], "--file_byte_budget: must be a finite number above 0"),
    (["--file_byte_budget", "1e400"], "--file_byte_budget: must be a finite number above 0, "
                                      "not 1e400"),
    (["--in_process_below_mb", "-1"], "--in_process_below_mb: must be a finite number at least 0, not -1"),
    (["--in_process_below_mb", "inf"], "--in_process_below_mb: must be a finite number"),
    (["--lock_stale_seconds", "0"], "--lock_stale_seconds: must be a finite number above 0"),
    (["--lock_stale_seconds", "1e400"], "--lock_stale_seconds: must be a finite number"),
    (["--train_tsv", "a.tsv", "--source_column", "-1"],
     "--source_column: must be an integer from 0 to 2147483647, not -1"),
    (["--train_tsv", "a.tsv", "--target_column", HUGE],
     "--target_column: must be an integer from 0 to 2147483647"),
    (["--max_length", "-1"], "--max_length: must be an integer from 0 to 2147483647, not -1"),
    (["--max_length", HUGE], "--max_length: must be an integer from 0 to 2147483647"),
    (["--packed_length", "-256"],
     "--packed_length: must be an integer from 0 to 2147483647, not -256"),
    (["--packed_length", HUGE], "--packed_length: must be an integer from 0 to 2147483647"),
    (["--vocab_type", "byte_bpe", "--bpe_min_frequency", "0"],
     "--bpe_min_frequency: must be an integer from 1 to 9223372036854775807, not 0"),
    (["--vocab_type", "byte_bpe", "--bpe_min_frequency", HUGE], "--bpe_min_frequency: must"),
    (["--vocab_type", "sentencepiece", "--spm_character_coverage", "0"],
     "--spm_character_coverage: must be a finite number above 0 and at most 1, not 0"),
    (["--vocab_type", "sentencepiece", "--spm_character_coverage", "1.5"],
     "--spm_character_coverage: must be a finite number above 0 and at most 1, not 1.5"),
    (["--runner", "FlinkRunner", "--number_of_execution_retries", HUGE],
     "--number_of_execution_retries: must be an integer from -1 to 2147483647"),
    (["--runner", "FlinkRunner", "--execution_retry_delay", HUGE],
     "--execution_retry_delay: must be an integer from -1 to 9223372036854775807"),
])
def test_a_number_out_of_its_flags_range_is_one_line_naming_the_range(flags, expected):
    with pytest.raises(DatagenError) as raised:
        command_line(BASE + flags)  # as the command checks them: Beam's options too
    assert str(raised.value).startswith("argument " + expected), raised.value


def test_every_numeric_flag_declares_its_range():
    """Each flag of the job that takes a number has a `bounded` type beside it
    (`transforms.contracts.flag_ranges`), so no value
    reaches a pass that Beam or the pass cannot take; a plain int or float would not."""
    from pipeline.driver.options import job_flag_parser
    from pipeline.runtime.runners import FlinkJavaOptions
    parser = job_flag_parser()
    FlinkJavaOptions._add_argparse_args(parser)
    numbers = [action for action in parser.actions
               if getattr(action.type, "__name__", None) in ("int", "float")]
    assert {"--vocab_size", "--seed", "--spm_character_coverage", "--max_length",
            "--packed_length", "--execution_retry_delay"} <= {a.option_strings[0] for a in numbers}
    assert [a.option_strings[0] for a in numbers if a.type in (int, float)] == []


def test_spm_trainer_options_are_checked_when_parsed():
    message = error_of(BASE + ["--vocab_type", "sentencepiece",
                               "--spm_trainer_options", "no_equals_sign"])
    assert message.startswith("--spm_trainer_options: ")


def test_column_flags_matter_only_with_tsv_input():
    assert parsed("--source_column", "1").read.source_column == 1


@pytest.mark.parametrize("flag, value", [("--problem", "../escape"), ("--problem", ""),
                                         ("--source_lang", "en/x"), ("--target_lang", ".de")])
def test_names_that_become_file_names_are_checked(flag, value):
    assert error_of(BASE + [flag, value]).startswith(
        "%s %r cannot be part of a file name" % (flag, value))


def test_tmx_with_both_languages_and_tsv_with_distinct_columns_are_accepted():
    config = command_line(TMX + ["--source_lang", "en", "--target_lang", "de"])[0]
    assert (config.inputs.train_tmx, config.read.source_lang) == ("a.tmx", "en")
    config = command_line(TSV + ["--source_column", "2", "--target_column", "0"])[0]
    assert (config.read.source_column, config.read.target_column) == (2, 0)


# -- flags of one vocabulary kind ------------------------------------------------------------

# (flag, a value other than its default, the --vocab_type it belongs to)
KIND_FLAGS = [
    ("bpe_vocab", "gpt2/", "byte_bpe"), ("bpe_eos_token", "</s>", "byte_bpe"),
    ("bpe_min_frequency", "5", "byte_bpe"), ("word_vocab", "v.txt", "word"),
    ("spm_model", "m.model", "sentencepiece"), ("spm_model_type", "bpe", "sentencepiece"),
    ("spm_character_coverage", "1.0", "sentencepiece"),
    ("spm_special_ids", "sentencepiece", "sentencepiece"),
    ("spm_trainer_options", "split_digits=true", "sentencepiece"),
]
KINDS = every_kind()


@pytest.mark.parametrize("flag, value, kind", KIND_FLAGS)
def test_a_flag_of_one_kind_is_refused_for_every_other_kind(flag, value, kind):
    for other in KINDS:
        argv = BASE + ["--vocab_type", other, "--" + flag, value]
        if other == kind:
            assert command_line(argv)[0].vocab.vocab_type == kind
        else:
            assert error_of(argv) == "--%s applies to --vocab_type %s only, not %s" % (
                flag, kind, other)


def test_the_table_above_names_every_kinds_own_flags():
    from pipeline.driver.kinds import every_plugin
    assert sorted((flag, plugin.name) for plugin in every_plugin()
                  for flag in plugin.own_flags()) == sorted(
        (flag, kind) for flag, _, kind in KIND_FLAGS)
    assert tuple(plugin.name for plugin in every_plugin()) == KINDS


def test_a_kind_flag_given_at_its_default_is_not_refused():
    config = parsed("--bpe_min_frequency", "2", "--spm_model_type", "unigram")
    assert config.vocab.vocab_type == "subword"


# -- given vocabularies ----------------------------------------------------------------------

@pytest.mark.parametrize("kind, flag", [("word", "--word_vocab"),
                                        ("sentencepiece", "--spm_model")])
def test_a_given_vocabulary_is_one_file_or_source_and_target(kind, flag, tmp_path,
                                                             monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative names are made absolute
    assert parsed("--vocab_type", kind, flag, "v.src").vocab.given == (
        str(tmp_path / "v.src"),)
    assert parsed("--vocab_type", kind, flag, "v.src,/v/v.tgt").vocab.given == (
        str(tmp_path / "v.src"), "/v/v.tgt")
    assert parsed("--vocab_type", kind).vocab.given == ()  # learnt


def test_a_given_bpe_is_one_directory():
    assert parsed("--vocab_type", "byte_bpe", "--bpe_vocab", "/g/gpt2").vocab.given == (
        "/g/gpt2",)


def test_a_given_vocabulary_lifts_the_kinds_size_minimum():
    assert parsed("--vocab_type", "word", "--word_vocab", "/v", "--vocab_size", "2"
                  ).vocab.vocab_size == 2
    assert parsed("--vocab_type", "byte_bpe", "--bpe_vocab", "/gpt2", "--vocab_size", "100"
                  ).vocab.given == ("/gpt2",)


@pytest.mark.parametrize("kind, flag", [("word", "--word_vocab"), ("byte_bpe", "--bpe_vocab"),
                                        ("sentencepiece", "--spm_model")])
def test_vocab_size_with_a_given_vocabulary_is_a_warning(kind, flag, caplog):
    with caplog.at_level(logging.WARNING, logger="datagen"):
        parsed("--vocab_type", kind, flag, "given", "--vocab_size", "3000")
    assert [r.getMessage() for r in caplog.records] == [
        "--vocab_size 3000 with %s: the given vocabulary is used as it is, whatever its "
        "size; --vocab_size only names the copy in --output_dir (vocab.translate_enzh_wmt8k."
        "3000.*)" % flag]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="datagen"):
        parsed("--vocab_type", kind, flag, "given")
    assert caplog.records == []


# -- the command's exit status -------------------------------------------------------------

@pytest.fixture
def job_logger():
    """The job's logger as it was: `main` installs its stderr handler on it."""
    log = logging.getLogger("datagen")
    saved = log.handlers[:], log.propagate, log.level
    yield log
    log.handlers[:], log.propagate, log.level = saved[0], saved[1], saved[2]


def test_the_command_exits_2_with_the_line_and_no_traceback(job_logger, capsys):
    from pipeline.datagen import main
    assert main(BASE + ["--vocab_sise", "100"]) == 2
    err = capsys.readouterr().err
    assert "unknown flag --vocab_sise (did you mean --vocab_size?)" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert main(BASE + ["--vocab_size", "0"]) == 2
    assert "--vocab_size: must be an integer from 1" in capsys.readouterr().err


@pytest.mark.parametrize("extra, named", [
    (["--output_format", "text", "--packed_length", "64"], "--packed_length"),
    (["--output_format", "text.gz", "--lang_tags", "target"], "--lang_tags"),
    (["--keep_order"], "--keep_order"),
    (["--output_format", "text", "--keep_order"], "--num_train_shards 1"),
    (["--output_format", "text", "--keep_order", "--num_train_shards", "1",
      "--num_dev_shards", "2"], "--keep_order")])
def test_text_output_refuses_what_acts_on_ids_and_keep_order_needs_one_text_shard(extra,
                                                                                   named):
    assert named in error_of(BASE + extra)


def test_keep_order_with_one_text_shard_a_split_is_taken():
    config = parsed("--output_format", "text", "--keep_order", "--num_train_shards", "1")
    assert config.job.keep_order and config.job.output_format == "text"
