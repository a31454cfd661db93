"""Counting a vocabulary's sample by distinct lines: the planned parts with how often each
line counts (`text_lines.plan_counted_sample_parts`), windows of a sample read whole
(`token_counts.counted_in_windows`) and the counting of (line, times) pairs
(`token_counts.count_counted_lines`) give exactly the counts of every sampled line."""

import collections

import pytest
from hypothesis import given, settings, strategies as st

from transforms.codecs import tokenizer


_line = st.one_of(st.text(alphabet="ab c\r\t中", max_size=12).map(lambda t: t.encode()),
                  st.just(b"\xff\xfe bad"), st.just(b""))


@settings(max_examples=400, deadline=None)
@given(lines=st.lists(_line, max_size=60), trailing_newline=st.booleans(),
       budget=st.integers(min_value=1, max_value=400), size_factor=st.sampled_from([1, 3, 9]),
       part_chars=st.integers(min_value=1, max_value=80),
       max_chars=st.sampled_from([0, 5, 1 << 20]), probe=st.sampled_from([3, 1 << 16]))
def test_sample_parts_give_exactly_the_whole_files_sample(lines, trailing_newline, budget,
                                                          size_factor, part_chars, max_chars,
                                                          probe):
    """Planned parts (each read from its own start byte) hold exactly T2T's sample of the
    file, in order: any stride (the size sets it), budget, part size, invalid lines passed
    over, \r, empty lines, with or without a final newline; their `times` count every
    sampled line exactly once in all (at its first occurrence, up to `max_chars` distinct
    characters held, or until a sample with few repeats in its first `probe` lines stops
    looking), so they give the counts of the whole sample."""
    import io
    from unittest import mock
    from transforms.formats import text_lines
    from transforms.formats.text_lines import (iter_raw_lines, plan_counted_sample_parts,
                                               sample_lines_for_vocab, sample_part_lines)
    data = b"\n".join(lines) + (b"\n" if trailing_newline and lines else b"")
    size = len(data) * size_factor  # a size beyond the bytes read makes the stride larger
    whole = list(sample_lines_for_vocab(iter_raw_lines(io.BytesIO(data)), size, budget,
                                        on_invalid="reject"))
    with mock.patch.object(text_lines, "REPEATS_PROBE_LINES", probe):
        parts = plan_counted_sample_parts(iter_raw_lines(io.BytesIO(data)), size, budget,
                                          part_chars, on_invalid="reject", max_chars=max_chars)
    from_parts = []
    counted: collections.Counter = collections.Counter()
    for part, times in parts:
        stream = io.BytesIO(data)
        stream.seek(part[0])
        read = list(sample_part_lines(iter_raw_lines(stream), size, budget, part,
                                      on_invalid="reject"))
        assert len(read) == len(times)
        from_parts.extend(read)
        for line, n in zip(read, times):
            counted[line] += n
    assert from_parts == whole
    assert counted == collections.Counter(whole)
    firsts = [n for _, times in parts for n in times if n]
    if max_chars == 1 << 20 and probe > len(whole):  # each distinct line counted at its first
        assert len(firsts) == len(set(whole))
    if probe < len(whole) and len(set(whole[:probe])) == probe:  # no repeats at first
        assert len(firsts) == len(whole)  # stopped looking: every line counted once
    assert all(a[0][1] <= b[0][0] for a, b in zip(parts, parts[1:]))


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.sampled_from(["a b", "b", "中文 x", "", "a  b c", "x", "y", "z"]),
                      max_size=40),
       window=st.sampled_from([0, 3, 12, 1 << 20]), probe=st.sampled_from([3, 1 << 16]))
def test_counted_lines_count_as_every_line(lines, window, probe):
    """Distinct lines counted once each, times their occurrences (in windows of any size,
    or once each after a start with few repeats), give the counts, lines and characters of
    counting every line; with `times` from a plan a line of times 0 is not counted at all."""
    from unittest import mock
    from transforms.formats import text_lines
    import transforms.token_counts as token_counts
    expected = collections.Counter(t for line in lines for t in tokenizer.encode(line))
    with mock.patch.object(text_lines, "REPEATS_PROBE_LINES", probe):
        pairs = list(token_counts.counted_in_windows(lines, window))
    assert sum(n for _, n in pairs) == len(lines)
    if window == 1 << 20 and probe > len(lines):
        assert sorted(pairs) == sorted(collections.Counter(lines).items())
    if probe < len(lines) and len(set(lines[:probe])) == probe:  # stopped looking
        assert pairs[probe:] == [(line, 1) for line in lines[probe:]]
    counts, n_lines, chars = token_counts.count_counted_lines(pairs, tokenizer.count_tokens)
    assert (counts, n_lines, chars) == (expected, len(lines), sum(map(len, lines)))
    assert token_counts.count_counted_lines(
        [(line, 0) for line in lines] + [("b", 3)], tokenizer.count_tokens) == (
            collections.Counter({"b": 3}), 3, 3)


