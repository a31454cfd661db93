"""LanguageIDFilter's id_method cld2, lingua and fasttext: OpusFilter 3.3.1's parameter rules
(each method's own parameters refused with another), a missing package named with its pip
command, and the model loaded in setup, not when the file is checked. What they keep:
test_lid_methods_parity.py against OpusFilter itself."""

import importlib.util

import pytest

from transforms.cleaning import lid_methods
from transforms.cleaning.config import parse_cleaning_config
from transforms.cleaning.errors import CleaningConfigError


def parse(params):
    lines = ", ".join("%s: %s" % item for item in params.items())
    return parse_cleaning_config("filters:\n  - LanguageIDFilter: {languages: [en, zh], %s}\n"
                                 % lines, "f.yaml")


@pytest.mark.parametrize("params, message", [
    ({"id_method": "cld2", "lingua_mode": "low"}, "lingua_mode is only for id_method lingua"),
    ({"id_method": "cld2", "langid_languages": "[en, zh]"},
     "langid_languages is supported only by the langid and lingua methods"),
    ({"id_method": "lingua", "cld2_options": "{bestEffort: true}"},
     "cld2_options is only for id_method cld2"),
    ({"id_method": "lingua", "lingua_mode": "medium"}, "lingua_mode must be low or high"),
    ({"id_method": "lingua", "langid_languages": "[en, xx]"},
     "language xx not supported by lingua"),
    ({"id_method": "fasttext"}, "id_method fasttext needs fasttext_model_path"),
    ({"id_method": "cld2", "fasttext_model_path": "m.bin"},
     "fasttext_model_path is only for id_method fasttext"),
    ({"id_method": "langid", "lingua_mode": "low"}, "lingua_mode is only for another id_method"),
    ({"id_method": "cld3"}, "id_method must be one of langid, cld2, lingua, fasttext"),
])
def test_parameters_checked_as_opusfilter_does(params, message):
    with pytest.raises(CleaningConfigError) as e:
        parse(params)
    assert str(e.value).startswith("f.yaml: LanguageIDFilter: ") and message in str(e.value)


def test_a_missing_package_names_the_pip_command(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "pycld2" else real(name, *a))
    with pytest.raises(CleaningConfigError, match=r"id_method cld2 needs the pycld2 package: "
                                                  r"pip install pycld2"):
        parse({"id_method": "cld2"})


def test_models_load_in_setup_once(tmp_path):
    config = parse({"id_method": "lingua", "langid_languages": "[en, zh]"})
    built = config.build_filters()[0]
    assert built.identifier is None  # checked, not loaded
    built.setup()
    loaded = built.identifier
    built.setup()
    assert built.identifier is loaded
    assert built.accept_many([("A short English sentence here.", "这是一个中文句子。"),
                              ("这是一个中文句子。", "A short English sentence here.")]) == [
        True, False]


def test_cld2_scores_are_opusfilters_rounded_percent():
    cld2 = lid_methods.Cld2({})
    cld2.load()
    label, confidence = cld2.identify("This is plainly an English sentence about the weather.")
    assert label == "en" and confidence == round(confidence, 2) and 0.5 < confidence <= 1
