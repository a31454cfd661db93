"""LangidFilter's batches (transforms/cleaning/langid.py): the labels py3langid gives line by
line, on real lines and on a line whose two best classes tie exactly."""

import os

import numpy as np

from repo_paths import DATA_DIR
from transforms.cleaning.langid import BatchLabels, LangidFilter

NOISY = os.path.join(DATA_DIR, "noisy-enzh")


def _lines(*names):
    lines = []
    for name in names:
        with open(os.path.join(NOISY, name), encoding="utf-8") as f:
            lines.extend(line.rstrip() for line in f)
    return [line for line in lines if line]


def test_batch_labels_are_classifys():
    f = LangidFilter(languages=["en", "zh"])
    f.setup()
    lines = _lines("train-b.en", "train-b.zh")
    assert f._batch.labels(lines) == [f.identifier.classify(line)[0] for line in lines]


def test_a_tie_is_classified_line_by_line():
    """A model whose class "a" duplicates "en" ties them on every line: py3langid picks the
    first; the batch cannot tell them apart within its rounding bound, so it asks py3langid."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier
    real = LanguageIdentifier.from_pickled_model(MODEL_FILE, norm_probs=True)
    en = real.nb_classes.index("en")
    tied = LanguageIdentifier(np.concatenate([real.nb_ptc[:, [en]], real.nb_ptc], axis=1),
                              np.concatenate([real.nb_pc[[en]], real.nb_pc]),
                              real.nb_numfeats, ["a"] + list(real.nb_classes),
                              real.tk_nextmove, real.tk_output, norm_probs=True)
    lines = ["This is an English sentence about the weather.", "这是一个中文句子。"]
    batch = BatchLabels(tied)
    assert batch.labels(lines) == [tied.classify(line)[0] for line in lines] == ["a", "zh"]
    assert batch.exact_lines == 1


def test_accept_many_is_accept_with_and_without_thresholds():
    pairs = list(zip(_lines("train-b.en"), _lines("train-b.zh")))[:300]
    pairs += [("", "这是一个中文句子。"), ("Ein deutscher Satz über das Wetter.", "")]
    kept = {}
    for thresholds in ([0, 0], [0.9, 0.5], [-1, 1]):
        f = LangidFilter(languages=["en", "zh"], thresholds=thresholds)
        verdicts = f.accept_many(pairs)
        assert verdicts == [f.accept(s, t) for s, t in pairs]
        kept[tuple(thresholds)] = sum(verdicts)
    assert len(pairs) > kept[(0, 0)] > kept[(0.9, 0.5)] > 0


def test_a_full_label_cache_is_emptied_without_losing_a_line(monkeypatch):
    """When a call's new lines would overfill the cache, it is emptied, and the call's lines
    it knew are classified again with the new ones."""
    from transforms.cleaning import langid
    monkeypatch.setattr(langid, "CACHE_LINES", 10)
    lines = _lines("train-b.en")[:30]
    f = LangidFilter(languages=["en", "zh"])
    f.setup()
    expected = [f.identifier.classify(line)[0] for line in lines]
    assert f._labels_of(lines[:6]) == expected[:6]
    assert f._labels_of(lines[:12]) == expected[:12]  # 6 known, 6 new: over 10
    assert f._labels_of(lines) == expected and len(f._batch_labels) <= 30
