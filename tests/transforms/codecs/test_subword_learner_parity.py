"""Parity of our subword learner (`transforms.codecs.subword_learner`) with Tensor2Tensor's.

Both learners get the same token counts: lines sampled by T2T's own
`generator_utils.generate_lines_for_vocab`, tokenized by T2T's tokenizer (our tokenizer's
parity is tested in test_tokenizer.py). The learnt vocabulary must be the same list, in the
same order, and its vocab file the same bytes as T2T's `store_to_file`.

To stay within a couple of minutes the large corpora are cut to their first lines for the
learn_vocab cases, and T2T's bisection probes are shared between target sizes over the same
token counts (`t2t_build_to_target_size(memo=...)`, which gives the same result as without
the memo). The complete t2t-datagen path (`get_or_generate_vocab_inner` over
`generate_lines_for_vocab`) runs unshared on the small corpus and on the small-budget samples.
No token in these corpora is 200 characters long, so max_subtoken_length 200 and None learn
the same; the refine cases use short max_subtoken_lengths (2 to 6) to exercise the cut-off.
"""

import os

import pytest

from repo_paths import DATA_DIR
import t2t_reference as t2t
from transforms.codecs import subword_learner
from transforms.codecs import tokenizer as our_tokenizer
from transforms.codecs.subword import RESERVED_TOKENS, vocab_file_text


# corpus -> (source side, target side) training files.
CORPORA = {
    "enzh-mlqe-pe": ("train.en", "train.zh"),
    "ende-opennmt": ("train.en", "train.de"),
    "envi-nmt-testdata": ("iwslt15.tst2013.100.en", "iwslt15.tst2013.100.vi"),
}
SIDES = [(corpus, name) for corpus, names in CORPORA.items() for name in names]
SIDE_IDS = ["%s/%s" % side for side in SIDES]

TARGETS = (300, 2000, 8192)
MAX_SUBTOKEN_LENGTHS = (200, None)

# How many leading lines of each training file the full-sample learn_vocab tests learn from.
# With 400 lines the bisection ends at min_count 28 to 750 for target 300 (enzh's Chinese side
# cannot go below its ~1,750-character alphabet), 3 to 7 for 2000 (1,705 to 2,203 entries),
# and 1 for 8192, which is out of reach. All three targets share one sample per file, hence
# one memo of T2T probes.
PARITY_LINES = 400

FULL_BUDGET = 1e8  # larger than every file: generate_lines_for_vocab yields every line
SMALL_BUDGET = 20000  # a stride of several lines, and the budget runs out early


def corpus_path(corpus, name):
    return os.path.join(DATA_DIR, corpus, name)


@pytest.fixture(scope="module")
def slice_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("slices")


class Sample:
    """Lines sampled by T2T from one file, their token counts, and a memo of T2T probes."""

    def __init__(self, lines):
        self.lines = lines
        self.token_counts = dict(t2t.t2t_token_counts(lines))
        self.memo = {}
        self._t2t = {}

    def t2t_vocab(self, target_size, max_subtoken_length):
        key = (target_size, max_subtoken_length)
        if key not in self._t2t:
            self._t2t[key] = t2t.t2t_build_to_target_size(
                self.token_counts, target_size, max_subtoken_length, memo=self.memo)
        return self._t2t[key]


@pytest.fixture(scope="module")
def samples(slice_dir):
    """(corpus, name, max_lines, budget) -> Sample, computed once per module."""
    cache = {}

    def get(corpus, name, max_lines=None, budget=FULL_BUDGET):
        key = (corpus, name, max_lines, budget)
        if key not in cache:
            path = corpus_path(corpus, name)
            if max_lines is not None:
                with open(path, "rb") as f:
                    head = b"".join(line for _, line in zip(range(max_lines), f))
                path = os.path.join(str(slice_dir), "%s.%d.%s" % (corpus, max_lines, name))
                with open(path, "wb") as f:
                    f.write(head)
            cache[key] = Sample(t2t.t2t_sample_lines(path, budget))
        return cache[key]

    return get


def count_lines(path):
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def our_token_counts(lines):
    counts = {}
    for line in lines:
        for token in our_tokenizer.encode(line):
            counts[token] = counts.get(token, 0) + 1
    return counts


def assert_same_vocab(ours, t2t_encoder):
    expected = list(t2t_encoder.all_subtoken_strings)
    if ours != expected:
        first = next((i for i, (a, b) in enumerate(zip(ours, expected)) if a != b),
                     min(len(ours), len(expected)))
        raise AssertionError(
            "vocab differs: ours %d entries, T2T %d; first difference at %d: ours %r, T2T %r"
            % (len(ours), len(expected), first, ours[first:first + 3], expected[first:first + 3]))
    assert vocab_file_text(ours).encode("utf-8") == t2t.t2t_vocab_bytes(t2t_encoder)


