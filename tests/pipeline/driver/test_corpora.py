"""The corpora file (`--corpora`): what it defines, and one error naming file and key for
every malformed entry (`pipeline.driver.corpora`)."""

import os

import pytest

from pipeline.driver.corpora import parse_corpora
from pipeline.driver.options import parse_command_line, parse_flags
from pipeline.runtime.errors import DatagenError

FLAGS = parse_flags([])[0]


def _parse(text, path="/data/c.yaml"):
    return parse_corpora(text, path, FLAGS)


def test_entries_in_every_input_form_with_paths_relative_to_the_file():
    corpora = _parse("""
corpora:
  - name: en-ja
    source_lang: en
    target_lang: ja
    train: {source: en-ja/train.en, target: en-ja/train.ja}
    dev: {source: [en-ja/dev1.en, /abs/dev2.en], target: "en-ja/dev1.ja,/abs/dev2.ja",
          format: sgm}
  - name: en-ko
    source_lang: en
    target_lang: ko
    train: {tsv: en-ko/train.tsv, tmx: s3://bucket/ko.tmx}
    weight: 2
    source_column: 2
    target_column: 0
  - name: zh-en
    source_lang: zh
    target_lang: en
    train: {source: c.tgz!c/train.zh, target: c.tgz!c/train.en}
""")
    ja, ko, zh = corpora
    assert (ja.name, ja.source_lang, ja.target_lang, ja.weight) == ("en-ja", "en", "ja", 1.0)
    assert ja.inputs.train_source == "/data/en-ja/train.en"
    assert ja.inputs.dev_source == "/data/en-ja/dev1.en,/abs/dev2.en"
    assert ja.inputs.dev_target == "/data/en-ja/dev1.ja,/abs/dev2.ja"
    assert (ja.inputs.dev_format, ja.inputs.train_format) == ("sgm", "auto")
    assert (ko.weight, ko.source_column, ko.target_column) == (2.0, 2, 0)
    assert ko.inputs.train_tsv == "/data/en-ko/train.tsv"
    assert ko.inputs.train_tmx == "s3://bucket/ko.tmx"
    assert ko.inputs.dev_source is None
    assert zh.inputs.train_source == "/data/c.tgz!c/train.zh"


def test_every_malformed_entry_is_named_with_the_file_and_key():
    with pytest.raises(DatagenError) as e:
        _parse("""
corpora:
  - name: en-de
    source_lang: en
    target_lang: de
    train: {src: a.en, target: a.de}
  - name: en-fr
    target_lang: fr
    train: {tsv: a.tsv}
    weight: -1
  - name: en-fr
    source_lang: en
    target_lang: ../fr
    train: {tsv: a.tsv}
    dev: a.tsv
    colour: blue
  - just a string
""")
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith("--corpora /data/c.yaml: ")
    for part in ("corpora[0] (en-de): train: unknown key 'src'",
                 "corpora[0] (en-de): train: source and target go together",
                 "corpora[1] (en-fr): source_lang is required",
                 "corpora[1] (en-fr): weight: must be a positive number, not -1.0",
                 "corpora[2] (en-fr): target_lang '../fr' cannot be part of a file name",
                 "corpora[2] (en-fr): dev: must be a mapping of inputs",
                 "corpora[2] (en-fr): unknown key 'colour'",
                 "corpora[2] (en-fr): name already used by corpora[1]",
                 "corpora[3]: must be a mapping"):
        assert part in message, part


@pytest.mark.parametrize("text,problem", [
    ("corpora: [", "not YAML"),
    ("- a", "must be a mapping with a `corpora:` list"),
    ("corpora: []\n", "corpora: lists no corpus"),
    ("corpora: [{name: x, source_lang: en, target_lang: de, train: {tsv: a}}]\nextra: 1",
     "unknown key 'extra' (the file takes: corpora)"),
    ("corpora: [{name: x, source_lang: en, target_lang: en, train: {tsv: a}}]",
     "source_lang and target_lang are both 'en'"),
    ("corpora: [{name: x, source_lang: en, target_lang: de, train: {tsv: a}, "
     "source_column: 1, target_column: 1}]", "must be different non-negative"),
    ("corpora: [{name: x, source_lang: en, target_lang: de}]", "train is required"),
    ("corpora: [{name: x, source_lang: en, target_lang: de, train: {format: sgm}}]",
     "names no input"),
    ("corpora: [{name: x, source_lang: en, target_lang: de, train: {tsv: a, format: tsv}}]",
     "train.format: must be one of auto, lines, sgm, iwslt"),
    ("corpora: [{name: x, source_lang: 7, target_lang: de, train: {tsv: a}}]",
     "source_lang: must be a language code"),
    ("corpora: [{source_lang: en, target_lang: de, train: {tsv: a}}]", "name is required"),
])
def test_a_malformed_file_is_one_line_naming_the_file(text, problem):
    with pytest.raises(DatagenError) as e:
        _parse(text)
    assert "--corpora /data/c.yaml" in str(e.value) and problem in str(e.value)


