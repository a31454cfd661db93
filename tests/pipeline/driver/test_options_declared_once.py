"""A flag is one field in one file: the config parts' and the kinds' settings fields declare
every flag of the job (`transforms.contracts.settings.setting`), and the parser, the
defaults, `--help`, the fingerprint's lists and the corpora file's replacements derive from
them. These tests fail when a flag is declared a second time anywhere, when a field is
neither a flag nor derived, when a flag misses docs/flags.md (generated from the fields:
tests/pipeline/driver/test_flags_doc.py checks it is current), and when a fingerprint of an existing
command line changes (older outputs must be recognised on a rerun)."""

import ast
import dataclasses
import pathlib

from pipeline.driver import fingerprint
from pipeline.driver.kinds import every_plugin
from pipeline.driver.options import (CORPORA_REPLACE, SEVERAL_ONLY, declared_flags,
                                     flag_defaults, job_flag_parser, parse_command_line)
from repo_paths import REPO_ROOT as _ROOT
from transforms.contracts.config import FLAG_PARTS
from transforms.contracts.settings import DERIVED, FLAG, INPUT, OPERATIONAL

REPO_ROOT = pathlib.Path(_ROOT)
SETTINGS_CLASSES = FLAG_PARTS + tuple(kind.settings_type for kind in every_plugin()
                                      if kind.settings_type is not None)


def test_every_field_of_a_settings_class_is_a_flag_or_derived():
    undeclared = ["%s.%s" % (cls.__name__, field.name) for cls in SETTINGS_CLASSES
                  for field in dataclasses.fields(cls)
                  if FLAG not in field.metadata and DERIVED not in field.metadata]
    assert undeclared == []


def test_the_parser_has_exactly_the_declared_flags():
    parser = job_flag_parser()
    long_flags = {s[2:] for action in parser.actions for s in action.option_strings
                  if s.startswith("--") and s != "--help"}
    assert long_flags == set(flag_defaults())
    assert len(list(declared_flags())) == len(long_flags)  # no flag declared twice


