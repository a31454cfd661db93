"""The dataset card (`README.md` in the output directory, `pipeline.output.card`): Hugging
Face's `datasets` loads a Parquet output as it is, every language pair and split with the
pairs the summary says were written; the card's numbers are the summary's; licences and
sources come from the corpora file; a TFRecord output's card has no `configs`; a rerun's
card is byte-identical; a user's own README.md is left alone.
"""

import json
import os
import re

import pytest
import yaml

from datagen_helpers import MLQE, run_datagen
from many_pairs_corpora import corpora_file
from pipeline.output.card import CARD_MARK

pytestmark = pytest.mark.slow

FLAGS = ["--problem", "p", "--vocab_size", "1000"]


def _card(out):
    """(YAML header, {section title: [table rows as lists of cells]}, text) of a card."""
    with open(os.path.join(out, "README.md"), encoding="utf-8") as f:
        text = f.read()
    _, head, body = text.split("---\n", 2)
    sections, title = {}, None
    for line in body.splitlines():
        if line.startswith("## "):
            title = line[3:]
            sections[title] = []
        elif title and line.startswith("| ") and not line.startswith("| split") \
                and not line.startswith("| position"):
            sections[title].append([c.strip() for c in line.strip("|").split("|")])
    return yaml.safe_load(head), sections, text


def _summary(out):
    with open(os.path.join(out, "p.datagen_summary.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """A Parquet output of three language pairs, the corpora file naming licences."""
    root = tmp_path_factory.mktemp("card")
    path = corpora_file(str(root))
    with open(path) as f:
        corpora = json.load(f)
    corpora["corpora"][0].update(license="cc-by-4.0", source_datasets="mlqe-pe")
    corpora["corpora"][1].update(license="cc-by-sa-4.0", source_datasets=["opennmt"])
    with open(path, "w") as f:
        json.dump(corpora, f)
    out = root / "out"
    run_datagen(out, None, None, "--corpora", path, "--output_format", "parquet",
                "--num_train_shards", "2", *FLAGS)
    return str(out)


def test_load_dataset_reads_every_pair_and_split_with_the_summarys_counts(many, tmp_path):
    import datasets
    header, _, _ = _card(many)
    summary = _summary(many)
    configs = [c["config_name"] for c in header["configs"]]
    assert configs == ["en-zh", "en-de", "en-vi"]
    for name in configs:
        loaded = datasets.load_dataset(many, name, cache_dir=str(tmp_path / "hf"))
        expected = {split: books["language_pairs"][name]["pairs_written"]
                    for split, books in summary["splits"].items()
                    if name in books["language_pairs"]}
        assert {split: d.num_rows for split, d in loaded.items()} == expected
        assert set(loaded["train"]["lang_pair"]) == {name}
    default = datasets.load_dataset(many, cache_dir=str(tmp_path / "hf"))  # the first pair
    assert default["train"].num_rows == \
        summary["splits"]["train"]["language_pairs"]["en-zh"]["pairs_written"]


def test_the_cards_numbers_are_the_summarys(many):
    header, sections, text = _card(many)
    summary = _summary(many)
    assert header["language"] == ["en", "zh", "de", "vi"]
    assert header["task_categories"] == ["translation"]
    assert header["size_categories"] == ["n<1K"]  # 556 pairs written
    assert header["license"] == ["cc-by-4.0", "cc-by-sa-4.0"]
    assert header["source_datasets"] == ["mlqe-pe", "opennmt"]
    assert CARD_MARK % "p" in text
    for pair, rows in sections.items():
        books = summary["splits"]["train"]["language_pairs"][pair]
        lengths = summary["lengths"]["pairs"][pair]["train"]
        train = [r for r in rows if r[0] == "train"]
        assert train[0][1:4] == [str(books["pairs_read"]), str(books["pairs_written"]),
                                 str(books["pairs_rejected"])]
        assert train[0][4] == "not measured"  # no --dedup
        for side in ("inputs", "targets"):
            row = next(r for r in train if len(r) == 6 and r[1] == side)
            assert row[2:] == [str(lengths[side][k]) for k in ("p50", "p90", "p99", "max")]
        rejected = {r[1]: int(r[2]) for r in train if len(r) == 3}
        assert rejected == books["rejected_by_reason"]
        ratio = [r[1:] for r in train if len(r) == 4]
        assert [[label, int(n)] for label, n, _ in ratio] == lengths["ratio_histogram"]
        assert sum(int(n) for _, n, _ in ratio) == lengths["pairs"] == books["pairs_written"]
        assert [share for _, _, share in ratio] == [
            "%.4f" % (n / lengths["pairs"]) for _, n in lengths["ratio_histogram"]]
    samples = re.findall(r"^\| (\d+) \| &lt;2(\w+)&gt; ", text, re.M)
    assert len(samples) == 4 * 3 + 0  # four train samples per pair (no dev split)
    assert {lang for _, lang in samples} == {"zh", "de", "vi"}


def test_tfrecord_card_has_no_configs_and_counts_duplicates(tmp_path):
    out = tmp_path / "out"
    src, tgt = os.path.join(MLQE, "dev.en"), os.path.join(MLQE, "dev.zh")
    run_datagen(out, src, tgt, "--dedup", "pairs", "--num_train_shards", "2", *FLAGS)
    header, sections, text = _card(out)
    summary = _summary(out)
    assert "configs" not in header and "`datasets` does not read this format" in text
    assert header["language"] == ["en", "zh"]
    books = summary["splits"]["train"]
    (row,) = [r for r in sections["en-zh"] if r[0] == "train" and len(r) == 6
              and r[1].isdigit()]
    duplicates = books["rejected_by_reason"].get("duplicate", 0)
    assert row[4] == "%.4f" % (duplicates / books["pairs_read"])
    with open(out / "README.md", "rb") as f:
        first = f.read()
    run_datagen(out, src, tgt, "--dedup", "pairs", "--num_train_shards", "2", "--overwrite",
                *FLAGS)
    with open(out / "README.md", "rb") as f:
        assert f.read() == first  # no time, path or run id in it


def test_a_users_readme_is_left_alone(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "README.md").write_text("my notes\n")
    src, tgt = os.path.join(MLQE, "dev.en"), os.path.join(MLQE, "dev.zh")
    run_datagen(out, src, tgt, *FLAGS)
    assert (out / "README.md").read_text() == "my notes\n"
    assert (out / "p.DATAGEN_COMPLETE").exists()
