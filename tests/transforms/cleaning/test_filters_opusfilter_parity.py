"""The cleaning stage against OpusFilter 3.3.1 itself: the same lines dropped, by line number.

OpusFilter runs from its own cached virtualenv (tests/opusfilter_reference.py) on the real
files; our side reads the same files as the job does (`transforms.clean.clean_pairs`). Corpora:
tests/data/noisy-enzh (the bundled en-zh sample with web-crawl noise mixed in, see its
make_noisy.py) for every filter, the combined config and de-duplication across two train
files and a dev set; tests/data/ende-opennmt (en-de, not used to tune anything) for the
combined config.
"""

import json
import os

import pytest

from opusfilter_reference import FILTER_CHAIN, opusfilter_drops, opusfilter_python
from cleaning_helpers import our_drops
from repo_paths import DATA_DIR as DATA

pytestmark = pytest.mark.slow

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
COMBINED = FILTER_CHAIN + [{"RepetitionFilter": {}}]


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
    batched = our_drops(os.path.join(NOISY, "train-a.en"), os.path.join(NOISY, "train-a.zh"),
                        filters, batched=True)
    assert batched == ours
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
    # the batched labels (a matrix product per batch, close calls classified one by one)
    assert ours._batch.labels(lines) == [label for label, _ in mine]


def _concatenated(tmp_path, names):
    """The train files joined (each ends with a newline), as one OpusFilter input pair."""
    paths = []
    for ext in ("en", "zh"):
        path = tmp_path / ("train." + ext)
        path.write_bytes(b"".join(open(os.path.join(NOISY, "%s.%s" % (n, ext)), "rb").read()
                                  for n in names))
        paths.append(str(path))
    return paths


def _split_numbers(numbers, first_lines):
    """Line numbers of the joined file -> {dataset index: line numbers in its own file}."""
    out = {}
    for n in numbers:
        index = sum(1 for size in first_lines[1:] if n > size)
        out.setdefault(index, set()).add(n - first_lines[index])
    return out


DEDUPS = {"dedup": {}, "dedup_source_lower": {"compare": [0], "lowercase": True}}


@pytest.mark.parametrize("dedup_name", sorted(DEDUPS))
def test_stage_drops_what_opusfilter_drops_across_files_and_dev(tmp_path, dedup_name):
    """Two train files and a dev set, the combined filters, de-duplication (both sides, or
    the source lowercased) and dropping dev pairs from train: the cleaning stage against
    OpusFilter's remove_duplicates (with and without `overlap`) and filter steps, run on the
    joined train files and on dev."""
    from cleaning_helpers import run_clean_pairs
    from transforms.cleaning.config import CleaningConfig
    from transforms.cleaning.dedup import DedupOptions
    params = DEDUPS[dedup_name]
    train = _concatenated(tmp_path, ["train-a", "train-b"])
    dev = [os.path.join(NOISY, "dev.en"), os.path.join(NOISY, "dev.zh")]
    theirs = opusfilter_drops(tmp_path / "opus-train", *train, {"combined": COMBINED},
                              {"dedup": params}, overlap=dev)
    theirs_dev = opusfilter_drops(tmp_path / "opus-dev", *dev, {"combined": COMBINED},
                                  {"dedup": params})
    options = DedupOptions(sides=tuple(params.get("compare", [0, 1])),
                           lowercase=params.get("lowercase", False))
    cleaning = CleaningConfig(tuple((n, p) for f in COMBINED for n, p in f.items()), options,
                              drop_dev_overlap=True)
    files = [("train", os.path.join(NOISY, n + ".en"), os.path.join(NOISY, n + ".zh"))
             for n in ("train-a", "train-b")] + [("dev",) + tuple(dev)]
    drops, reports = run_clean_pairs(tmp_path / "work", files, cleaning, chunk_lines=128)
    first_lines = [0, 700]
    by_reason = {}
    for (split, index), records in drops.items():
        for number, record in records.items():
            by_reason.setdefault((split, record["reason"]), set()).add(
                number + (first_lines[index] if split == "train" else 0))
    overlap = set(theirs["overlap"])
    duplicates = set(theirs["dedup"]) - overlap
    filtered = set(theirs["combined"]) - overlap - duplicates
    assert by_reason.pop(("train", "dev_overlap")) == overlap and overlap
    assert by_reason.pop(("train", "duplicate")) == duplicates and duplicates
    assert by_reason.pop(("dev", "duplicate"), set()) == set(theirs_dev["dedup"])
    dev_filtered = set(theirs_dev["combined"]) - set(theirs_dev["dedup"])
    for split, expected in (("train", filtered), ("dev", dev_filtered)):
        ours = set().union(*(v for (s, _), v in by_reason.items() if s == split))
        assert ours == expected
    assert sum(r["dropped"] for r in reports.values()) == sum(len(r) for r in drops.values())