def _literal_flag_arguments(path):
    """(line, flag) of every call in `path` whose first argument is a literal "--flag"."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str) and node.args[0].value.startswith("--")):
            yield node.lineno, node.args[0].value[2:]


def test_no_module_declares_a_flag_of_the_job_again():
    """The job's flags reach argparse only through `DatagenOptions` (from the fields); any
    other `add_argument("--vocab_size", ...)` would be a second declaration."""
    ours = set(flag_defaults())
    found = []
    for package in ("pipeline", "transforms"):
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            if path.name == "local_worker_pool.py" or "tools" in path.parts:
                continue  # Beam's flags, looked at before Beam's import; the tools' own
            for line, flag in _literal_flag_arguments(path):
                if flag in ours:
                    found.append("%s:%d --%s" % (path.relative_to(REPO_ROOT), line, flag))
    assert found == []


def test_every_flag_is_in_the_flags_page():
    page = (REPO_ROOT / "docs" / "flags.md").read_text(encoding="utf-8")
    missing = [name for name in flag_defaults() if "| `--%s`" % name not in page]
    assert missing == []


def test_the_fingerprint_lists_follow_the_roles_declared():
    roles = dict(declared_flags())
    assert fingerprint.OPERATIONAL_FLAGS == {n for n, f in roles.items() if f.role == OPERATIONAL}
    assert set(fingerprint.INPUT_FLAGS) == {n for n, f in roles.items() if f.role == INPUT}
    assert set(fingerprint.GIVEN_VOCAB_FLAGS) <= set(fingerprint.VOCAB_INPUT_FLAGS)
    assert {"train_source", "filters", "spm_model"} <= set(fingerprint.VOCAB_INPUT_FLAGS)
    assert "max_line_chars" not in fingerprint.VOCAB_FLAGS  # its rejects are still sampled
    assert set(SEVERAL_ONLY) == {"mix_shards", "sampling_temperature"}
    assert set(CORPORA_REPLACE) == {"train_source", "train_target", "dev_source", "dev_target",
                                    "train_tsv", "dev_tsv", "train_tmx", "dev_tmx",
                                    "source_lang", "target_lang"}


# Fingerprints' flags as the job computed them before its flags were fields (ce5ee9c):
# a rerun over an output made then must find the same values.
PINNED = [
    (["--vocab_type", "sentencepiece", "--spm_model_type", "bpe", "--dedup", "pairs",
      "--output_format", "parquet", "--max_length", "64"],
     {"bpe_eos_token": "<|endoftext|>", "bpe_min_frequency": 2, "dedup": "pairs",
      "dev_format": "auto", "file_byte_budget": 100000000.0, "max_length": 64,
      "max_line_chars": 0, "max_subtoken_length": 200, "num_dev_shards": 1,
      "num_train_shards": 10, "on_invalid_utf8": "error", "on_misaligned": "error",
      "output_format": "parquet", "seed": 0, "shared_vocab": False, "source_column": 0,
      "source_lang": None, "spm_model_type": "bpe", "target_column": 1, "target_lang": None,
      "train_format": "auto", "vocab_size": 8192, "vocab_type": "sentencepiece"},
     {"bpe_eos_token": "<|endoftext|>", "bpe_min_frequency": 2, "dedup": "pairs",
      "file_byte_budget": 100000000.0, "max_subtoken_length": 200, "on_invalid_utf8": "error",
      "on_misaligned": "error", "shared_vocab": False, "source_column": 0, "source_lang": None,
      "spm_model_type": "bpe", "target_column": 1, "target_lang": None, "train_format": "auto",
      "vocab_size": 8192, "vocab_type": "sentencepiece"}),
    (["--vocab_type", "byte_bpe", "--bpe_min_frequency", "3", "--seed", "7",
      "--num_train_shards", "3", "--packed_length", "256", "--source_lang", "en",
      "--target_lang", "de"],
     {"bpe_eos_token": "<|endoftext|>", "bpe_min_frequency": 3, "dev_format": "auto",
      "file_byte_budget": 100000000.0, "max_line_chars": 0, "max_subtoken_length": 200,
      "num_dev_shards": 1, "num_train_shards": 3, "on_invalid_utf8": "error",
      "on_misaligned": "error", "packed_length": 256, "seed": 7, "shared_vocab": False,
      "source_column": 0, "source_lang": "en", "target_column": 1, "target_lang": "de",
      "train_format": "auto", "vocab_size": 8192, "vocab_type": "byte_bpe"},
     {"bpe_eos_token": "<|endoftext|>", "bpe_min_frequency": 3,
      "file_byte_budget": 100000000.0, "max_subtoken_length": 200, "on_invalid_utf8": "error",
      "on_misaligned": "error", "shared_vocab": False, "source_column": 0, "source_lang": "en",
      "target_column": 1, "target_lang": "de", "train_format": "auto", "vocab_size": 8192,
      "vocab_type": "byte_bpe"}),
]


def test_fingerprints_of_existing_command_lines_are_unchanged(tmp_path):
    for flags, output_flags, vocab_flags in PINNED:
        config = parse_command_line(["--train_source", "a.en", "--train_target", "a.zh",
                                     "--output_dir", str(tmp_path)] + flags).config
        values = fingerprint.fingerprint_values(config)
        assert fingerprint.output_fingerprint(values, listed={})["flags"] == output_flags
        assert fingerprint.vocab_fingerprint(values, listed={})["flags"] == vocab_flags


# More command lines, as ce5ee9c computed their fingerprints: the defaults, the cleaning and
# format flags, a given vocabulary, and a corpora file (its corpora recorded, its inputs as
# `corpora.{name}.{flag}` entries). Inputs are pinned by the files they name (the sizes and
# mtimes are the checkout's own).
SAMPLE = "sample_data/enzh-mlqe-pe/"
PAIR = ["--train_source", SAMPLE + "train.en", "--train_target", SAMPLE + "train.zh"]
DEFAULT_OUTPUT = {
    "bpe_eos_token": "<|endoftext|>", "bpe_min_frequency": 2, "dev_format": "auto",
    "file_byte_budget": 100000000.0, "max_line_chars": 0, "max_subtoken_length": 200,
    "num_dev_shards": 1, "num_train_shards": 10, "on_invalid_utf8": "error",
    "on_misaligned": "error", "seed": 0, "shared_vocab": False, "source_column": 0,
    "source_lang": None, "target_column": 1, "target_lang": None, "train_format": "auto",
    "vocab_size": 8192, "vocab_type": "subword"}
DEFAULT_VOCAB = {k: v for k, v in DEFAULT_OUTPUT.items() if k not in (
    "dev_format", "max_line_chars", "num_dev_shards", "num_train_shards", "seed")}
CORPORA = [dict(name=name, source_lang="en", target_lang=lang, weight=weight, source_column=0,
                target_column=1, train_format="auto", dev_format="auto")
           for name, lang, weight in (("en-zh", "zh", 1.0), ("en-de", "de", 1.0),
                                      ("en-vi", "vi", 2.0))]
MANY = {"corpora": CORPORA, "mix_shards": True, "sampling_temperature": 2.0,
        "lang_tags": "target"}
PAIR_INPUTS = {"train_source": [SAMPLE + "train.en"], "train_target": [SAMPLE + "train.zh"]}
CORPUS_TRAIN = {
    "corpora.en-zh.train_source": [SAMPLE + "train.en"],
    "corpora.en-zh.train_target": [SAMPLE + "train.zh"],
    "corpora.en-de.train_source": ["sample_data/many-pairs/ende-opennmt/train.en"],
    "corpora.en-de.train_target": ["sample_data/many-pairs/ende-opennmt/train.de"],
    "corpora.en-vi.train_source": ["sample_data/many-pairs/envi-iwslt15/train.en"],
    "corpora.en-vi.train_target": ["sample_data/many-pairs/envi-iwslt15/train.vi"]}
CORPUS_DEV = {
    "corpora.en-zh.dev_source": [SAMPLE + "dev.en"],
    "corpora.en-zh.dev_target": [SAMPLE + "dev.zh"],
    "corpora.en-de.dev_source": ["sample_data/many-pairs/ende-opennmt/dev.en"],
    "corpora.en-de.dev_target": ["sample_data/many-pairs/ende-opennmt/dev.de"]}
CLEAN = {"dedup": "pairs", "drop_dev_overlap": True, "on_invalid_utf8": "replace",
         "shared_vocab": True}
PINNED_WITH_INPUTS = [
    (PAIR, DEFAULT_OUTPUT, DEFAULT_VOCAB, PAIR_INPUTS, PAIR_INPUTS),
    (PAIR + ["--dedup", "pairs", "--drop_dev_overlap", "--max_length", "100", "--output_format",
             "parquet", "--max_line_chars", "500", "--on_invalid_utf8", "replace",
             "--shared_vocab"],
     dict(DEFAULT_OUTPUT, max_length=100, output_format="parquet", max_line_chars=500, **CLEAN),
     dict(DEFAULT_VOCAB, **CLEAN), PAIR_INPUTS, PAIR_INPUTS),
    (PAIR + ["--vocab_type", "word", "--word_vocab", SAMPLE + "train.en"],
     dict(DEFAULT_OUTPUT, vocab_type="word"), dict(DEFAULT_VOCAB, vocab_type="word"),
     dict(PAIR_INPUTS, word_vocab=[SAMPLE + "train.en"]),
     dict(PAIR_INPUTS, word_vocab=[SAMPLE + "train.en"])),
    (["--corpora", "sample_data/many-pairs/corpora.yaml", "--mix_shards",
      "--sampling_temperature", "2", "--lang_tags", "target"],
     dict(DEFAULT_OUTPUT, **MANY),
     dict(DEFAULT_VOCAB, **{k: v for k, v in MANY.items() if k != "mix_shards"}),
     dict(CORPUS_TRAIN, **CORPUS_DEV), CORPUS_TRAIN),
]


def _files(fingerprint_inputs):
    return {flag: sorted(pathlib.Path(path).relative_to(REPO_ROOT).as_posix() for path in files)
            for flag, files in fingerprint_inputs.items()}


def test_fingerprints_with_inputs_of_existing_command_lines_are_unchanged(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO_ROOT)
    for flags, output_flags, vocab_flags, output_inputs, vocab_inputs in PINNED_WITH_INPUTS:
        config = parse_command_line(flags + ["--output_dir", str(tmp_path)]).config
        values = fingerprint.fingerprint_values(config)
        output, vocab = fingerprint.output_fingerprint(values), fingerprint.vocab_fingerprint(values)
        assert (output["flags"], vocab["flags"]) == (output_flags, vocab_flags), flags
        assert _files(output["inputs"]) == output_inputs, flags
        assert _files(vocab["inputs"]) == vocab_inputs, flags


def test_help_shows_every_flag_in_the_group_of_the_part_declaring_it(capsys):
    from pipeline import datagen
    from pipeline.driver.options import flag_groups
    datagen.print_help()
    text = capsys.readouterr().out
    titles = [title for title, _ in flag_groups()]
    assert {title.split(" ")[0] for title in titles} >= {"input", "reading", "cleaning",
                                                        "vocabulary", "output", "--vocab_type"}
    for title, group in flag_groups():
        section = text.split("\n%s:\n" % title, 1)[1].split("\n\n", 1)[0]
        for name, _ in group:
            assert "  --%s" % name in section, (title, name)
    assert "  -v " in text  # --log_level's alias, beside it


def test_the_command_line_is_parsed_once(monkeypatch, tmp_path):
    """The command (`datagen.run`) reads the whole command line in one argparse pass (the
    job's flags taken out); Beam's check sees only the rest (a pre-parse for --runner, then
    the check)."""
    import argparse
    from pipeline import datagen
    seen, commands = [], []
    parse = argparse.ArgumentParser.parse_known_args

    def counted(self, args=None, namespace=None):
        seen.append(list(args))
        return parse(self, args, namespace)

    class Job:  # the job's steps are not run: only its command line is read
        def __init__(self, command, interrupted):
            commands.append(command)

        def run(self):
            return {}
    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", counted)
    monkeypatch.setattr(datagen, "DatagenJob", Job)
    argv = PAIR + ["--output_dir", str(tmp_path), "--runner", "DirectRunner",
                   "--direct_num_workers", "2", "--vocab_size", "300"]
    monkeypatch.chdir(REPO_ROOT)
    datagen.run(argv)
    beam_args = ["--runner", "DirectRunner", "--direct_num_workers", "2"]
    assert commands[0].beam_args == beam_args
    assert commands[0].config.vocab.vocab_size == 300
    assert seen.count(argv) == 1
    assert all(args == beam_args for args in seen if args != argv)
