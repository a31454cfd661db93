"""transforms/cleaning: the filters' decisions on small cases, the config reader's checks and
the dedup key. (Parity with OpusFilter itself, on real files: test_filters_opusfilter_parity.py.)"""

import math

import pytest

from transforms.cleaning import filters
from transforms.cleaning.config import CleaningConfig, parse_cleaning_config
from transforms.cleaning.dedup import DedupOptions
from transforms.cleaning.errors import CleaningConfigError
from transforms.cleaning.html_tags import HtmlTagFilter, has_html_tag
from transforms.cleaning.langid import LangidFilter


@pytest.mark.parametrize("text, problem", [
    ("filters: [{Nope: {}}]", "c.yaml: unknown filter Nope"),
    ("filters: [{LengthFilter: {min_len: 2}}]", "c.yaml: LengthFilter: unknown parameter min_len"),
    ("filters: [{LengthFilter: {unit: words}}]", "unit must be one of word, char, character"),
    ("filters: [{LengthFilter: {max_length: [1, 2, 3]}}]", "one value or a list of two"),
    ("filters: [{LongWordFilter: {threshold: many}}]", "threshold must be int or float"),
    ("filters: [{LanguageIDFilter: {languages: [en, zh], id_method: cld3}}]",
     "id_method must be one of langid, cld2, lingua, fasttext"),
    ("filters: [{LangidFilter: {languages: [en, zh], langid_languages: [xx]}}]", "xx"),
    ("filters: [{CharacterScoreFilter: {scripts: [Latin, Klingon]}}]", "scripts:"),
    ("filters: [{RegExpFilter: {regexps: '('}}]", "regexps:"),
    ("filters: [{RepetitionFilter: {threshold: 0}}]", "threshold must be at least 1"),
    ("filters: [{LengthFilter: {}, module: x}]", "other modules"),
    ("filters: [{LengthFilter: {}, HtmlTagFilter: {}}]", "one filter per list item"),
    ("steps: []", "unknown key steps"),
    ("filters: [", "not YAML"),
    ("remove_duplicates: {hash: xx_64}", "remove_duplicates: unknown option hash"),
])
def test_config_errors_name_the_file_on_one_line(text, problem):
    with pytest.raises(CleaningConfigError) as e:
        parse_cleaning_config(text, "c.yaml", "pairs")
    assert problem in str(e.value) and str(e.value).startswith("c.yaml: ")
    assert "\n" not in str(e.value)


def test_config_reads_yaml_1_2_booleans_and_infinity():
    config = parse_cleaning_config(
        "filters:\n  - LangidFilter: {languages: [no, en]}\n  - HtmlTagFilter\n"
        "  - RepetitionFilter: {threshold: .inf}\nremove_duplicates: {lowercase: true}\n",
        "c.yaml", "source", drop_dev_overlap=True)
    assert config.filters == (("LangidFilter", {"languages": ["no", "en"]}),
                              ("HtmlTagFilter", {}), ("RepetitionFilter", {"threshold": math.inf}))
    assert config.dedup == DedupOptions(sides=(0,), lowercase=True)
    assert config.drop_dev_overlap and config.active
    assert not parse_cleaning_config(None, None).active
    assert parse_cleaning_config(None, None, "pairs").dedup == DedupOptions()


def test_defaults_are_opusfilters():
    length = filters.LengthFilter()
    assert (length.low, length.high, length.unit) == ((1, 1), (100, 100), ("word", "word"))
    assert filters.LengthRatioFilter().threshold == 3
    assert filters.LongWordFilter().threshold == (40, 40)
    assert filters.AlphabetRatioFilter().threshold == (0.75, 0.75)
    assert filters.TerminalPunctuationFilter().threshold == -2
    assert filters.NonZeroNumeralsFilter().threshold == 0.5
    assert filters.RepetitionFilter().threshold == 2
    assert filters.CharacterScoreFilter(scripts=["Latin", "Han"]).thresholds == (1, 1)


def test_filter_decisions():
    assert not filters.LengthFilter().accept("", "x")
    assert filters.LengthFilter(pass_empty=True).accept("", "")
    assert filters.LengthFilter(unit="char", max_length=3).accept("abc", "  x")
    assert not filters.LengthRatioFilter().accept("a", "")  # inf
    assert filters.LengthRatioFilter(threshold=0.5).accept("", "")  # both empty: ratio 0
    assert not filters.LongWordFilter(threshold=5).accept("short words", "muchlonger")
    assert filters.AverageWordLengthFilter(pass_empty=True).accept("", "")
    assert filters.RegExpFilter(regexps=r"\d").accept("abc", "def")
    assert not filters.RegExpFilter(regexps=[r"\p{Han}", r"\p{Han}"], accept_match=True).accept(
        "abc", "中文")
    assert filters.AlphabetRatioFilter().accept("", "")
    assert not filters.AlphabetRatioFilter().accept("12345 abc", "abc")
    assert filters.CharacterScoreFilter(scripts=["Latin", "Han"]).accept("abc 1", "中文 ok"[:2])
    assert not filters.TerminalPunctuationFilter().accept("A. B. C. D. E. F. G.", "无")
    assert filters.NonZeroNumeralsFilter().accept("in 2019", "在2019年")
    assert not filters.NonZeroNumeralsFilter().accept("in 2019", "在1786年")
    assert not filters.RepetitionFilter().accept("ha ha ha ha", "x")
    assert filters.RepetitionFilter(threshold=math.inf).accept("ha ha ha ha", "x")
    assert filters.LengthFilter(name="short").reason == "short"


@pytest.mark.parametrize("text, found", [
    ("plain text", False), ("a < b and c > d", False), ("<b>bold</b>", True),
    ("line<br/>", True), ("<p class='x'>text", True), ("&amp; &lt;", False),
    ("<!-- comment -->", False), ("x <3 y", False), ("</p>", False),
])
def test_html_tags(text, found):
    assert has_html_tag(text) is found
    assert HtmlTagFilter().accept(text, "x") is not found


def test_langid_filter_rounds_and_labels():
    f = LangidFilter(languages=["en", "zh"])
    assert f.accept("This is an English sentence about the weather.",
                    "这是一个关于天气的中文句子。")
    assert not f.accept("Das ist ein deutscher Satz über das Wetter.", "这是一个中文句子。")
    assert f.confidence("", "en") == 1.0


def test_dedup_key_normalization():
    pairs = DedupOptions()
    assert pairs.key(("a\n", "b\n")) == pairs.key(("a\n", "b\n"))
    assert pairs.key(("a\n", "b\n")) != pairs.key(("a \n", "b\n"))
    assert pairs.key(("a\n", "b\n")) != pairs.key(("a", "b\n"))  # last line, no newline
    source = DedupOptions(sides=(0,))
    assert source.key(("a\n", "b\n")) == source.key(("a\n", "c\n"))
    loose = DedupOptions(lowercase=True, letters_only=True)
    assert loose.key(("Hello, World!\n", "x\n")) == loose.key(("helloworld\n", "X\n"))
    words = DedupOptions(letter_words_only=True)
    assert words.normalize("a b2 c\n") == "a c"


def test_cleaning_config_pickles_and_builds():
    import pickle
    config = parse_cleaning_config("filters: [{LengthFilter: {}}]", "c.yaml", "pairs")
    again = pickle.loads(pickle.dumps(config))
    assert again == config and isinstance(again.build_filters()[0], filters.LengthFilter)
    assert CleaningConfig().active is False