UNTUNED = [
    {"LengthFilter": {"unit": "word", "min_length": 1, "max_length": 60}},
    {"LengthRatioFilter": {"unit": "word", "threshold": 2}},
    {"LangidFilter": {"languages": ["en", "de"]}},
    {"AlphabetRatioFilter": {"threshold": 0.7}},
    {"TerminalPunctuationFilter": {}},
    {"NonZeroNumeralsFilter": {}},
    {"RepetitionFilter": {}},
]


def test_stage_on_a_corpus_not_tuned_on(tmp_path):
    """en-de OpenNMT (Moses-tokenized, `&apos;` escapes): a typical config and dedup."""
    from cleaning_helpers import run_clean_pairs
    from transforms.cleaning.config import CleaningConfig
    from transforms.cleaning.dedup import DedupOptions
    src, tgt = (os.path.join(DATA, "ende-opennmt", "train." + ext) for ext in ("en", "de"))
    theirs = opusfilter_drops(tmp_path / "opus", src, tgt, {"typical": UNTUNED}, {"dedup": {}})
    cleaning = CleaningConfig(tuple((n, p) for f in UNTUNED for n, p in f.items()),
                              DedupOptions())
    drops, _ = run_clean_pairs(tmp_path / "work", [("train", src, tgt)], cleaning,
                               chunk_lines=500)
    ours = drops[("train", 0)]
    assert {n for n, r in ours.items() if r["reason"] == "duplicate"} == set(theirs["dedup"])
    assert set(ours) == set(theirs["dedup"]) | set(theirs["typical"])
    assert 100 < len(ours) < 2900


HTML_CASES = ["plain", "a < b", "a<b", "<b>x</b>", "</p>", "<br/>", "<br>", "x <3 y", "<<>>",
              "<!DOCTYPE html>", "<![CDATA[x]]>", "<?xml version='1.0'?>", "<!-- c -->",
              "<!-->", "&#99999999999;", "&amp;", "<a href='x", "<a<b>", "<a href=x>y",
              "<script>if (a<b) {}</script>", "<p/ >", "<1>", "< p>", "<p", "<p >", "<x:y>",
              "<!x>", "<?", "</", "<![if !IE]>", "<a\tb=c>", "&#x110000;", "<ó>", "<中>"]


def test_html_tags_on_tricky_markup_equal_opusfilters():
    """HtmlTagFilter (standard-library parser) against OpusFilter's (BeautifulSoup's
    html.parser builder) on markup at the parser's edges."""
    import subprocess
    from transforms.cleaning.html_tags import has_html_tag
    script = ("import json, sys, logging\nlogging.disable(logging.WARNING)\n"
              "from opusfilter.filters import HtmlTagFilter\n"
              "print(json.dumps([HtmlTagFilter.check(t) for t in json.loads(sys.argv[1])]))\n")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    theirs = json.loads(subprocess.run([opusfilter_python(), "-c", script,
                                        json.dumps(HTML_CASES)], check=True, env=env,
                                       capture_output=True, text=True).stdout)
    assert [has_html_tag(t) for t in HTML_CASES] == theirs
