"""A flag is one field in one file: the config parts' and the kinds' settings fields declare
every flag of the job (`transforms.contracts.settings.setting`), and the parser, the
defaults, `--help`, the fingerprint's lists and the corpora file's replacements derive from
them. These tests fail when a flag is declared a second time anywhere, when a field is
neither a flag nor derived, when a flag misses README, and when a fingerprint of an existing
command line changes (older outputs must be recognised on a rerun)."""

import ast
import dataclasses
import pathlib

from pipeline.driver import fingerprint
from pipeline.driver.kinds import every_plugin
from pipeline.driver.options import (CORPORA_REPLACE, declared_flags, flag_defaults,
                                     job_flag_parser, parse_command_line)
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


def test_every_flag_is_in_the_readme():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    missing = [name for name in flag_defaults()
               if "--" + name not in readme
               and not any("--%s_*" % name[:i] in readme for i in range(1, len(name)))]
    assert missing == []


def test_the_fingerprint_lists_follow_the_roles_declared():
    roles = dict(declared_flags())
    assert fingerprint.OPERATIONAL_FLAGS == {n for n, f in roles.items() if f.role == OPERATIONAL}
    assert set(fingerprint.INPUT_FLAGS) == {n for n, f in roles.items() if f.role == INPUT}
    assert set(fingerprint.GIVEN_VOCAB_FLAGS) <= set(fingerprint.VOCAB_INPUT_FLAGS)
    assert {"train_source", "filters", "spm_model"} <= set(fingerprint.VOCAB_INPUT_FLAGS)
    assert "max_line_chars" not in fingerprint.VOCAB_FLAGS  # its rejects are still sampled
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
