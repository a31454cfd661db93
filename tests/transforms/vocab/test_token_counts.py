"""Unit tests of the vocabulary sample (`transforms.vocab.token_counts`): SampleAndCountTokens
and its combine on TestPipeline (T2T's stride and budget, files in parts, rejected lines put
back), and counting by distinct lines: the planned parts with how often each line counts
(`text_lines.plan_counted_sample_parts`), windows of a sample read whole
(`counted_in_windows`) and the counting of (line, times) pairs (`count_counted_lines`) give
exactly the counts of every sampled line."""

import collections
import os

import pytest
from hypothesis import given, settings, strategies as st
import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from transforms.codecs import tokenizer
from beam_unit import test_pipeline, write
from repo_paths import DATA_DIR
from transforms.contracts.elements import SampleFile
from transforms.storage.object_stores import StoreSettings
from transforms.vocab import token_counts
from transforms.vocab.sample_sums import SumCountsFn
from transforms.vocab.token_counts import (SampleAndCountTokens, count_lines_with,
                                     count_triples, with_rejected_lines)


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
    import transforms.vocab.token_counts as token_counts
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
    import transforms.vocab.token_counts as token_counts
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
    import transforms.vocab.token_counts as token_counts
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
    import transforms.vocab.token_counts as token_counts
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
    import transforms.vocab.token_counts as token_counts
    pairs = list(token_counts.counted_in_windows(_sampled_lines(data, 1e8)))
    assert len(pairs) == len(tokenized)


def test_windows_close_at_16_million_characters():
    """A sample read whole holds distinct lines in a window of WINDOW_CHARS (16 M)
    characters: a new line after the window holds exactly 16 M opens the next one, so a line
    repeated across the boundary comes once from each window (one short of 16 M and it is
    still found as a repeat); the counts are those of every line either way."""
    import transforms.vocab.token_counts as token_counts
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


def _words(line):
    return line.split(" ")


def test_sample_and_count_sums_files_per_vocab_and_reports_every_vocab(tmp_path):
    a = write(tmp_path / "a.en", "the cat\r\n  the dog  \n")
    b = write(tmp_path / "b.en", "a cat, the end\n")
    c = write(tmp_path / "c.zh", "你好，世界\n")
    items = [SampleFile("src", a, os.path.getsize(a)), SampleFile("src", b, os.path.getsize(b)),
             SampleFile("tgt", c, os.path.getsize(c))]
    expected_src = collections.Counter()
    for line in ("the cat", "the dog", "a cat, the end"):
        expected_src.update(tokenizer.encode(line))
    with test_pipeline() as p:
        out = p | beam.Create(items) | SampleAndCountTokens(["src", "tgt", "unused"], 1e8)
        totals = out["totals"] | "SortedTotals" >> beam.MapTuple(lambda n, c: (n, sorted(c.items())))
        assert_that(totals, equal_to([
            ("src", sorted(expected_src.items())),
            ("tgt", sorted(collections.Counter(tokenizer.encode("你好，世界")).items())),
            ("unused", [])]), label="Totals")
        assert_that(out["distinct"], equal_to([("src", len(expected_src)), ("tgt", 3),
                                               ("unused", 0)]), label="Distinct")
        stats = out["stats"] | beam.Map(lambda s: (s["vocab"], os.path.basename(s["path"]),
                                                   s["sampled_lines"], s["sampled_chars"]))
        assert_that(stats, equal_to([("src", "a.en", 2, 14), ("src", "b.en", 1, 14),
                                     ("tgt", "c.zh", 1, 5)]), label="Stats")


def test_sample_and_count_with_one_file_each_skips_no_token(tmp_path):
    a = write(tmp_path / "a.en", "the cat\r\n  the dog  \n")
    c = write(tmp_path / "c.zh", "你好，世界\n")
    items = [SampleFile("src", a, os.path.getsize(a)), SampleFile("tgt", c, os.path.getsize(c))]
    with test_pipeline() as p:
        files = p | beam.Create(items)
        general = files | "General" >> SampleAndCountTokens(["src", "tgt"], 1e8)
        direct = files | "OneEach" >> SampleAndCountTokens(["src", "tgt"], 1e8,
                                                           one_file_each=True)
        for label, out in (("general", general), ("direct", direct)):
            assert_that(out["totals"] | "Sorted" + label >> beam.MapTuple(
                lambda n, c: (n, sorted(c.items()))), equal_to([
                    ("src", sorted(collections.Counter(
                        tokenizer.encode("the cat") + tokenizer.encode("the dog")).items())),
                    ("tgt", sorted(collections.Counter(tokenizer.encode("你好，世界")).items()))]),
                label="Totals " + label)


def test_sample_follows_t2t_stride_and_budget_with_a_custom_tokenizer(tmp_path):
    # 30 bytes, budget 10: T2T skips int(30 / 10 / 2) = 1 line before each sample and stops
    # once a line is due and the budget is spent (the last line may overshoot it).
    path = write(tmp_path / "f.txt", "aa a\nbb b\ncc c\ndd d\nee e\nff f\n")
    with test_pipeline() as p:
        out = (p | beam.Create([SampleFile("v", path, 30)])
               | SampleAndCountTokens(["v"], 10, count_tokens=count_lines_with(_words)))
        assert_that(out["totals"] | beam.MapTuple(lambda n, c: (n, sorted(c.items()))),
                    equal_to([("v", [("b", 1), ("bb", 1), ("d", 1), ("dd", 1), ("f", 1),
                                     ("ff", 1)])]), label="Totals")
        assert_that(out["stats"] | beam.Map(lambda s: (s["sampled_lines"], s["sampled_chars"],
                                                       s["distinct_tokens_in_file"])),
                    equal_to([(3, 12, 6)]), label="Stats")


