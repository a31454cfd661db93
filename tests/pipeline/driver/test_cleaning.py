"""pipeline/driver/cleaning: the --filters file, --dedup and --drop_dev_overlap read and
checked when the job starts (one line, exit 2, before anything runs); the cleaning pass's
label; and its per-dataset report attached to the prepared datasets and summed for the
summary."""

import json

import pytest

from driver_fixtures import (cleaning_config, cleaning_step, config, corpus, layout, pass_runner,
                             prepared, write)
from pipeline.runtime.errors import DatagenError

LENGTH = "filters:\n  - LengthFilter: {unit: word, min_length: 1, max_length: 5}\n"


def error_of(cfg):
    with pytest.raises(DatagenError) as raised:
        cleaning_config(cfg)
    assert "\n" not in str(raised.value)
    return str(raised.value)


def test_no_cleaning_flags_mean_no_cleaning(tmp_path):
    assert not cleaning_config(config(tmp_path)).active


def test_a_filters_file_and_dedup_are_loaded(tmp_path):
    filters = write(tmp_path / "f.yaml", LENGTH)
    cleaning = cleaning_config(config(tmp_path, "--filters", filters, "--dedup", "source"))
    assert cleaning.active
    assert cleaning.filters == (("LengthFilter", {"unit": "word", "min_length": 1,
                                                  "max_length": 5}),)
    assert cleaning.dedup.sides == (0,)


def test_a_missing_filters_file_is_one_line(tmp_path):
    missing = str(tmp_path / "none.yaml")
    assert error_of(config(tmp_path, "--filters", missing)).startswith(
        "--filters %s cannot be read: " % missing)


def test_a_filters_file_that_is_not_utf8_is_one_line(tmp_path):
    path = str(tmp_path / "f.yaml")
    with open(path, "wb") as f:
        f.write(b"filters: [\xff]\n")
    assert error_of(config(tmp_path, "--filters", path)).startswith(
        "--filters %s cannot be read: 'utf-8' codec can't decode byte 0xff" % path)


@pytest.mark.parametrize("text, problem", [
    ("filters:\n  - NoSuchFilter: {}\n", "unknown filter NoSuchFilter (known: LengthFilter, "),
    ("filters: [", "not YAML: "),
    ("- LengthFilter: {}\n", "must be a mapping with a `filters:` list"),
    ("filter: []\n", "unknown key filter (it takes: "),
    ("filters:\n  - LengthFilter: {min_length: many}\n", "LengthFilter"),
])
def test_a_bad_filters_file_names_the_file_and_the_problem(tmp_path, text, problem):
    path = write(tmp_path / "f.yaml", text)
    assert error_of(config(tmp_path, "--filters", path)).startswith(
        "--filters %s: %s" % (path, problem))


def test_drop_dev_overlap_needs_dev_data(tmp_path):
    assert error_of(config(tmp_path, "--drop_dev_overlap")) == (
        "--drop_dev_overlap needs dev data (--dev_source/--dev_target, --dev_tsv or --dev_tmx)")
    dev = corpus(tmp_path, name="dev")
    assert cleaning_config(config(tmp_path, "--drop_dev_overlap", "--dev_source", dev[0],
                                "--dev_target", dev[1])).drop_dev_overlap


def step_of(tmp_path, *flags):
    dev = corpus(tmp_path, name="dev")
    filters = write(tmp_path / "f.yaml", LENGTH)
    cfg = config(tmp_path, "--filters", filters, "--dev_source", dev[0], "--dev_target",
                 dev[1], *flags)
    out = layout(cfg)
    return out, cleaning_step(cfg, out)


def test_the_pass_label_says_what_is_cleaned(tmp_path):
    _, step = step_of(tmp_path, "--dedup", "pairs", "--drop_dev_overlap")
    ready = {"train": [prepared("train", 0, "t.en", "t.de", 25, every=10)],
             "dev": [prepared("dev", 0, "d.en", "d.de", 5)]}
    label, _ = step.build(ready)
    assert label == "clean 4 chunks: LengthFilter; dedup pairs; dev overlap"