def test_the_command_line_reads_it_and_refuses_the_flags_it_replaces(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("corpora:\n"
                    "  - {name: a, source_lang: en, target_lang: de, train: {tsv: a.tsv}}\n"
                    "  - {name: b, source_lang: en, target_lang: fr, train: {tsv: b.tsv}}\n")
    config = parse_command_line(["--corpora", str(path), "--output_dir", str(tmp_path)]).config
    assert [c.name for c in config.corpora] == ["a", "b"] and config.several_corpora
    assert config.corpora[1].inputs.train_tsv == os.path.join(str(tmp_path), "b.tsv")
    with pytest.raises(DatagenError, match="leave out --train_tsv, --source_lang"):
        parse_command_line(["--corpora", str(path), "--output_dir", str(tmp_path),
                            "--train_tsv", "x", "--source_lang", "en"])
    with pytest.raises(DatagenError, match="several corpora share one vocabulary"):
        parse_command_line(["--corpora", str(path), "--output_dir", str(tmp_path),
                            "--vocab_type", "word", "--word_vocab", "a,b"])
    with pytest.raises(DatagenError, match="--corpora .*missing.yaml cannot be read"):
        parse_command_line(["--corpora", str(tmp_path / "missing.yaml"),
                            "--output_dir", str(tmp_path)])
    with pytest.raises(DatagenError, match="--sampling_temperature: must be a finite number above 0"):
        parse_command_line(["--corpora", str(path), "--output_dir", str(tmp_path),
                            "--sampling_temperature", "0"])


def test_the_single_pair_flags_are_one_corpus():
    config = parse_command_line(["--train_source", "a.en", "--train_target", "a.de",
                                 "--dev_tsv", "d.tsv", "--source_lang", "en",
                                 "--output_dir", "/tmp/o"]).config
    (corpus,) = config.corpora
    assert not config.several_corpora
    assert (corpus.name, corpus.source_lang, corpus.target_lang, corpus.weight) == (
        "", "en", None, 1.0)
    assert corpus.inputs == config.inputs


def test_the_mixing_flags_are_refused_with_one_corpus(tmp_path):
    base = ["--train_source", "a.en", "--train_target", "a.de", "--output_dir", "/tmp/o"]
    for flag in (["--mix_shards"], ["--sampling_temperature", "2"]):
        with pytest.raises(DatagenError, match="%s applies to several corpora" % flag[0]):
            parse_command_line(base + flag)
    path = tmp_path / "one.yaml"
    path.write_text("corpora: [{name: a, source_lang: en, target_lang: de, train: {tsv: a}}]")
    with pytest.raises(DatagenError, match="--mix_shards applies to several corpora"):
        parse_command_line(["--corpora", str(path), "--output_dir", "/tmp/o", "--mix_shards"])


@pytest.mark.parametrize("text,where", [
    ("corpora: [{name: a, source_lang: en, target_lang: de, train: {tsv: a}}]\n"
     "corpora: [{name: b, source_lang: en, target_lang: fr, train: {tsv: b}}]\n",
     "key 'corpora' given twice (line 2"),
    ("corpora:\n  - name: a\n    source_lang: en\n    target_lang: de\n"
     "    train: {tsv: a}\n    train: {tsv: b}\n", "corpora[0] (a): key 'train' given twice (line 6"),
    ("corpora:\n  - name: a\n    source_lang: en\n    target_lang: de\n"
     "    train: {tsv: a, tsv: b}\n", "corpora[0] (a): train: key 'tsv' given twice (line 5"),
])
def test_a_repeated_key_is_refused_naming_the_file_entry_and_key(text, where):
    """YAML keeps the last of a repeated key: `cat a.yaml b.yaml` lost a's corpora."""
    with pytest.raises(DatagenError) as e:
        _parse(text)
    message = str(e.value)
    assert "\n" not in message and message.startswith("--corpora /data/c.yaml: " + where)


def test_yaml_1_1_readings_are_not_applied_numbers_and_language_codes_stay_as_written():
    """`1e-3` is a number (YAML 1.1: a string), `no` (Norwegian) a language code (YAML
    1.1: False), `on`/`yes` too."""
    a, b = _parse("""
corpora:
  - {name: a, source_lang: en, target_lang: no, train: {tsv: a}, weight: 1e-3}
  - {name: b, source_lang: on, target_lang: yes, train: {tsv: b}, weight: 2E+2}
""")
    assert (a.target_lang, a.weight) == ("no", 0.001)
    assert (b.source_lang, b.target_lang, b.weight) == ("on", "yes", 200.0)


def test_two_entries_making_one_pair_name_are_refused_naming_both():
    """`en-US`->`de` and `en`->`US-de` are both `en-US-de`: their records would share
    shards and books."""
    with pytest.raises(DatagenError) as e:
        _parse("""
corpora:
  - {name: us, source_lang: en-US, target_lang: de, train: {tsv: a}}
  - {name: de, source_lang: en, target_lang: US-de, train: {tsv: b}}
""")
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith("--corpora /data/c.yaml: corpora[1] (de): ")
    assert "'en-US-de'" in message and "corpora[0] (us)" in message
    # the same languages twice are one pair (two corpora of it), not a collision
    assert len(_parse("""
corpora:
  - {name: a, source_lang: en-US, target_lang: de, train: {tsv: a}}
  - {name: b, source_lang: en-US, target_lang: de, train: {tsv: b}}
""")) == 2


def test_a_pair_whose_shard_names_exceed_a_file_name_is_refused_up_front(tmp_path):
    """--problem of 100 characters and languages of 64 are each within their limits, but a
    pair's shard names hold all three: ENAMETOOLONG came after two passes."""
    lang = "l" * 64
    path = tmp_path / "c.yaml"
    path.write_text("corpora:\n"
                    "  - {name: a, source_lang: en, target_lang: de, train: {tsv: a.tsv}}\n"
                    "  - {name: b, source_lang: %s, target_lang: %s, train: {tsv: b.tsv}}\n"
                    % (lang, lang.upper()))
    argv = ["--corpora", str(path), "--output_dir", str(tmp_path / "out")]
    with pytest.raises(DatagenError) as e:
        parse_command_line(argv + ["--problem", "p" * 100])
    message = str(e.value)
    assert "\n" not in message and message.startswith(
        "--corpora %s: corpora[1] (b): source_lang and target_lang: " % path)
    assert "over the 255 a file name may hold" in message
    assert not (tmp_path / "out").exists()
    assert len(parse_command_line(argv + ["--problem", "p" * 40]).config.corpora) == 2
    # a text shard's files end with a language too: the same names are too long as text,
    # and only the run's own format counts (it was the longest suffix of every format)
    with pytest.raises(DatagenError, match="names of 297 bytes"):
        parse_command_line(argv + ["--problem", "p" * 40, "--output_format", "text.gz"])


def test_an_entry_whose_files_hold_no_pair_is_refused_once_counted(tmp_path):
    """Files that are not 0 bytes but hold no pair (an empty .gz, every unit rejected by
    the prepare step) are found once the prepare step counted them: one line naming the
    entry and split, before anything is written (as a single pair's empty split)."""
    from types import SimpleNamespace
    from pipeline.driver.corpora import check_corpora_have_pairs
    path = tmp_path / "c.yaml"
    path.write_text("corpora:\n"
                    "  - {name: a, source_lang: en, target_lang: de, train: {tsv: a.tsv}}\n"
                    "  - {name: b, source_lang: en, target_lang: fr, train: {tsv: b.tsv}}\n")
    argv = ["--corpora", str(path), "--output_dir", str(tmp_path / "out")]
    config = parse_command_line(argv).config

    def prepared(corpus, lines, units):
        facts = {"lines": lines}
        return SimpleNamespace(ds={"corpus": corpus}, source_facts=facts, target_facts=facts,
                               units=units)
    check_corpora_have_pairs({"train": [prepared(0, 5, 5), prepared(1, 3, 3)]}, config)
    with pytest.raises(DatagenError) as e:
        check_corpora_have_pairs({"train": [prepared(0, 5, 5), prepared(1, 0, 4)]}, config)
    assert str(e.value) == (
        "--corpora %s: corpora[1] (b): train: no pairs to write (all 4 units read were "
        "rejected); pass --allow_empty to write empty shards" % path)
    allowed = parse_command_line(argv + ["--allow_empty"]).config
    assert allowed.job.allow_empty  # the job skips the check then, as the single pair's
