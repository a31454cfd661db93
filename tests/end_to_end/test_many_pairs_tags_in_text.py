"""A language tag's string inside a sentence stays text, end to end (issue 50, item 7).

README promises that a `<2de>` in the text is text, never the tag's id. Subword and
byte_bpe keep reserved tokens out of text by construction; `word` looked a text token up
as any word (the tag's id) and a SentencePiece model's user-defined symbols are matched in
text. Every record's text here holds both tags.
"""

import json

import pytest

from many_pairs_corpora import corpora_of_texts
from pipeline import datagen
from transforms.formats.example_proto import Int64FeaturesWriter
from transforms.shards.record_formats import format_of

pytestmark = pytest.mark.slow


def _corpora(directory):
    return corpora_of_texts(directory, {
        lang: ("".join("hello <2de> world %d <2fr>\n" % i for i in range(30)),
               "".join("hallo <2de> welt<2fr> %d\n" % i for i in range(30)))
        for lang in ("de", "fr")})


@pytest.mark.parametrize("kind,size", [("word", 60), ("sentencepiece", 45)])
def test_a_tag_string_in_the_text_never_becomes_the_tag_id(tmp_path, kind, size):
    out = tmp_path / "out"
    summary = datagen.run(["--corpora", _corpora(str(tmp_path / "data")), "--output_dir",
                           str(out), "--problem", "p", "--vocab_type", kind, "--vocab_size",
                           str(size), "--runner", "FnApiRunner"])
    tags = {lang: entry["id"] for lang, entry in summary["lang_tags"].items()}
    examples = Int64FeaturesWriter()
    records = 0
    for pair, entry in summary["splits"]["train"]["language_pairs"].items():
        for name in entry["shards"]:
            for record in format_of(str(out / name)).read_shard(str(out / name)):
                ids = examples.parse(record)
                assert ids["inputs"][0] == tags[pair.split("-")[1]]  # the tag, first
                assert not set(tags.values()) & set(ids["inputs"][1:] + ids["targets"]), (
                    json.dumps(ids))
                records += 1
    assert records == 60
