"""Counting a vocabulary's sample by distinct lines: the planned parts with how often each
line counts (`text_lines.plan_counted_sample_parts`), windows of a sample read whole
(`token_counts.counted_in_windows`) and the counting of (line, times) pairs
(`token_counts.count_counted_lines`) give exactly the counts of every sampled line."""

import collections

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
