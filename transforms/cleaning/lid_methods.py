"""`LanguageIDFilter`'s other identifiers: `id_method: cld2 | lingua | fasttext`.

Each is OpusFilter 3.3.1's method with its parameters and its confidence, so a YAML written
for OpusFilter keeps the same pairs (`tests/transforms/cleaning/test_lid_methods_parity.py`
runs OpusFilter itself):

- cld2: `pycld2.detect(text, **cld2_options)`, the best language and its percent / 100
  rounded to two decimals; a text pycld2 refuses (`pycld2.error`) is `un` at 0.
- lingua: the first of `compute_language_confidence_values(text)`, its ISO 639-1 code and
  its value unrounded; `lingua_mode` low (default: low accuracy mode) or high (preloaded
  models); `langid_languages` the candidate languages (default: all of lingua's).
- fasttext: `predict(text, k=1)` of the model at `fasttext_model_path`, its label without
  `__label__` and its probability unrounded. The model is the user's file: nothing is
  downloaded. A bucket path is copied to a local file by the Beam stage before `load`.

As in OpusFilter an empty side is 1.0 and another language's label 0.0. The packages are
install requirements; one missing from a broken install is a CleaningConfigError naming
the pip command, when the configuration is read. The identifier
(its model) is built in `load`, once per worker (`PairFilter.setup`), never when the file is
checked. Written from OpusFilter's documented semantics and read source; no code copied.
"""

import importlib.util
from typing import Any, Dict, List, Optional, Sequence, Tuple

from transforms.cleaning.errors import CleaningConfigError

# id_method -> (module imported, the extra that installs it)
PACKAGES = {"cld2": ("pycld2", "pycld2"), "lingua": ("lingua", "lingua-language-detector"),
            "fasttext": ("fasttext", "fasttext")}
LINGUA_MODES = ("low", "high")


def require(filter_name: str, id_method: str) -> None:
    """CleaningConfigError naming the pip command when `id_method`'s package is missing."""
    module, distribution = PACKAGES[id_method]
    if importlib.util.find_spec(module) is None:
        raise CleaningConfigError(
            "%s: id_method %s needs the %s package: pip install %s"
            % (filter_name, id_method, module, distribution))


class Identifier:
    """One method's (label, confidence) of a text; `load` builds the model."""

    def load(self) -> None:
        raise NotImplementedError

    def identify(self, text: str) -> Tuple[str, float]:
        raise NotImplementedError

    def identify_many(self, texts: Sequence[str]) -> List[Tuple[str, float]]:
        return [self.identify(text) for text in texts]


class Cld2(Identifier):
    def __init__(self, options: Dict[str, Any]) -> None:
        self.options = options
        self._cld2: Any = None

    def load(self) -> None:
        import pycld2
        self._cld2 = pycld2

    def identify(self, text: str) -> Tuple[str, float]:
        try:
            details = self._cld2.detect(text, **self.options)
        except self._cld2.error:
            return "un", 0.0
        best = details[2][0]
        return best[1], round(best[2] / 100, 2)


class Lingua(Identifier):
    def __init__(self, mode: str, languages: Optional[List[str]]) -> None:
        self.mode = mode
        self.languages = languages
        self._detector: Any = None

    def check(self, filter_name: str) -> None:
        """The candidate languages are lingua's (OpusFilter's check, when it is built)."""
        from lingua import IsoCode639_1
        for code in self.languages or ():
            if not hasattr(IsoCode639_1, code.upper()):
                raise CleaningConfigError("%s: language %s not supported by lingua"
                                          % (filter_name, code))

    def load(self) -> None:
        from lingua import IsoCode639_1, LanguageDetectorBuilder
        if self.languages:
            builder = LanguageDetectorBuilder.from_iso_codes_639_1(
                *[getattr(IsoCode639_1, code.upper()) for code in self.languages])
        else:
            builder = LanguageDetectorBuilder.from_all_languages()
        builder = (builder.with_preloaded_language_models() if self.mode == "high"
                   else builder.with_low_accuracy_mode())
        self._detector = builder.build()

    def identify(self, text: str) -> Tuple[str, float]:
        best = self._detector.compute_language_confidence_values(text)[0]
        return best.language.iso_code_639_1.name.lower(), best.value


class FastText(Identifier):
    def __init__(self, model_path: str) -> None:
        self.model_path = model_path  # replaced by a local copy for a bucket path
        self._model: Any = None

    def load(self) -> None:
        import fasttext
        try:
            self._model = fasttext.load_model(self.model_path)
        except ValueError as e:  # fasttext's word for a missing or broken file
            raise CleaningConfigError("LanguageIDFilter: fasttext_model_path %s: %s"
                                      % (self.model_path, e)) from None

    def identify(self, text: str) -> Tuple[str, float]:
        return self.identify_many([text])[0]

    def identify_many(self, texts: Sequence[str]) -> List[Tuple[str, float]]:
        """One `predict` of the list: the same numbers as line by line, without the per-call
        overhead (and fasttext 0.9.3's one-line `predict` fails on NumPy 2; its list form
        does not)."""
        labels, probabilities = self._model.predict(list(texts), k=1)
        return [(label[0][len("__label__"):], p[0]) for label, p in zip(labels, probabilities)]


def identifier(filter_name: str, id_method: str, params: Dict[str, Any]) -> Identifier:
    """The checked Identifier of `id_method` (not cld2/lingua/fasttext: langid's own filter)
    from LanguageIDFilter's `params`, OpusFilter's combination rules applied."""
    if params.get("langid_languages") and id_method != "lingua":
        raise CleaningConfigError("%s: langid_languages is supported only by the langid and "
                                  "lingua methods" % filter_name)
    for param, method in (("fasttext_model_path", "fasttext"), ("cld2_options", "cld2"),
                          ("lingua_mode", "lingua")):
        if params.get(param) and id_method != method:
            raise CleaningConfigError("%s: %s is only for id_method %s" % (filter_name, param,
                                                                           method))
    require(filter_name, id_method)
    if id_method == "cld2":
        options = params.get("cld2_options") or {}
        if not isinstance(options, dict):
            raise CleaningConfigError("%s: cld2_options must be a mapping, not %r"
                                      % (filter_name, options))
        return Cld2(options)
    if id_method == "lingua":
        mode = params.get("lingua_mode") or "low"
        if mode not in LINGUA_MODES:
            raise CleaningConfigError("%s: lingua_mode must be low or high, not %r"
                                      % (filter_name, mode))
        lingua = Lingua(mode, params.get("langid_languages"))
        lingua.check(filter_name)
        return lingua
    path = params.get("fasttext_model_path")
    if not path or not isinstance(path, str):
        raise CleaningConfigError("%s: id_method fasttext needs fasttext_model_path (the "
                                  "model file; nothing is downloaded)" % filter_name)
    return FastText(path)