# --- sampling -------------------------------------------------------------------------------


@pytest.mark.parametrize("corpus,name", SIDES, ids=SIDE_IDS)
def test_full_budget_samples_every_line(corpus, name, samples):
    path = corpus_path(corpus, name)
    with open(path, encoding="utf-8", newline="") as f:
        expected = [line.strip() for line in f]
    assert samples(corpus, name).lines == expected


@pytest.mark.parametrize("corpus,name", SIDES, ids=SIDE_IDS)
def test_our_token_counts_match_t2t(corpus, name, samples):
    sample = samples(corpus, name)
    assert our_token_counts(sample.lines) == sample.token_counts


def model_of_t2t_sampling(path, file_byte_budget):
    """What `generate_lines_for_vocab` yields for one local file, written out plainly.

    * lines come from tf.gfile's line reader, which splits on "\\n" only and drops every
      "\\r" (also inside a line);
    * `countermax = int(file size in bytes / budget / 2)` lines are skipped before each line
      taken, and the file is read until the budget is used up;
    * a taken line is `str.strip()`ed and the budget decreases by its length in code points.
    """
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8").replace("\r", "")
    lines = text.split("\n")
    lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    budget = file_byte_budget
    countermax = int(len(data) / budget / 2)
    counter = 0
    out = []
    for line in lines:
        if counter < countermax:
            counter += 1
        else:
            if budget <= 0:
                break
            line = line.strip()
            budget -= len(line)
            counter = 0
            out.append(line)
    return out


@pytest.mark.parametrize("budget", [FULL_BUDGET, SMALL_BUDGET, 3000, 150])
@pytest.mark.parametrize("corpus,name", SIDES, ids=SIDE_IDS)
def test_t2t_sampling_model(corpus, name, budget):
    path = corpus_path(corpus, name)
    assert t2t.t2t_sample_lines(path, budget) == model_of_t2t_sampling(path, budget)


@pytest.mark.parametrize("budget", [FULL_BUDGET, 40, 12, 5])
def test_t2t_sampling_model_edge_cases(tmp_path, budget):
    """Carriage returns (dropped everywhere), a BOM (kept), Unicode spaces (stripped),
    multi-byte characters (the budget counts code points), no final newline."""
    path = tmp_path / "edge.txt"
    text = ("a\rb c\r\n\ufeffhead\n\u3000 全角 \x85\n\n\r\rz\r\n" + "中文句子。\n" * 7
            + "  tab\tin side \n" + "last line")
    path.write_bytes(text.encode("utf-8"))
    lines = t2t.t2t_sample_lines(str(path), budget)
    assert lines == model_of_t2t_sampling(str(path), budget)
    if budget == FULL_BUDGET:
        assert lines[:4] == ["ab c", "\ufeffhead", "全角", ""]
        assert lines[-1] == "last line"


# --- learn_vocab == build_from_generator ----------------------------------------------------


# (max_subtoken_length, num_partitions): our learner runs twice per case, once unpartitioned
# and once with 5 partitions; T2T runs with both max_subtoken_lengths.
LEARN_VARIANTS = [(200, 1), (None, 5)]


@pytest.mark.slow
@pytest.mark.parametrize("max_subtoken_length,num_partitions", LEARN_VARIANTS,
                         ids=["msl%s-p%d" % v for v in LEARN_VARIANTS])
@pytest.mark.parametrize("target_size", TARGETS)
@pytest.mark.parametrize("corpus,name", SIDES, ids=SIDE_IDS)
def test_learn_vocab_matches_t2t(corpus, name, target_size, max_subtoken_length,
                                 num_partitions, samples):
    sample = samples(corpus, name, max_lines=PARITY_LINES)
    expected = sample.t2t_vocab(target_size, max_subtoken_length)
    ours = subword_learner.learn_vocab(sample.token_counts, target_size, max_subtoken_length,
                                       num_partitions=num_partitions)
    assert_same_vocab(ours, expected)


