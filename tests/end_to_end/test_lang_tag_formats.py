"""--lang_tags t2t | fairseq | marian | nllb: each target language's tag, spelt as the trainer
spells it (`<2de>`, `__de__`, `>>de<<`), is one reserved id that starts every input of its pair and
that the text never gives; it is one entry of the byte_bpe tokenizer.json's vocabulary,
spelt as the tag, and one line of the fairseq data-bin's dict.txt, written as the tag. nllb
also starts every input with the source language's `__xx__` and every target with the
target language's.
"""

import json
import os

import pytest

from many_pairs_corpora import corpora_file
from pipeline import datagen
from format_readers import read_fairseq_side as read_side
from transforms.codecs.lang_tags import lang_tag
from transforms.shards.record_formats import format_of
from transforms.formats.example_proto import Int64FeaturesWriter

pytestmark = pytest.mark.slow

SPELT = {"t2t": "<2de>", "fairseq": "__de__", "marian": ">>de<<"}


def _run(out, corpora, *extra):
    return datagen.main(["--corpora", corpora, "--output_dir", str(out), "--problem", "m",
                         "--runner", "FnApiRunner", "--vocab_size", "600", *extra])


def _records(out, name):
    examples = Int64FeaturesWriter()
    path = os.path.join(out, name)
    return [examples.parse_all(r) for r in format_of(path).read_shard(path)]


def test_tag_spellings():
    assert {fmt: lang_tag("de", fmt) for fmt in SPELT} == SPELT
    assert lang_tag("de", "target") == "<2de>"  # today's name of the t2t format


@pytest.mark.parametrize("tag_format", ["fairseq", "marian"])
def test_each_format_is_one_id_in_records_dict_and_data_bin(tag_format, tmp_path):
    corpora = corpora_file(str(tmp_path / "in"))
    out = str(tmp_path / tag_format)
    assert _run(out, corpora, "--lang_tags", tag_format, "--output_format", "fairseq") == 0
    with open(os.path.join(out, "m.datagen_summary.json")) as f:
        tags = json.load(f)["lang_tags"]
    assert {lang: t["token"] for lang, t in tags.items()} == {
        lang: lang_tag(lang, tag_format) for lang in ("de", "vi", "zh")}
    ids = {t["id"] for t in tags.values()}
    assert len(ids) == 3
    with open(os.path.join(out, "m.data-bin", "dict.en.txt"), encoding="utf-8") as f:
        dict_tokens = [line.rsplit(" ", 1)[0] for line in f]
    for lang, tag in tags.items():
        records = [r for name in sorted(os.listdir(out))
                   if name.startswith("m~en-%s-train-" % lang) for r in _records(out, name)]
        assert records and all(r["inputs"][0] == tag["id"] for r in records)
        assert all(tag["id"] not in r["inputs"][1:] and not ids & set(r["targets"])
                   for r in records)
        # fairseq's id of the tag: the job's id + 2 (subword); its dict line is the tag
        assert dict_tokens[tag["id"] + 2 - 4] == tag["token"]
        source = read_side(os.path.join(out, "m.data-bin"), "train.en-%s.en" % lang)
        assert len(source) == len(records)
        assert all(s[0] == tag["id"] + 2 for s in source)


def test_byte_bpe_tokenizer_json_holds_each_tag_as_one_special_token(tmp_path):
    corpora = corpora_file(str(tmp_path / "in"))
    out = str(tmp_path / "bpe")
    assert _run(out, corpora, "--lang_tags", "marian", "--vocab_type", "byte_bpe") == 0
    with open(os.path.join(out, "m.datagen_summary.json")) as f:
        tags = json.load(f)["lang_tags"]
    found = [p for p in os.listdir(out) if p.startswith("vocab.m.")]
    tokenizer = next(os.path.join(out, d, "tokenizer.json") for d in found
                     if os.path.exists(os.path.join(out, d, "tokenizer.json")))
    import tokenizers
    loaded = tokenizers.Tokenizer.from_file(tokenizer)
    for lang, tag in tags.items():
        assert tag["token"] == ">>%s<<" % lang
        # one entry of the vocabulary, spelt as the trainer spells it...
        assert loaded.token_to_id(tag["token"]) == tag["id"]
        assert loaded.id_to_token(tag["id"]) == tag["token"]
        # ...which text never gives (the job prepends it; `>>de<<` in a sentence is text)
        assert tag["id"] not in loaded.encode(tag["token"], add_special_tokens=False).ids


def test_nllb_puts_the_source_tag_on_inputs_and_the_target_tag_first_in_targets(tmp_path):
    corpora = corpora_file(str(tmp_path / "in"))
    out = str(tmp_path / "nllb")
    assert _run(out, corpora, "--lang_tags", "nllb", "--output_format", "fairseq") == 0
    with open(os.path.join(out, "m.datagen_summary.json")) as f:
        tags = json.load(f)["lang_tags"]
    assert {lang: t["token"] for lang, t in tags.items()} == {
        lang: "__%s__" % lang for lang in ("de", "en", "vi", "zh")}
    ids = {t["id"] for t in tags.values()}
    assert len(ids) == 4
    with open(os.path.join(out, "m.data-bin", "dict.en.txt"), encoding="utf-8") as f:
        dict_tokens = [line.rsplit(" ", 1)[0] for line in f]
    for lang in ("de", "vi", "zh"):
        records = [r for name in sorted(os.listdir(out))
                   if name.startswith("m~en-%s-train-" % lang) for r in _records(out, name)]
        assert records
        assert all(r["inputs"][0] == tags["en"]["id"] and r["targets"][0] == tags[lang]["id"]
                   for r in records)
        assert all(not ids & set(r["inputs"][1:] + r["targets"][1:]) for r in records)
        assert dict_tokens[tags[lang]["id"] + 2 - 4] == "__%s__" % lang
        target = read_side(os.path.join(out, "m.data-bin"), "train.en-%s.%s" % (lang, lang))
        assert [t[0] for t in target] == [tags[lang]["id"] + 2] * len(records)
