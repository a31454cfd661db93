"""LanguageIDFilter's id_method cld2, lingua and fasttext against OpusFilter 3.3.1 itself: the
same pairs kept, on a noisy en-zh corpus built here from the test data's real lines.

The corpus (`noisy_corpus`): Wikipedia sentences with post-edited Chinese (enzh-mlqe-pe, the
kind of text FLORES is), short Tatoeba pairs (formats/cmn.head3000.txt, the Tanaka corpus's
source), and wrong-language pairs: sides swapped, German (ende-opennmt) and Vietnamese
(envi-nmt-testdata) in the place of English or Chinese, English on both sides, and empty
sides; shuffled with a fixed seed. The fastText model is trained here with the `fasttext`
package (supervised, `__label__xx`) on other lines of the same corpora, and both sides load
the same file. OpusFilter runs from its cached venv with pycld2 and fasttext added
(`opusfilter_reference.install_lid_extras`; fastText's one-line predict made to run on NumPy
2, `FASTTEXT_NUMPY2`).
"""

import os
import random

import pytest

from cleaning_helpers import our_drops
from opusfilter_reference import install_lid_extras, opusfilter_drops
from repo_paths import DATA_DIR as DATA

pytestmark = pytest.mark.slow


def _lines(name, start=0, stop=None):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f][start:stop]


def _tatoeba(start, stop):
    rows = [line.lstrip("\ufeff").split("\t") for line in _lines("formats/cmn.head3000.txt")]
    return [(row[0], row[1]) for row in rows[start:stop] if len(row) >= 2]


def noisy_pairs():
    en, zh = _lines("enzh-mlqe-pe/train.en"), _lines("enzh-mlqe-pe/train.zh")
    de_en, de = _lines("ende-opennmt/train.en"), _lines("ende-opennmt/train.de")
    vi = _lines("envi-nmt-testdata/iwslt15.tst2013.100.vi")
    pairs = list(zip(en[:150], zh[:150]))                      # right
    pairs += _tatoeba(1000, 1150)                              # right, short
    pairs += [(z, e) for e, z in zip(en[150:200], zh[150:200])]  # swapped
    pairs += list(zip(de_en[:40], de[:40]))                    # German target
    pairs += list(zip(de[40:80], zh[200:240]))                 # German source
    pairs += list(zip(vi[:30], zh[240:270]))                   # Vietnamese source
    pairs += list(zip(en[270:300], de_en[80:110]))             # English both sides
    pairs += [(e, "") for e in en[300:310]] + [("", z) for z in zh[310:320]]
    random.Random(53).shuffle(pairs)
    return pairs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    work = tmp_path_factory.mktemp("lid")
    pairs = noisy_pairs()
    paths = [str(work / "noisy.en"), str(work / "noisy.zh")]
    for side, path in enumerate(paths):
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(pair[side].replace("\t", " ") + "\n" for pair in pairs)
    return work, paths


@pytest.fixture(scope="module")
def fasttext_model(corpus):
    """A tiny supervised model trained on lines that are not in the corpus."""
    import fasttext
    work = corpus[0]
    labelled = [("en", _lines("enzh-mlqe-pe/train.en", 1000, 1600)),
                ("zh", _lines("enzh-mlqe-pe/train.zh", 1000, 1600)),
                ("de", _lines("ende-opennmt/train.de", 1000, 1600)),
                ("vi", _lines("envi-nmt-testdata/iwslt15.tst2013.100.vi", 50))]
    labelled += [("en", [e for e, _ in _tatoeba(2000, 2600)]),
                 ("zh", [z for _, z in _tatoeba(2000, 2600)])]
    train = work / "lid.train"
    rows = ["__label__%s %s" % (lang, line) for lang, lines in labelled for line in lines]
    random.Random(1).shuffle(rows)
    train.write_text("\n".join(rows) + "\n", encoding="utf-8")
    model = fasttext.train_supervised(str(train), dim=16, epoch=5, minn=1, maxn=3,
                                      thread=1, seed=1, verbose=0)
    path = str(work / "lid.ftz")
    model.save_model(path)
    return path


def configs(model_path):
    return {
        "cld2": [{"LanguageIDFilter": {"languages": ["en", "zh"], "id_method": "cld2"}}],
        "cld2_options": [{"LanguageIDFilter": {
            "languages": ["en", "zh"], "id_method": "cld2", "thresholds": [0.9, 0.5],
            "cld2_options": {"bestEffort": True, "hintLanguage": "en"}}}],
        "lingua_low": [{"LanguageIDFilter": {
            "languages": ["en", "zh"], "id_method": "lingua",
            "langid_languages": ["en", "zh", "de", "vi"], "thresholds": [0.3, 0.3]}}],
        "lingua_high": [{"LanguageIDFilter": {
            "languages": ["en", "zh"], "id_method": "lingua", "lingua_mode": "high",
            "langid_languages": ["en", "zh", "de", "vi", "fr"]}}],
        "fasttext": [{"LanguageIDFilter": {
            "languages": ["en", "zh"], "id_method": "fasttext",
            "fasttext_model_path": model_path, "thresholds": [0.5, 0.5]}}],
        "fasttext_chain": [
            {"LengthFilter": {"unit": ["word", "char"], "min_length": 1,
                              "max_length": [50, 90]}},
            {"LanguageIDFilter": {"languages": ["en", "zh"], "id_method": "fasttext",
                                  "fasttext_model_path": model_path}}],
    }


@pytest.fixture(scope="module")
def reference(corpus, fasttext_model):
    install_lid_extras()
    work, (source, target) = corpus
    return opusfilter_drops(work / "opus", source, target, configs(fasttext_model),
                            fasttext_numpy2=True)


@pytest.mark.parametrize("name", ["cld2", "cld2_options", "lingua_low", "lingua_high",
                                  "fasttext", "fasttext_chain"])
def test_id_method_keeps_what_opusfilter_keeps(corpus, fasttext_model, reference, name):
    _, (source, target) = corpus
    filters = configs(fasttext_model)[name]
    ours = our_drops(source, target, filters)
    assert sorted(ours) == reference[name]
    assert our_drops(source, target, filters, batched=True) == ours
    # the noise is found, and not everything is dropped
    assert 100 < len(ours) < 420, len(ours)