def test_counted_lines_batch_lines_of_equal_times(monkeypatch):
    """Lines counted once go to `count_tokens` together, repeated lines in batches of equal
    times, each batch closed at BATCH_CHARS characters."""
    import transforms.token_counts as token_counts
    monkeypatch.setattr(token_counts, "BATCH_CHARS", 4)
    calls = []

    def count(batch):
        calls.append(list(batch))
        return tokenizer.count_tokens(batch)
    pairs = [("ab", 1), ("cd", 2), ("ef", 1), ("gh", 2), ("ij", 1), ("kl", 3)]
    counts, lines, chars = token_counts.count_counted_lines(pairs, count)
    assert calls == [["ab", "ef"], ["cd", "gh"], ["ij"], ["kl"]]
    assert counts == {"ab": 1, "cd": 2, "ef": 1, "gh": 2, "ij": 1, "kl": 3}
    assert (lines, chars) == (10, 20)


def _line_by_line(data: bytes, budget: float):
    """T2T's sample of `data`, each sampled line tokenized and counted on its own: what the
    counting by distinct lines must equal."""
    import io
    from transforms.formats.text_lines import iter_raw_lines, sample_lines_for_vocab
    sample = list(sample_lines_for_vocab(iter_raw_lines(io.BytesIO(data)), len(data), budget))
    counts = collections.Counter(t for line in sample for t in tokenizer.encode(line))
    return counts, len(sample), sum(map(len, sample))


def _through_plan(data: bytes, budget: float, part_chars: int, **plan_args):
    """The counts of `data`'s sample as the job takes them from a plan: each part read from its
    own start byte, its lines counted by their `times` (`_SampleFileFn`'s way); also the
    parts and the lines that were tokenized."""
    import io
    from transforms.formats.text_lines import (iter_raw_lines, plan_counted_sample_parts,
                                               sample_part_lines)
    import transforms.token_counts as token_counts
    parts = plan_counted_sample_parts(iter_raw_lines(io.BytesIO(data)), len(data), budget,
                                      part_chars, **plan_args)
    tokenized = []

    def count(batch):
        tokenized.extend(batch)
        return tokenizer.count_tokens(batch)
    total: collections.Counter = collections.Counter()
    lines = chars = 0
    for part, times in parts:
        stream = io.BytesIO(data)
        stream.seek(part[0])
        read = sample_part_lines(iter_raw_lines(stream), len(data), budget, part)
        counts, n, c = token_counts.count_counted_lines(zip(read, times, strict=True), count)
        total.update(counts)
        lines += n
        chars += c
    return (total, lines, chars), parts, tokenized


def _through_windows(data: bytes, budget: float, window_chars: int):
    """The counts of `data`'s sample read whole (`_SampleFileFn` for part None)."""
    import io
    from transforms.formats.text_lines import iter_raw_lines, sample_lines_for_vocab
    import transforms.token_counts as token_counts
    sample = sample_lines_for_vocab(iter_raw_lines(io.BytesIO(data)), len(data), budget)
    return token_counts.count_counted_lines(
        token_counts.counted_in_windows(sample, window_chars), tokenizer.count_tokens)


def _chinese_with_repeats() -> bytes:
    """The bundled Chinese side (7,000 distinct lines, 769 kB) with repeats as parallel
    corpora have them: every 3rd line again later, the first 50 lines once more at the end,
    and one line 40 times."""
    import os
    from repo_paths import SAMPLE_DATA
    with open(os.path.join(SAMPLE_DATA, "enzh-mlqe-pe", "train.zh"), "rb") as f:
        lines = f.read().splitlines()
    assert len(set(lines)) == len(lines) == 7000
    out = []
    for i, line in enumerate(lines):
        out.append(line)
        if i % 3 == 0 and i >= 30:
            out.append(lines[i - 30])
    out += lines[:50] + [lines[100]] * 40
    return b"\n".join(out) + b"\n"


def _numbered(n: int, text: str = "line {} of a corpus, 中文 {}") -> bytes:
    return "".join(text.format(i, i * 7) + "\n" for i in range(n)).encode()


_SAMPLES = {
    "no_repeats": lambda: _numbered(3000),
    "all_repeats": lambda: b"one and the same line , repeated .\n" * 3000,
    "chinese_with_repeats": _chinese_with_repeats,
}


@pytest.mark.parametrize("name", sorted(_SAMPLES))
@pytest.mark.parametrize("budget", [1e8, 20_000])
def test_plan_and_windows_count_as_line_by_line(name, budget):
    """Counted by distinct lines, through the plan's parts (one part, and parts of 5,000
    characters of new lines) or read whole in windows (the real 16 M and tiny ones), a sample
    with no repeats, one of a single line, and Chinese text with repeats gives the counts,
    lines and characters of tokenizing every sampled line; each distinct line is tokenized
    once (with every sampled line, the whole budget; a budget of 20 k characters samples a
    stride of lines)."""
    data = _SAMPLES[name]()
    expected = _line_by_line(data, budget)
    distinct_sampled = len(set(_sampled_lines(data, budget)))
    for part_chars in (1 << 21, 5000):
        got, parts, tokenized = _through_plan(data, budget, part_chars)
        assert got == expected
        assert sorted(tokenized) == sorted(set(tokenized))  # each distinct line once
        assert len(tokenized) == distinct_sampled
        assert (len(parts) == 1) == (part_chars > expected[2] or name == "all_repeats")
    for window in (1 << 24, 1000):
        assert _through_windows(data, budget, window) == expected


