"""Temperature sampling (`transforms.pairs.mixing`): the shares are the formula's, exactly, and the
lines a file gives a mix are spread evenly and sum to what it was given."""

import itertools
import math

import pytest

from hypothesis import given, settings, strategies as st

from transforms.pairs import mixing
from transforms.formats.text_lines import mixture_lines, plan_line_parts


def test_shares_are_the_formula():
    # p_l = (n_l / N) ** (1 / T) * w_l / Z, w_l the lines-weighted mean of its corpora's
    sizes = {"en": [(8000, 1.0), (100, 2.0)], "de": [(1000, 1.0)], "vi": [(100, 2.0)],
             "zh": [(7000, 1.0)]}
    total = 16200
    for temperature in (1.0, 2.0, 5.0, 100.0):
        raw = {"en": (8100 / total) ** (1 / temperature) * (8000 + 200) / 8100,
               "de": (1000 / total) ** (1 / temperature),
               "vi": (100 / total) ** (1 / temperature) * 2.0,
               "zh": (7000 / total) ** (1 / temperature)}
        z = sum(raw.values())
        shares = mixing.temperature_shares(sizes, temperature)
        # the same numbers, up to the rounding of the order the products are taken in
        assert shares == pytest.approx({key: value / z for key, value in raw.items()},
                                       rel=1e-13, abs=0)
    # T = 1 and weights 1: proportional to the lines
    assert mixing.temperature_shares({"a": [(3, 1.0)], "b": [(1, 1.0)]}, 1.0) == {
        "a": 0.75, "b": 0.25}
    assert mixing.temperature_shares({"a": [(0, 1.0)]}, 5.0) == {"a": 0.0}


def test_apportion_is_largest_remainder():
    assert mixing.apportion(10, {"a": 0.55, "b": 0.25, "c": 0.2}) == {"a": 6, "b": 2, "c": 2}
    # ties go to the first key in order; a key with no share gets nothing
    assert mixing.apportion(3, {"b": 0.25, "a": 0.25, "c": 0.5, "d": 0.0}) == {
        "a": 1, "b": 1, "c": 1, "d": 0}
    assert mixing.apportion(1, {"b": 0.5, "a": 0.5}) == {"a": 1, "b": 0}
    assert mixing.apportion(0, {"a": 1.0}) == {"a": 0}


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 300), st.dictionaries(st.text(max_size=2), st.floats(0, 10),
                                            min_size=1, max_size=8))
def test_apportion_sums_and_stays_within_one_of_the_quota(total, shares):
    counts = mixing.apportion(total, shares)
    weight = sum(shares.values())
    if weight <= 0:
        assert not any(counts.values())
        return
    assert sum(counts.values()) == total
    for key, share in shares.items():
        assert abs(counts[key] - total * share / weight) < 1 + 1e-9


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 60), st.integers(0, 400))
def test_take_count_spreads_k_lines_over_the_file(lines, take):
    counts = [mixing.take_count(j, lines, take) for j in range(lines)]
    assert sum(counts) == take
    assert set(counts) <= {take // lines, take // lines + 1}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="ab \u00e9", max_size=6), min_size=1, max_size=40),
       st.integers(0, 100), st.integers(1, 30))
def test_mixture_parts_read_what_the_whole_file_gives(texts, take, part_bytes):
    data = "\n".join(texts).encode("utf-8") + b"\n"
    raw = data.split(b"\n")[:-1]
    whole = list(mixture_lines(iter(raw), len(raw), take))
    assert len(whole) == sum(mixing.take_count(j, len(raw), take) for j in range(len(raw))
                             if raw[j] is not None)
    parts = plan_line_parts(iter(raw), part_bytes)
    read = []
    for start, end, before in parts:
        rest = data[start:].split(b"\n")[:-1]
        read += mixture_lines(iter(rest), len(raw), take, number=before, offset=start, end=end)
    assert read == whole
    assert whole == list(itertools.chain.from_iterable(
        [t.strip()] * mixing.take_count(j, len(texts), take) for j, t in enumerate(texts)))


def test_plan_mix_samples_as_many_lines_as_the_data_within_the_budget():
    files = [mixing.MixFile("en", 1000, 100_000, 1.0), mixing.MixFile("de", 1000, 120_000, 1.0),
             mixing.MixFile("en", 10, 1_000, 1.0), mixing.MixFile("vi", 10, 1_500, 1.0)]
    plan = mixing.plan_mix(files, 5.0, 1e8)
    assert plan.sample_lines == 2020 == sum(plan.takes)
    shares = mixing.temperature_shares({"en": [(1000, 1.0), (10, 1.0)], "de": [(1000, 1.0)],
                                        "vi": [(10, 1.0)]}, 5.0)
    assert {lang: f["share"] for lang, f in plan.languages.items()} == shares
    per_language = mixing.apportion(2020, shares)
    assert plan.takes[0] + plan.takes[2] == per_language["en"]
    assert plan.takes[3] == per_language["vi"] > 10  # upsampled
    assert plan.takes[1] == per_language["de"] < 1000  # downsampled
    # a budget of 50 characters per language: 4 languages -> 200 of 222,500 bytes
    small = mixing.plan_mix(files, 1.0, 50)
    assert small.sample_lines == int(3 * 50 * 2020 / 222_500)


def test_shares_at_a_tiny_temperature_go_to_the_largest_instead_of_all_underflowing():
    """--sampling_temperature 1e-4 is in range: (n / N) ** 10000 underflows to 0 for every
    language, and the shares were all 0 (then a KeyError after the vocab pass)."""
    shares = mixing.temperature_shares({"de": [(3500, 1.0)], "zh": [(3600, 1.0)],
                                        "vi": [(0, 1.0)]}, 1e-4)
    assert shares["zh"] == 1.0 and 0 < shares["de"] < 1e-100 and shares["vi"] == 0.0
    plan = mixing.plan_mix([mixing.MixFile("de", 3500, 9000, 1.0),
                            mixing.MixFile("zh", 3600, 9000, 1.0)], 1e-4, 1e9)
    assert plan.takes == [0, plan.sample_lines] and plan.sample_lines > 0


def test_a_huge_weight_overflows_no_product():
    """`weight: 1.7e+308` is a finite positive number: lines * weight overflowed to inf,
    and inf / inf made every share NaN."""
    parts = {"vi": [(100, 1.7e308), (50, 1.7e308)], "de": [(1000, 1.0)]}
    shares = mixing.temperature_shares(parts, 5.0)
    assert shares["vi"] == pytest.approx(1.0) and 0 <= shares["de"] < 1e-300
    assert mixing.mean_weight(parts["vi"]) == pytest.approx(1.7e308)
    plan = mixing.plan_mix([mixing.MixFile("vi", 100, 900, 1.7e308),
                            mixing.MixFile("vi", 50, 450, 1.0),
                            mixing.MixFile("de", 1000, 9000, 1.0)], 5.0, 1e9)
    assert sum(plan.takes) == plan.sample_lines and plan.takes[0] > 0
    assert all(math.isfinite(v["share"]) for v in plan.languages.values())