def test_sample_puts_a_converted_sides_rejected_lines_back_in_place(tmp_path):
    # A converted side: kept lines in its line file, rejected units' lines (position<TAB>text)
    # in its `.rejected` file; the sampler reads the whole sequence as one file's lines.
    assert list(with_rejected_lines(iter([b"b", b"d"]), [b"0\ta", b"2\tc", b"4\te\tf"])) == [
        b"a", b"b", b"c", b"d", b"e\tf"]
    assert list(with_rejected_lines(iter([b"a", b"b"]), [])) == [b"a", b"b"]
    kept = write(tmp_path / "side", "bb b\ndd d\nff f\n")
    rejected = write(tmp_path / "side.rejected", "0\taa a\n2\tcc c\n4\tee e\n")
    with test_pipeline() as p:
        out = (p | beam.Create([SampleFile("v", kept, 30, rejected)])
               | SampleAndCountTokens(["v"], 10, count_tokens=count_lines_with(_words)))
        # as the 30-byte file of the stride test: every other line from the second
        assert_that(out["totals"] | beam.MapTuple(lambda n, c: (n, sorted(c.items()))),
                    equal_to([("v", [("b", 1), ("bb", 1), ("d", 1), ("dd", 1), ("f", 1),
                                     ("ff", 1)])]))


@pytest.mark.slow
@pytest.mark.parametrize("count_counted", [None, token_counts.count_compiled])
def test_sample_in_parts_counts_as_the_whole_file(tmp_path, count_counted):
    """A real corpus file sampled in 2 KB parts (joined into at most `PARTS_PER_FILE`
    tasks), on TestPipeline: the totals and file statistics of T2T's whole-file sample,
    counted by the regex or by the compiled counter (its `TokenArrays` summed over the
    parts); an invalid line is reported with its own number whether or not parts were
    asked for."""
    from transforms.formats.text_lines import (iter_raw_lines, plan_counted_sample_parts,
                                               sample_lines_for_vocab)
    src = os.path.join(os.path.dirname(os.path.dirname(DATA_DIR)), "sample_data",
                       "enzh-mlqe-pe", "train.zh")
    with open(src, "rb") as f:
        data = f.read()
    plain = write(tmp_path / "train.zh", data)
    bad = write(tmp_path / "bad.zh", data + b"\xff bad\n" + data[:3000])
    bad_line = data.count(b"\n") + 1
    for budget in (1e8, 5e4, 2e5):  # every line; a stride of 7 and of 1, the budget spent
        with open(plain, "rb") as f:
            sample = list(sample_lines_for_vocab(iter_raw_lines(f), len(data), budget))
        with open(plain, "rb") as f:  # the pipeline below does read it in parts
            assert len(plan_counted_sample_parts(iter_raw_lines(f), len(data), budget,
                                                 2048)) > 10
        planner = token_counts.PlanSampleFn(budget, "error", 2048, StoreSettings())
        planner.setup()
        tasks = list(planner.process(SampleFile("v", plain, len(data))))
        assert 1 < len(tasks) <= token_counts.PARTS_PER_FILE
        counts = collections.Counter(t for line in sample for t in tokenizer.encode(line))
        assert 100 < len(sample) < 7000 or budget == 1e8
        with test_pipeline() as p:
            out = (p | beam.Create([SampleFile("v", plain, len(data))])
                   | SampleAndCountTokens(["v"], budget, part_bytes=2048,
                                          count_counted=count_counted))
            assert_that(out["totals"] | beam.MapTuple(lambda n, c: (n, sorted(c.items()))),
                        equal_to([("v", sorted(counts.items()))]), label="Totals")
            assert_that(out["stats"] | beam.Map(lambda s: (
                s["sampled_lines"], s["sampled_chars"], s["distinct_tokens_in_file"],
                s.get("error"))), equal_to([(len(sample), sum(map(len, sample)), len(counts),
                                             None)]), label="Stats")
    error = "%s:%d: invalid UTF-8 at byte 0 of the line (invalid start byte)" % (bad, bad_line)
    # whole; and with parts asked for, where planning meets the line and the file is read whole
    for part_bytes in (1 << 30, 2048):
        with test_pipeline() as p:
            out = (p | beam.Create([SampleFile("v", bad, os.path.getsize(bad))])
                   | SampleAndCountTokens(["v"], 1e8, part_bytes=part_bytes))
            assert_that(out["stats"] | beam.Map(lambda s: s.get("error")), equal_to([error]))


def test_sum_counts_combine_merges_without_double_counting():
    fn = SumCountsFn()
    parts = [{"a": 1, "b": 2}, {"b": 3}, {}, {"a": 5, "c": 1, "d": 1}]
    accs = [fn.add_input(fn.create_accumulator(), part) for part in parts]
    assert fn.extract_output(fn.merge_accumulators(accs)) == {"a": 6, "b": 5, "c": 1, "d": 1}
    assert sorted(count_triples(("v", {"x": 2, "y": 1}))) == [("v", "x", 2), ("v", "y", 1)]
    with test_pipeline() as p:
        summed = (p | beam.Create([("v", part) for part in parts] + [("w", {"z": 1})])
                  | beam.CombinePerKey(SumCountsFn())
                  | beam.MapTuple(lambda n, c: (n, sorted(c.items()))))
        assert_that(summed, equal_to([("v", [("a", 6), ("b", 5), ("c", 1), ("d", 1)]),
                                      ("w", [("z", 1)])]))
