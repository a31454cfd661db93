"""Small real corpora of three language pairs as a corpora file, for the tests of
`--corpora` (tests/end_to_end/test_many_pairs*.py)."""

import json
import os

from datagen_helpers import DATA_DIR

# (corpus name, source lang, target lang, source file, target file, lines, weight)
CORPORA = [
    ("en-zh", "en", "zh", "enzh-mlqe-pe/train.en", "enzh-mlqe-pe/train.zh", 300, 1.0),
    ("en-de", "en", "de", "ende-opennmt/train.en", "ende-opennmt/train.de", 200, 1.0),
    ("en-vi", "en", "vi", "envi-nmt-testdata/iwslt15.tst2013.100.en",
     "envi-nmt-testdata/iwslt15.tst2013.100.vi", 60, 2.0),
]


def head_lines(src, dst, lines):
    with open(os.path.join(DATA_DIR, src), "rb") as f:
        data = b"".join(f.readline() for _ in range(lines))
    with open(dst, "wb") as f:
        f.write(data)
    return dst


def corpora_file(directory, corpora=CORPORA):
    """A corpora file over the first lines of the test corpora, paths relative to it."""
    entries = []
    for name, src, tgt, src_file, tgt_file, lines, weight in corpora:
        os.makedirs(os.path.join(directory, name), exist_ok=True)
        head_lines(src_file, os.path.join(directory, name, "train." + src), lines)
        head_lines(tgt_file, os.path.join(directory, name, "train." + tgt), lines)
        entries.append({"name": name, "source_lang": src, "target_lang": tgt,
                        "train": {"source": "%s/train.%s" % (name, src),
                                  "target": "%s/train.%s" % (name, tgt)},
                        "weight": weight})
    path = os.path.join(directory, "corpora.yaml")
    with open(path, "w") as f:
        json.dump({"corpora": entries}, f)  # JSON is YAML
    return path


def corpora_of_texts(directory, pairs):
    """A corpora file of English-to-X entries from texts written here: `pairs` maps each
    target language (also the entry's name) to its (English text, target text), written as
    `{lang}.en` / `{lang}.{lang}` beside the file."""
    entries = []
    os.makedirs(directory, exist_ok=True)
    for lang, (source_text, target_text) in pairs.items():
        for name, text in (("%s.en" % lang, source_text), ("%s.%s" % (lang, lang), target_text)):
            with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
                f.write(text)
        entries.append({"name": lang, "source_lang": "en", "target_lang": lang,
                        "train": {"source": "%s.en" % lang, "target": "%s.%s" % (lang, lang)}})
    path = os.path.join(directory, "c.yaml")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"corpora": entries}, f)  # JSON is YAML
    return path