@pytest.mark.slow
@pytest.mark.parametrize("max_subtoken_length", MAX_SUBTOKEN_LENGTHS)
@pytest.mark.parametrize("target_size", TARGETS)
@pytest.mark.parametrize("name", CORPORA["envi-nmt-testdata"])
def test_learn_vocab_matches_t2t_datagen_path(name, target_size, max_subtoken_length):
    """The whole t2t-datagen path, no slicing, no memo: get_or_generate_vocab_inner."""
    path = corpus_path("envi-nmt-testdata", name)
    expected = t2t.t2t_build_vocab([path], target_size, max_subtoken_length, FULL_BUDGET)
    lines = t2t.t2t_sample_lines([path], FULL_BUDGET)
    ours = subword_learner.learn_vocab(our_token_counts(lines), target_size, max_subtoken_length)
    assert_same_vocab(ours, expected)


# --- small byte budget: T2T samples a strided subset ----------------------------------------


@pytest.mark.parametrize("corpus,name", SIDES, ids=SIDE_IDS)
def test_small_budget_sample(corpus, name, samples):
    path = corpus_path(corpus, name)
    sample = samples(corpus, name, budget=SMALL_BUDGET)
    assert 0 < len(sample.lines)
    if os.path.getsize(path) > 2 * SMALL_BUDGET:
        # A stride (countermax >= 1) is in effect: fewer lines than the file holds.
        assert len(sample.lines) < count_lines(path)
    assert our_token_counts(sample.lines) == sample.token_counts


@pytest.mark.slow
@pytest.mark.parametrize("corpus,name", SIDES, ids=SIDE_IDS)
def test_learn_vocab_small_budget_matches_t2t_datagen_path(corpus, name, samples):
    path = corpus_path(corpus, name)
    target_size = 1000
    max_subtoken_length = 200  # Text2TextProblem's default
    expected = t2t.t2t_build_vocab([path], target_size, max_subtoken_length, SMALL_BUDGET)
    sample = samples(corpus, name, budget=SMALL_BUDGET)
    ours = subword_learner.learn_vocab(sample.token_counts, target_size, max_subtoken_length,
                                       num_partitions=3)
    assert_same_vocab(ours, expected)


# --- refine() == build_from_token_counts for explicit min_counts ----------------------------


REFINE_CASES = [
    # corpus, name, max_lines, min_counts, max_subtoken_length, num_iterations
    ("enzh-mlqe-pe", "train.en", 500, (1, 2, 7, 40, 300), 200, 4),
    ("enzh-mlqe-pe", "train.zh", 500, (1, 3, 25), None, 4),
    ("ende-opennmt", "train.de", 500, (1, 4, 60), 6, 4),
    ("ende-opennmt", "train.en", 500, (2, 10), 3, 2),
    ("envi-nmt-testdata", "iwslt15.tst2013.100.vi", None, (1, 2, 5, 1000), None, 1),
    ("envi-nmt-testdata", "iwslt15.tst2013.100.en", None, (0, 1, 3), 2, 3),
]


@pytest.mark.slow
@pytest.mark.parametrize("num_partitions", [1, 5])
@pytest.mark.parametrize(
    "corpus,name,max_lines,min_counts,max_subtoken_length,num_iterations", REFINE_CASES,
    ids=["%s/%s-%s-msl%s-it%d" % (c[0], c[1], "-".join(map(str, c[3])), c[4], c[5])
         for c in REFINE_CASES])
def test_refine_matches_build_from_token_counts(corpus, name, max_lines, min_counts,
                                                max_subtoken_length, num_iterations,
                                                num_partitions, samples):
    sample = samples(corpus, name, max_lines=max_lines)
    counts = sample.token_counts
    alphabet = subword_learner.build_alphabet(counts)
    ours = subword_learner.refine(list(counts.items()), alphabet, list(min_counts),
                                  max_subtoken_length, num_iterations,
                                  num_partitions=num_partitions)
    assert sorted(ours) == sorted(min_counts)
    for min_count in min_counts:
        expected = t2t.t2t_build_from_token_counts(counts, min_count, max_subtoken_length,
                                                   num_iterations)
        assert_same_vocab(ours[min_count], expected)


def test_custom_reserved_tokens_match_t2t(samples):
    sample = samples("envi-nmt-testdata", "iwslt15.tst2013.100.en")
    reserved = list(RESERVED_TOKENS) + ["<S>", "<E>", "<mask_1>"]
    expected = t2t.t2t_build_to_target_size(sample.token_counts, 500, 50,
                                            reserved_tokens=reserved)
    ours = subword_learner.learn_vocab(sample.token_counts, 500, 50, reserved_tokens=reserved)
    assert ours[:5] == ["<pad>_", "<EOS>_", "<S>_", "<E>_", "<mask\\u1>_"]
    assert_same_vocab(ours, expected)
