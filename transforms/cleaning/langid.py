"""Language identification filters on py3langid: `LangidFilter` and `LanguageIDFilter`.

OpusFilter 3.3.1 classifies each side with py3langid's `LanguageIdentifier` built from the
model that ships in the py3langid wheel with normalized probabilities, rounds the probability
to two decimals, takes 0 when the label is not the side's language (and 1 for an empty side),
and passes the pair when every side's value is above its threshold (default 0). It runs only
with py3langid < 0.4 (0.4 removed `from_pickled_model` and ships another model), so the
project depends on the same 0.3 line: the labels are then the same by construction, which
`tests/transforms/cleaning/test_filters_opusfilter_parity.py` checks against OpusFilter itself.

Batches (`accept_many`, what the cleaning stage calls): py3langid spends most of a line in
`np.dot` of the line's feature counts with the 7480 x 97 model matrix, one matrix read per
line. A batch of lines is one matrix product instead (`BatchLabels`), about 10x cheaper a
line, but it sums in another order than `np.dot`, so its log-probabilities can differ from
py3langid's by rounding. A line's label is taken from the batch only when the gap between its
two best classes is wider than twice the bound on that rounding (`rounding_bound`); any
other line, and any line whose rounded probability matters (a threshold at or above the
rounded 1/K of K candidate languages, 0.01 for the 97 of the model: the best class's
probability is never below 1/K), is classified by py3langid's own `classify`, so the
decisions are OpusFilter's exactly.

`LanguageIDFilter` is OpusFilter's older name, with its `id_method`: langid (default) as
here, cld2, lingua and fasttext from `lid_methods` (optional packages). The model is loaded
in `setup`, once per worker, not when the configuration is read.
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

from transforms.cleaning import lid_methods
from transforms.cleaning.errors import CleaningConfigError
from transforms.cleaning.filters import PairFilter, check_type

CACHE_LINES = 1 << 17  # lines whose (label, rounded probability) a filter keeps
BATCH_LINES = 256  # lines per matrix product (a 7.6 MB float32 batch of feature counts)
UNIT_ROUNDOFF = 2.0 ** -24  # float32, the model matrix's type


def rounding_bound(counts: Any, nonzero: Any, matrix_max: float, prior_max: float) -> Any:
    """Per line, a bound on how far one summation order of its log-probabilities
    (counts @ matrix + prior, float32 products summed) can be from another: each of the
    `nonzero` products and additions rounds by at most UNIT_ROUNDOFF of the largest partial
    sum, which is at most counts.sum() * matrix_max + prior_max. Twice the worst case of one
    order, doubled for the two classes compared, with a margin: comparing two lines' best
    classes is safe when their gap exceeds this."""
    largest = counts.sum(axis=1) * matrix_max + prior_max
    return 8.0 * (nonzero + 2) * UNIT_ROUNDOFF * largest + 0.01


class BatchLabels:
    """py3langid's labels of many lines at once, each equal to `identifier.classify`'s (see
    the module docstring): `labels(texts)` -> [label]."""

    def __init__(self, identifier: Any) -> None:
        import numpy as np
        self._np = np
        self._identifier = identifier
        self._matrix = np.ascontiguousarray(identifier.nb_ptc, dtype=np.float32)
        self._prior = identifier.nb_pc
        self._matrix_max = float(np.abs(self._matrix).max())
        self._prior_max = float(np.abs(self._prior).max())
        self.exact_lines = 0  # lines classified one at a time (too close to call)

    def labels(self, texts: Sequence[str]) -> List[str]:
        np = self._np
        identifier = self._identifier
        out: List[str] = []
        for start in range(0, len(texts), BATCH_LINES):
            batch = texts[start:start + BATCH_LINES]
            counts = np.zeros((len(batch), self._matrix.shape[0]), dtype=np.float32)
            for row, text in enumerate(batch):
                counts[row] = identifier.instance2fv(text)
            scores = counts @ self._matrix + self._prior
            best = scores.argmax(axis=1)
            two = np.partition(scores, -2, axis=1)[:, -2:]
            gap = two[:, 1] - two[:, 0]
            sure = gap > rounding_bound(counts, np.count_nonzero(counts, axis=1),
                                        self._matrix_max, self._prior_max)
            classes = identifier.nb_classes
            for row, text in enumerate(batch):
                if sure[row]:
                    out.append(classes[best[row]])
                else:
                    self.exact_lines += 1
                    out.append(identifier.classify(text)[0])
        return out


class LangidFilter(PairFilter):
    """Each side identified as its language (`languages`: one code per side) with a rounded
    confidence above `thresholds` (default 0 per side); `langid_languages` limits the
    candidate labels. Without `languages`, each dataset's pair gives them (its corpus's
    `source_lang`/`target_lang`, or `--source_lang`/`--target_lang`): one filter for a job of
    many language pairs."""

    COSTLY = True

    PARAMS: Dict[str, Any] = {"languages": None, "thresholds": None, "langid_languages": None}

    def configure(self, **params: Any) -> None:
        n = type(self).__name__
        languages, thresholds = params["languages"], params["thresholds"]
        langid_languages = params["langid_languages"]
        if languages is not None and (not isinstance(languages, list) or len(languages) != 2
                                      or not all(isinstance(code, str) for code in languages)):
            raise CleaningConfigError("%s: languages must be a list of two language codes, "
                                      "not %r" % (n, languages))
        thresholds = [0, 0] if thresholds is None else thresholds
        if not isinstance(thresholds, list) or len(thresholds) != 2:
            raise CleaningConfigError("%s: thresholds must be a list of two numbers, not %r"
                                      % (n, thresholds))
        self.languages = tuple(languages) if languages is not None else None
        self.thresholds = tuple(check_type(n, "thresholds", t, (int, float)) for t in thresholds)
        if langid_languages is not None and not (
                isinstance(langid_languages, list)
                and all(isinstance(code, str) for code in langid_languages)):
            raise CleaningConfigError("%s: langid_languages must be a list of language codes, "
                                      "not %r" % (n, langid_languages))
        self.langid_languages = langid_languages
        self.identifier: Optional[Any] = None  # py3langid's LanguageIdentifier, in setup
        self._batch: Optional[BatchLabels] = None  # labels of many lines, in setup
        self._labels: Dict[str, Tuple[str, float]] = {}  # text -> (label, rounded prob.)
        self._batch_labels: Dict[str, str] = {}  # text -> label, from batches

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
        self._batch = BatchLabels(identifier)
        # below this threshold the best class's rounded probability always passes
        self._rounded_floor = round(1.0 / len(identifier.nb_classes), 2)

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

    def needs_languages(self) -> bool:
        return self.languages is None

    def _languages(self, languages: Optional[Tuple[str, str]]) -> Tuple[str, str]:
        chosen = self.languages or languages
        if not chosen or not all(chosen):
            raise ValueError("%s: no languages: give languages: [SRC, TGT], or the "
                             "dataset's (--source_lang/--target_lang, a corpus's)"
                             % type(self).__name__)
        return chosen[0], chosen[1]

    def accept(self, source: str, target: str,
               languages: Optional[Tuple[str, str]] = None) -> bool:
        self.setup()
        chosen = self._languages(languages)
        return (self.confidence(source, chosen[0]) > self.thresholds[0]
                and self.confidence(target, chosen[1]) > self.thresholds[1])

    def _labels_of(self, texts: List[str]) -> List[str]:
        """The labels of `texts` (non-empty), each line classified once per cache fill."""
        known = self._batch_labels
        distinct = list(dict.fromkeys(texts))
        new = [text for text in distinct if text not in known]
        if new:
            assert self._batch is not None, "setup() loads the model"
            if len(known) + len(new) > CACHE_LINES:
                known.clear()  # then every line of this call is new
                new = distinct
            known.update(zip(new, self._batch.labels(new)))
        return [known[text] for text in texts]

    def accept_many(self, pairs: Sequence[Tuple[str, str]],
                    languages: Optional[Tuple[str, str]] = None) -> List[bool]:
        """`accept` of each pair, the lines classified in batches: the source sides first,
        then the target sides of the pairs whose source passed."""
        self.setup()
        chosen = self._languages(languages)
        verdicts = [True] * len(pairs)
        for side in (0, 1):
            language, threshold = chosen[side], self.thresholds[side]
            rows = [i for i, ok in enumerate(verdicts) if ok and pairs[i][side]]
            for i in (i for i, ok in enumerate(verdicts) if ok and not pairs[i][side]):
                verdicts[i] = 1.0 > threshold  # an empty side's confidence
            labels = self._labels_of([pairs[i][side] for i in rows])
            for i, label in zip(rows, labels):
                if label != language:
                    verdicts[i] = 0.0 > threshold
                elif threshold >= self._rounded_floor:  # the rounded probability decides
                    verdicts[i] = self.confidence(pairs[i][side], language) > threshold
        return verdicts


class LanguageIDFilter(LangidFilter):
    """OpusFilter's older language filter. `id_method: langid` (default) decides as
    LangidFilter; cld2, lingua and fasttext with their own parameters and confidences
    (`transforms.cleaning.lid_methods`), each side's confidence above its threshold."""

    PARAMS = dict(LangidFilter.PARAMS, id_method="langid", fasttext_model_path=None,
                  cld2_options=None, lingua_mode=None)

    def configure(self, **params: Any) -> None:
        n = type(self).__name__
        self.id_method = params.pop("id_method")
        own = {name: params.pop(name)
               for name in ("fasttext_model_path", "cld2_options", "lingua_mode")}
        self.method: Optional[lid_methods.Identifier] = None
        if self.id_method == "langid":
            for param, value in own.items():
                if value:
                    raise CleaningConfigError("%s: %s is only for another id_method"
                                              % (n, param))
        elif self.id_method in lid_methods.PACKAGES:
            self.method = lid_methods.identifier(
                n, self.id_method, dict(own, langid_languages=params["langid_languages"]))
            params["langid_languages"] = None  # lingua's candidates, not py3langid's
        else:
            raise CleaningConfigError("%s: id_method must be one of langid, %s, not %r"
                                      % (n, ", ".join(lid_methods.PACKAGES), self.id_method))
        super().configure(**params)
        self._found: Dict[str, Tuple[str, float]] = {}  # text -> the method's (label, conf.)

    @property
    def model_path(self) -> Optional[str]:
        """The fastText model file, which the Beam stage copies from a bucket before setup."""
        return self.method.model_path if isinstance(self.method, lid_methods.FastText) else None

    @model_path.setter
    def model_path(self, path: str) -> None:
        assert isinstance(self.method, lid_methods.FastText)
        self.method.model_path = path

    def setup(self) -> None:
        if self.method is None:
            super().setup()
        elif self.identifier is None:
            self.method.load()
            self.identifier = self.method

    def _found_of(self, texts: Sequence[str]) -> List[Tuple[str, float]]:
        """The method's (label, confidence) of each text, each line identified once per
        cache fill."""
        assert self.method is not None
        known = self._found
        new = [text for text in dict.fromkeys(texts) if text not in known]
        if len(known) + len(new) > CACHE_LINES:
            known.clear()
            new = list(dict.fromkeys(texts))
        known.update(zip(new, self.method.identify_many(new)))
        return [known[text] for text in texts]

    def confidence(self, text: str, language: str) -> float:
        if self.method is None:
            return super().confidence(text, language)
        if not text:
            return 1.0
        label, value = self._found_of([text])[0]
        return value if label == language else 0.0

    def accept_many(self, pairs: Sequence[Tuple[str, str]],
                    languages: Optional[Tuple[str, str]] = None) -> List[bool]:
        if self.method is None:
            return super().accept_many(pairs, languages)
        self.setup()
        chosen = self._languages(languages)
        verdicts = [True] * len(pairs)
        for side in (0, 1):
            rows = [i for i, ok in enumerate(verdicts) if ok]
            texts = [pairs[i][side] for i in rows]
            found = self._found_of([text for text in texts if text])
            at = iter(found)
            for i, text in zip(rows, texts):
                if text:
                    label, value = next(at)
                    confidence = value if label == chosen[side] else 0.0
                else:
                    confidence = 1.0
                verdicts[i] = confidence > self.thresholds[side]
        return verdicts
