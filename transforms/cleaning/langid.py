"""Language identification filters on py3langid: `LangidFilter` and `LanguageIDFilter`.

OpusFilter 3.3.1 classifies each side with py3langid's `LanguageIdentifier` built from the
model that ships in the py3langid wheel with normalized probabilities, rounds the probability
to two decimals, takes 0 when the label is not the side's language (and 1 for an empty side),
and passes the pair when every side's value is above its threshold (default 0). It runs only
with py3langid < 0.4 (0.4 removed `from_pickled_model` and ships another model), so the
project depends on the same 0.3 line: the labels are then the same by construction, which
`tests/transforms/cleaning/test_opusfilter_parity.py` checks against OpusFilter itself.

`LanguageIDFilter` is OpusFilter's older name; only its default `id_method: langid` is
offered (cld2, fasttext and lingua need models or packages this job does not ship). The model
is loaded in `setup`, once per worker, not when the configuration is read.
"""

from typing import Any, Dict, Optional, Tuple

from transforms.cleaning.errors import CleaningConfigError
from transforms.cleaning.filters import PairFilter, check_type

CACHE_LINES = 1 << 17  # lines whose (label, rounded probability) a filter keeps


class LangidFilter(PairFilter):
    """Each side identified as its language (`languages`: one code per side) with a rounded
    confidence above `thresholds` (default 0 per side); `langid_languages` limits the
    candidate labels."""

    PARAMS: Dict[str, Any] = {"languages": None, "thresholds": None, "langid_languages": None}

    def configure(self, **params: Any) -> None:
        n = type(self).__name__
        languages, thresholds = params["languages"], params["thresholds"]
        langid_languages = params["langid_languages"]
        if languages is None:
            raise CleaningConfigError("%s: languages (one code per side) must be given" % n)
        if not isinstance(languages, list) or len(languages) != 2 or not all(
                isinstance(code, str) for code in languages):
            raise CleaningConfigError("%s: languages must be a list of two language codes, "
                                      "not %r" % (n, languages))
        thresholds = [0, 0] if thresholds is None else thresholds
        if not isinstance(thresholds, list) or len(thresholds) != 2:
            raise CleaningConfigError("%s: thresholds must be a list of two numbers, not %r"
                                      % (n, thresholds))
        self.languages = tuple(languages)
        self.thresholds = tuple(check_type(n, "thresholds", t, (int, float)) for t in thresholds)
        if langid_languages is not None and not (
                isinstance(langid_languages, list)
                and all(isinstance(code, str) for code in langid_languages)):
            raise CleaningConfigError("%s: langid_languages must be a list of language codes, "
                                      "not %r" % (n, langid_languages))
        self.langid_languages = langid_languages
        self.identifier: Optional[Any] = None  # py3langid's LanguageIdentifier, in setup
        self._labels: Dict[str, Tuple[str, float]] = {}

    def setup(self) -> None:
        if self.identifier is not None:
            return
        from py3langid.langid import MODEL_FILE, LanguageIdentifier
        from threadpoolctl import threadpool_limits
        threadpool_limits(1, user_api="blas")
        identifier = LanguageIdentifier.from_pickled_model(MODEL_FILE, norm_probs=True)
        if self.langid_languages:
            try:
                identifier.set_languages(self.langid_languages)
            except ValueError as e:
                raise CleaningConfigError("%s: langid_languages: %s"
                                          % (type(self).__name__, e)) from None
        self.identifier = identifier

    def confidence(self, text: str, language: str) -> float:
        if not text:
            return 1.0
        known = self._labels.get(text)
        if known is None:
            assert self.identifier is not None, "setup() loads the model"
            label, probability = self.identifier.classify(text)
            if len(self._labels) >= CACHE_LINES:
                self._labels.clear()
            known = self._labels[text] = (label, round(float(probability), 2))
        return known[1] if known[0] == language else 0.0

    def accept(self, source: str, target: str) -> bool:
        self.setup()
        return (self.confidence(source, self.languages[0]) > self.thresholds[0]
                and self.confidence(target, self.languages[1]) > self.thresholds[1])


class LanguageIDFilter(LangidFilter):
    """OpusFilter's older language filter with `id_method: langid`, deciding as LangidFilter."""

    PARAMS = dict(LangidFilter.PARAMS, id_method="langid", fasttext_model_path=None,
                  cld2_options=None, lingua_mode=None)

    def configure(self, **params: Any) -> None:
        n = type(self).__name__
        id_method = params.pop("id_method")
        fasttext_model_path, cld2_options, lingua_mode = (
            params.pop(name) for name in ("fasttext_model_path", "cld2_options", "lingua_mode"))
        if id_method != "langid":
            raise CleaningConfigError("%s: only id_method: langid is offered, not %r"
                                      % (n, id_method))
        for param, value in (("fasttext_model_path", fasttext_model_path),
                             ("cld2_options", cld2_options), ("lingua_mode", lingua_mode)):
            if value:
                raise CleaningConfigError("%s: %s is only for another id_method" % (n, param))
        super().configure(**params)