def test_a_run_attaches_each_datasets_drops_and_sums_them_by_reason(tmp_path):
    out, step = step_of(tmp_path, "--dedup", "source")
    ready = {"train": [prepared("train", 0, "a.en", "a.de", 5),
                       prepared("train", 1, "b.en", "b.de", 5)],
             "dev": [prepared("dev", 0, "d.en", "d.de", 5)]}
    report = {"split": "train", "index": 1, "dropped": 3, "dropped_bytes": [30, 31],
              "reasons": [["LengthFilter", 2], ["duplicate source", 1]],
              "bitmap": "b.dropped", "rejects": "b.rejects.jsonl"}
    dev_report = {"split": "dev", "index": 0, "dropped": 1, "dropped_bytes": [5, 5],
                  "reasons": [["LengthFilter", 1]], "bitmap": "d.dropped",
                  "rejects": "d.rejects.jsonl"}
    first = dict(report, index=0, reasons=[["LengthFilter", 4]], bitmap="a.dropped")
    write(out.work("cleaning.json"), json.dumps({"cleaned": [report, dev_report, first]}))
    run_pass = pass_runner()  # a dry run's: the real cleaning pass is built, not run
    cleaned, summary = step.run(run_pass, ready)
    assert run_pass.count == 1
    assert [p.dropped for p in cleaned["train"]] == ["a.dropped", "b.dropped"]
    assert cleaned["train"][1].dropped_bytes == (30, 31)
    assert cleaned["train"][1].cleaning_rejects == "b.rejects.jsonl"
    assert [p.dropped for p in cleaned["dev"]] == ["d.dropped"]
    assert summary == {
        "filters": [{"LengthFilter": {"unit": "word", "min_length": 1, "max_length": 5}}],
        "dedup": "source", "dedup_options": {}, "drop_dev_overlap": False,
        "dropped": {"dev": {"LengthFilter": 1},
                    "train": {"LengthFilter": 6, "duplicate source": 1}}}


def test_datasets_without_drops_are_handed_on_as_they_were(tmp_path):
    out, step = step_of(tmp_path)
    ready = {"train": [prepared("train", 0, "a.en", "a.de", 5)]}
    write(out.work("cleaning.json"), json.dumps({"cleaned": []}))
    cleaned, summary = step.run(pass_runner(), ready)
    assert cleaned == ready and summary["dropped"] == {}


def test_langid_without_languages_takes_each_pairs_or_the_flags(tmp_path):
    from pipeline.driver.datasets import plan_datasets
    langid = write(tmp_path / "f.yaml", "filters:\n  - LangidFilter: {thresholds: [0, 0]}\n")
    cfg = config(tmp_path, "--filters", langid)
    step = cleaning_step(cfg, layout(cfg))
    step.load()
    with pytest.raises(DatagenError, match="LangidFilter has no languages"):
        step.check_languages({"train": plan_datasets(cfg, "train")}, False)
    cfg = config(tmp_path, "--filters", langid, "--source_lang", "en", "--target_lang", "de")
    step = cleaning_step(cfg, layout(cfg))
    step.load()
    step.check_languages({"train": plan_datasets(cfg, "train")}, False)
    assert step.config.filters == (("LangidFilter", {"thresholds": [0, 0],
                                                     "languages": ["en", "de"]}),)


def test_a_missing_fasttext_model_is_one_line_and_a_relative_one_made_absolute(
        tmp_path, monkeypatch):
    pytest.importorskip("fasttext")
    text = ("filters:\n  - LanguageIDFilter: {languages: [en, zh], id_method: fasttext, "
            "fasttext_model_path: %s}\n")
    path = write(tmp_path / "f.yaml", text % "lid.bin")
    monkeypatch.chdir(tmp_path)
    assert error_of(config(tmp_path, "--filters", path)) == (
        "--filters %s: LanguageIDFilter: fasttext_model_path %s does not exist"
        % (path, tmp_path / "lid.bin"))
    write(tmp_path / "lid.bin", "not read when the job starts")
    cleaning = cleaning_config(config(tmp_path, "--filters", path))
    assert cleaning.filters[0][1]["fasttext_model_path"] == str(tmp_path / "lid.bin")