def _sampled_lines(data: bytes, budget: float):
    import io
    from transforms.formats.text_lines import iter_raw_lines, sample_lines_for_vocab
    return list(sample_lines_for_vocab(iter_raw_lines(io.BytesIO(data)), len(data), budget))


def test_all_repeats_are_tokenized_once_in_one_part():
    """A sample of one line repeated: one part, the line tokenized once, times the sample's
    lines; the parts are cut by characters of new lines, so the repeats add none."""
    data = b"a b c\n" * 5000
    (counts, lines, chars), parts, tokenized = _through_plan(data, 1e8, 10)
    assert tokenized == ["a b c"]
    assert [list(times) for _, times in parts] == [[5000] + [0] * 4999]
    assert (counts, lines, chars) == ({"a": 5000, "b": 5000, "c": 5000}, 5000, 25000)


@pytest.mark.parametrize("repeats,looks", [(0, False), (1, False), (2, True), (50, True)])
def test_a_sample_with_under_1_percent_repeats_stops_looking(monkeypatch, repeats, looks):
    """At REPEATS_PROBE_LINES (here 200) a sample that repeated fewer than 1% of its lines
    (0 or 1 of 200) stops looking for repeats: every later line is tokenized where it occurs,
    repeated or not; 2 of 200 keeps looking, to the end. Both give the counts of every line,
    through the plan and through windows."""
    from transforms.formats import text_lines
    monkeypatch.setattr(text_lines, "REPEATS_PROBE_LINES", 200)
    head = [b"head %d" % i for i in range(200 - repeats)] + [b"head 0"] * repeats
    tail = [b"tail %d" % (i % 10) for i in range(300)]  # 10 lines, each 30 times
    data = b"\n".join(head + tail) + b"\n"
    expected = _line_by_line(data, 1e8)
    got, parts, tokenized = _through_plan(data, 1e8, 1 << 20)
    assert got == expected
    assert len(tokenized) == (200 - repeats + 10 if looks else 200 - (repeats > 0) + 300)
    assert _through_windows(data, 1e8, 1 << 24) == expected
    import transforms.token_counts as token_counts
    pairs = list(token_counts.counted_in_windows(_sampled_lines(data, 1e8)))
    assert len(pairs) == len(tokenized)


def test_windows_close_at_16_million_characters():
    """A sample read whole holds distinct lines in a window of WINDOW_CHARS (16 M)
    characters: a new line after the window holds exactly 16 M opens the next one, so a line
    repeated across the boundary comes once from each window (one short of 16 M and it is
    still found as a repeat); the counts are those of every line either way."""
    import transforms.token_counts as token_counts
    assert token_counts.WINDOW_CHARS == 1 << 24
    quarter = 1 << 22
    big = ["%s %d" % ("x" * (quarter - 2), i) for i in range(4)]  # 4 M characters each
    assert sum(map(len, big)) == 1 << 24
    lines = big + ["中文 new", big[0], "中文 new"]
    pairs = list(token_counts.counted_in_windows(lines))
    assert pairs == [(big[0], 1), (big[1], 1), (big[2], 1), (big[3], 1),
                     ("中文 new", 2), (big[0], 1)]
    short = big[:3] + [big[3][1:]]  # 16 M - 1 characters: no new window
    pairs = list(token_counts.counted_in_windows(short + ["中文 new", short[0]]))
    assert pairs == [(short[0], 2), (short[1], 1), (short[2], 1), (short[3], 1),
                     ("中文 new", 1)]
    for sample in (lines, short + ["中文 new", short[0]]):
        expected = collections.Counter(t for line in sample for t in tokenizer.encode(line))
        counted = token_counts.count_counted_lines(token_counts.counted_in_windows(sample),
                                                   tokenizer.count_tokens)
        assert counted == (expected, len(sample), sum(map(len, sample)))


def test_the_plan_stops_holding_lines_at_max_chars():
    """The plan holds distinct lines up to `max_chars` characters: a line first seen after
    that counts once wherever it occurs, one seen before still takes all its repeats; the
    counts are those of every line."""
    data = b"aa\nbb\naa\ncc\ncc\nbb\naa\n"
    expected = _line_by_line(data, 1e8)
    got, parts, tokenized = _through_plan(data, 1e8, 1 << 20, max_chars=4)
    assert got == expected
    assert sorted(tokenized) == ["aa", "bb", "cc", "cc"]
    assert [list(times) for _, times in parts] == [[3, 2, 0, 1, 1, 0, 0]]
