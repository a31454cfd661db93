"""A corpora entry's own `filters:` file (issue 53 item 4): its pairs are cleaned by that
file, the other entries' by `--filters`; books, rejects and the summary stay per pair. A
filters path that cannot be read is one line naming the corpora file, the entry and the key
(exit 2) before anything runs."""

import json
import os
import re

import pytest

from many_pairs_corpora import CORPORA, corpora_file
from pipeline import datagen

pytestmark = pytest.mark.slow

# en-zh: its own file; en-de: --filters; en-vi: its own file with a costly filter
OWN_ZH = "filters:\n  - LengthFilter: {unit: word, max_length: 12, name: zh_length}\n"
JOB = "filters:\n  - LengthFilter: {unit: word, max_length: 25, name: job_length}\n"
OWN_VI = ("filters:\n  - LengthFilter: {unit: word, max_length: 30, name: vi_length}\n"
          "  - LangidFilter: {}\n")


def _corpora(tmp_path, own):
    path = corpora_file(str(tmp_path / "data"))
    with open(path) as f:
        data = json.load(f)
    for entry in data["corpora"]:
        if entry["name"] in own:
            entry["filters"] = own[entry["name"]]
    with open(path, "w") as f:
        json.dump(data, f)
    return path


def _lines(path):
    """The lines as the job reads them (a lone \r ends no line), right-stripped."""
    with open(path, "rb") as f:
        data = f.read()
    data = data[:-1] if data.endswith(b"\n") else data
    return [line.decode("utf-8").rstrip() for line in data.split(b"\n")]


def _too_long(directory, name, src, tgt, words):
    """1-based numbers of the pairs with a side of more than `words` words or none
    (LengthFilter's default min_length: 1)."""
    source = _lines(os.path.join(directory, name, "train." + src))
    target = _lines(os.path.join(directory, name, "train." + tgt))
    return [n for n, (s, t) in enumerate(zip(source, target), 1)
            if not 1 <= len(s.split()) <= words or not 1 <= len(t.split()) <= words]


def test_each_entry_is_cleaned_by_its_own_filters_file(tmp_path):
    data = tmp_path / "data"
    corpora = _corpora(tmp_path, {"en-zh": "zh.yaml", "en-vi": "vi.yaml"})
    (data / "zh.yaml").write_text(OWN_ZH)  # relative to the corpora file
    (data / "vi.yaml").write_text(OWN_VI)
    (tmp_path / "job.yaml").write_text(JOB)
    out = tmp_path / "out"
    summary = datagen.run(["--corpora", corpora, "--output_dir", str(out),
                           "--filters", str(tmp_path / "job.yaml"), "--vocab_type", "word",
                           "--vocab_size", "300", "--problem", "p", "--runner", "FnApiRunner"])
    pairs = summary["splits"]["train"]["language_pairs"]
    expected = {"en-zh": ("zh_length", _too_long(str(data), "en-zh", "en", "zh", 12)),
                "en-de": ("job_length", _too_long(str(data), "en-de", "en", "de", 25)),
                "en-vi": ("vi_length", _too_long(str(data), "en-vi", "en", "vi", 30))}
    lines = {name: n for name, _, _, _, _, n, _ in CORPORA}
    rejects = {}
    with open(out / "rejects" / "p-train.jsonl") as f:
        for record in map(json.loads, f):
            rejects.setdefault(record["dataset"].split(":")[0], []).append(record)
    for name, (reason, numbers) in expected.items():
        books = pairs[name]
        assert numbers, name  # each filter drops something
        assert books["pairs_read"] == lines[name]
        assert books["pairs_read"] == books["pairs_written"] + books["pairs_rejected"]
        assert books["rejected_by_reason"].get(reason) == len(numbers), (name, books)
        assert sorted(r["ordinal"] for r in rejects[name] if r["reason"] == reason) == numbers
        assert set(books["rejected_by_reason"]) <= {reason, "LangidFilter"}, name
    assert set(summary["cleaning"]["filters_per_corpus"]) == {"en-zh", "en-vi"}
    assert summary["cleaning"]["filters"] == [
        {"LengthFilter": {"unit": "word", "max_length": 25, "name": "job_length"}}]


def test_a_filters_path_that_cannot_be_read_names_the_entry(tmp_path, capsys):
    corpora = _corpora(tmp_path, {"en-de": "missing.yaml"})
    code = datagen.main(["--corpora", corpora, "--output_dir", str(tmp_path / "out"),
                         "--vocab_type", "word", "--vocab_size", "300", "--runner",
                         "FnApiRunner"])
    err = [re.sub(r"^\d\d:\d\d:\d\d ERROR ", "", line)
           for line in capsys.readouterr().err.strip().splitlines()]
    assert code == 2
    assert len(err) == 1 and err[0].startswith(
        "--corpora %s: corpora[1] (en-de): filters: %s cannot be read: "
        % (corpora, tmp_path / "data" / "missing.yaml")), err


def test_a_bad_filters_file_of_an_entry_names_the_entry(tmp_path, capsys):
    corpora = _corpora(tmp_path, {"en-zh": "bad.yaml"})
    (tmp_path / "data" / "bad.yaml").write_text(
        "filters:\n  - LengthFilter: {}\nremove_duplicates: {lowercase: true}\n")
    code = datagen.main(["--corpora", corpora, "--output_dir", str(tmp_path / "out"),
                         "--vocab_type", "word", "--vocab_size", "300"])
    err = [re.sub(r"^\d\d:\d\d:\d\d ERROR ", "", line)
           for line in capsys.readouterr().err.strip().splitlines()]
    assert code == 2 and err == [
        "--corpora %s: corpora[0] (en-zh): filters: %s: remove_duplicates is the "
        "job's (in --filters), not a corpus's" % (corpora, tmp_path / "data" / "bad.yaml")]


def test_the_readme_example_cleans_each_entry_by_its_own_file(tmp_path):
    """README's corpora file with an entry's own `filters:` (the LanguageIDFilter example)
    beside the sample's corpora file, `--filters` the README's cleaning example."""
    pytest.importorskip("pycld2")
    import shutil
    import readme_examples
    from repo_paths import SAMPLE_DATA
    sample = tmp_path / "sample_data"
    for name in ("many-pairs", "enzh-mlqe-pe"):
        shutil.copytree(os.path.join(SAMPLE_DATA, name), sample / name)
    corpora = sample / "many-pairs" / "c.yaml"
    corpora.write_text(readme_examples.block("corpora-filters"))
    (sample / "many-pairs" / "lid.yaml").write_text(readme_examples.block("cleaning-lid"))
    (tmp_path / "filters.yaml").write_text(readme_examples.block("cleaning"))
    summary = datagen.run(["--corpora", str(corpora), "--output_dir", str(tmp_path / "out"),
                           "--filters", str(tmp_path / "filters.yaml"), "--vocab_size",
                           "2000", "--runner", "FnApiRunner"])
    pairs = summary["splits"]["train"]["language_pairs"]
    assert pairs["en-zh"]["rejected_by_reason"] == {"LanguageIDFilter": 352}
    assert pairs["en-de"]["rejected_by_reason"] == {"LengthRatioFilter": 3, "LengthFilter": 1}
