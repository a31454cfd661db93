"""The cleaning stage against OpusFilter 3.3.1 itself: the same lines dropped, by line number.

OpusFilter runs from its own cached virtualenv (tests/opusfilter_reference.py) on the real
files; our side reads the same files as the job does (`transforms.clean_pairs`). Corpora:
tests/data/noisy-enzh (the bundled en-zh sample with web-crawl noise mixed in, see its
make_noisy.py) for every filter, the combined config and de-duplication across two train
files and a dev set; tests/data/ende-opennmt (en-de, not used to tune anything) for the
combined config.
"""

import json
import os

import pytest

from opusfilter_reference import opusfilter_drops, opusfilter_python

pytestmark = pytest.mark.slow

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
NOISY = os.path.join(DATA, "noisy-enzh")

# One config per filter (parameters fitting en-zh), as an OpusFilter `filters:` list.
SINGLE = {
    "length": [{"LengthFilter": {"unit": ["word", "char"], "min_length": 1,
                                 "max_length": [50, 90]}}],
    "length_default": [{"LengthFilter": {}}],
    "ratio": [{"LengthRatioFilter": {"unit": ["word", "char"], "threshold": 4}}],
    "long_word": [{"LongWordFilter": {"threshold": 30}}],
    "average_word": [{"AverageWordLengthFilter": {"min_length": [3, 1],
                                                  "max_length": [8, 200]}}],
    "alphabet": [{"AlphabetRatioFilter": {"threshold": [0.8, 0.6],
                                          "exclude_whitespace": True}}],
    "alphabet_ws": [{"AlphabetRatioFilter": {}}],
    "script": [{"CharacterScoreFilter": {"scripts": ["Latin", "Han"],
                                         "thresholds": [0.95, 0.85]}}],
    "html": [{"HtmlTagFilter": {}}],
    "regexp": [{"RegExpFilter": {"regexps": [r"https?://", r"\d{4,}"]}}],
    "regexp_match": [{"RegExpFilter": {"regexps": [r"\p{Latin}", r"\p{Han}"],
                                       "accept_match": True}}],
    "terminal": [{"TerminalPunctuationFilter": {}}],
    "numerals": [{"NonZeroNumeralsFilter": {}}],
    "repetition": [{"RepetitionFilter": {}}],
    "repetition_1": [{"RepetitionFilter": {"threshold": 1, "min_length": 2}}],
    "langid": [{"LangidFilter": {"languages": ["en", "zh"]}}],
    "langid_limited": [{"LangidFilter": {"languages": ["en", "zh"], "thresholds": [0.9, 0.9],
                                         "langid_languages": ["en", "zh", "de", "fr"]}}],
    "languageid": [{"LanguageIDFilter": {"languages": ["en", "zh"], "id_method": "langid",
                                         "thresholds": [0.5, 0.5]}}],
}
COMBINED = [
    {"LengthFilter": {"unit": ["word", "char"], "min_length": 1, "max_length": [50, 90]}},
    {"LengthRatioFilter": {"unit": ["word", "char"], "threshold": 4}},
    {"LangidFilter": {"languages": ["en", "zh"]}},
    {"HtmlTagFilter": {}},
    {"NonZeroNumeralsFilter": {}},
    {"RepetitionFilter": {}},
]


def our_drops(source, target, filters):
    """{line number: reason} of the pair as the cleaning stage's DoFn decides it, without
    de-duplication (the filters alone, lines read as the job reads them)."""
    from transforms.cleaning.config import CleaningConfig
    from transforms.formats.text_lines import decode_line, iter_raw_lines
    config = CleaningConfig(tuple((name, params) for f in filters for name, params in f.items()))
    built = config.build_filters()
    drops = {}
    with open(source, "rb") as s, open(target, "rb") as t:
        for number, (raw_s, raw_t) in enumerate(zip(iter_raw_lines(s), iter_raw_lines(t)), 1):
            src = decode_line(raw_s, source, number).rstrip()
            tgt = decode_line(raw_t, target, number).rstrip()
            for f in built:
                if not f.accept(src, tgt):
                    drops[number] = f.reason
                    break
    return drops


@pytest.fixture(scope="module")
def noisy_reference(tmp_path_factory):
    """OpusFilter's drops on train-a of the noisy corpus, one step per config."""
    steps = dict(SINGLE, combined=COMBINED)
    return opusfilter_drops(tmp_path_factory.mktemp("opus"), os.path.join(NOISY, "train-a.en"),
                            os.path.join(NOISY, "train-a.zh"), steps)


@pytest.mark.parametrize("name", sorted(SINGLE) + ["combined"])
def test_filter_drops_the_lines_opusfilter_drops(noisy_reference, name):
    filters = COMBINED if name == "combined" else SINGLE[name]
    ours = our_drops(os.path.join(NOISY, "train-a.en"), os.path.join(NOISY, "train-a.zh"),
                     filters)
    assert sorted(ours) == noisy_reference[name]
    assert 0 < len(ours) < 700 or name in ("repetition_1",), "the filter drops nothing or all"


def test_langid_labels_equal_opusfilters(tmp_path):
    """py3langid as this project depends on it labels every line of the noisy corpus (and
    German lines) with the same language and probability as OpusFilter's py3langid."""
    lines = []
    for name in ("train-a.en", "train-a.zh", "dev.en", "dev.zh"):
        with open(os.path.join(NOISY, name), encoding="utf-8") as f:
            lines.extend(line.rstrip() for line in f)
    path = tmp_path / "lines.json"
    path.write_text(json.dumps(lines))
    script = ("import json, sys\n"
              "from py3langid.langid import LanguageIdentifier, MODEL_FILE\n"
              "i = LanguageIdentifier.from_pickled_model(MODEL_FILE, norm_probs=True)\n"
              "print(json.dumps([[l, round(float(p), 2)] for l, p in "
              "(i.classify(t) for t in json.load(open(sys.argv[1])))]))\n")
    import subprocess
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)
    theirs = json.loads(subprocess.run([opusfilter_python(), "-c", script, str(path)],
                                       check=True, capture_output=True, text=True,
                                       env=env).stdout)
    from transforms.cleaning.langid import LangidFilter
    ours = LangidFilter(languages=["en", "zh"])
    ours.setup()
    mine = [[label, round(float(p), 2)] for label, p in map(ours.identifier.classify, lines)]
    assert mine == theirs
    assert {label for label, _ in mine} >= {"en", "zh", "de"}
