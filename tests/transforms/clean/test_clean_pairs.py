"""CleanPairs (transforms/clean/clean_pairs.py) on tiny inputs: filters, dedup, dev overlap, books."""

import pytest

from cleaning_helpers import run_clean_pairs
from transforms.clean.dedup_groups import decide_group
from transforms.cleaning.dropped_lines import is_dropped
from transforms.cleaning.config import parse_cleaning_config

CONFIG = "filters:\n  - LengthFilter: {unit: char, min_length: 2, max_length: 20}\n"


def _pair(directory, name, pairs, end="\n"):
    src, tgt = directory / (name + ".en"), directory / (name + ".zh")
    src.write_text("\n".join(p[0] for p in pairs) + end, encoding="utf-8")
    tgt.write_text("\n".join(p[1] for p in pairs) + end, encoding="utf-8")
    return str(src), str(tgt)


def test_filters_and_duplicates_across_files_and_chunks(tmp_path):
    a = _pair(tmp_path, "a", [("hello", "你好"), ("x", "一"), ("hello", "你好"), ("bye", "再见"),
                              ("hello ", "你好")])
    b = _pair(tmp_path, "b", [("bye", "再见"), ("a very long line indeed!", "长"),
                              ("new", "新的"), ("x", "一")])
    dev = _pair(tmp_path, "dev", [("new", "新的"), ("dev", "开发"), ("dev", "开发")])
    cleaning = parse_cleaning_config(CONFIG, "c.yaml", "pairs", drop_dev_overlap=True)
    drops, reports = run_clean_pairs(tmp_path / "work", [
        ("train",) + a, ("train",) + b, ("dev",) + dev], cleaning, chunk_lines=2)
    got = {where: {n: (r["reason"], r.get("duplicate_of", {}).get("line"))
                   for n, r in records.items()}
           for where, records in drops.items()}
    assert got == {
        ("train", 0): {2: ("LengthFilter", None), 3: ("duplicate", 1)},  # "hello " differs
        ("train", 1): {1: ("duplicate", 4), 2: ("LengthFilter", None),
                       3: ("dev_overlap", 1), 4: ("duplicate", 2)},
        ("dev", 0): {3: ("duplicate", 2)}}
    assert drops[("train", 1)][1]["duplicate_of"] == {"split": "train", "dataset": "a.en",
                                                      "line": 4}
    assert drops[("train", 1)][3]["duplicate_of"] == {"split": "dev", "dataset": "dev.en",
                                                      "line": 1}
    assert dict(reports[("train", 1)]["reasons"]) == {"LengthFilter": 1, "dev_overlap": 1,
                                                      "duplicate": 2}
    # the dropped lines' bytes (with their newlines), per side
    assert reports[("train", 1)]["dropped_bytes"] == [4 + 25 + 4 + 2, 7 + 4 + 7 + 4]


def test_source_dedup_and_a_last_line_without_newline(tmp_path):
    a = _pair(tmp_path, "a", [("same", "一"), ("same", "二"), ("end", "尾"), ("end", "尾")],
              end="")
    cleaning = parse_cleaning_config(None, None, "source")
    drops, _ = run_clean_pairs(tmp_path / "work", [("train",) + a], cleaning)
    # OpusFilter compares lines as read: the last line lacks the newline the third has
    assert {n: r["reason"] for n, r in drops[("train", 0)].items()} == {2: "duplicate"}


def test_lowercase_dedup_option(tmp_path):
    a = _pair(tmp_path, "a", [("Hello", "你好"), ("hello", "你好"), ("HELLO!", "你好")])
    text = "remove_duplicates: {lowercase: true, letters_only: true}\n"
    drops, _ = run_clean_pairs(tmp_path / "work", [("train",) + a],
                               parse_cleaning_config(text, "c.yaml", "pairs"))
    assert sorted(drops[("train", 0)]) == [2, 3]


def test_nothing_dropped_writes_nothing(tmp_path):
    a = _pair(tmp_path, "a", [("hello", "你好"), ("bye", "再见")])
    drops, reports = run_clean_pairs(tmp_path / "work", [("train",) + a],
                                     parse_cleaning_config(CONFIG, "c.yaml", "pairs"))
    assert drops == {} and reports == {}


def test_decide_group_order_and_precedence():
    from transforms.clean.dedup_groups import LATER, Occurrences
    codec = Occurrences(["dev", "train"], ["LengthFilter"])

    def occ(split, index, number, reason=None):
        return codec.pack(split, index, number, reason, 7, 2, 3)
    group = [occ("train", 1, 5, "LengthFilter"), occ("train", 0, 9), occ("dev", 0, 3),
             occ("dev", 0, 2)]
    assert codec.unpack(group[0]) == ("train", 1, 5, "LengthFilter", 7, 2, 3)
    got = sorted(decide_group(group, codec, True, False))
    assert got == [(("dev", 0), (3, "duplicate", ["dev", 0, 2], None, None, 2, 3)),
                   (("train", 1), (5, "duplicate", ["train", 0, 9], None, None, 2, 3))]
    got = sorted(decide_group(group, codec, False, True))
    assert [(w, d[:3]) for w, d in got] == [(("train", 0), (9, "dev_overlap", ["dev", 0, 2])),
                                            (("train", 1), (5, "dev_overlap", ["dev", 0, 2]))]
    # the first occurrence awaiting the costly filters goes back to its chunk
    group = [occ("train", 0, 4, LATER), occ("train", 0, 8, LATER)]
    assert list(decide_group(group, codec, True, False)) == [
        ("pending", (("train", 0, 7), 4)),
        (("train", 0), (8, "duplicate", ["train", 0, 4], None, None, 2, 3))]


def test_is_dropped_bits():
    bitmap = bytes([0b00000101, 0b10000000])
    assert [n for n in range(1, 20) if is_dropped(bitmap, n)] == [1, 3, 16]


@pytest.mark.slow  # ~2 s: the encoder's vocabulary and fragments
def test_encoder_skips_the_dropped_lines(tmp_path):
    """Lines 1 and 4 are dropped: neither encoded nor rejected again by the encoder (their
    rejects are the cleaning stage's), line 2 is still rejected as empty."""
    import apache_beam as beam
    from apache_beam.testing.util import assert_that, equal_to

    from beam_unit import chunked_pair, encode_tiny_pairs, test_pipeline
    from transforms.cleaning.dropped_lines import mark, new_bitmap
    vocab, chunks = chunked_pair(tmp_path, ["hello", "", "world", "hello world"],
                                 ["你好", "世界", "世界", "你好世界"], split_at=2)
    bitmap = new_bitmap(4)
    mark(bitmap, 1)
    mark(bitmap, 4)
    (tmp_path / "d.dropped").write_bytes(bytes(bitmap))
    chunks = [dict(c, dropped=str(tmp_path / "d.dropped")) for c in chunks]
    with test_pipeline() as p:
        out = p | beam.Create(chunks) | encode_tiny_pairs(vocab, tmp_path, {"train": 1})
        assert_that(out.rejects | beam.MapTuple(lambda split, r: (r["where"], r["reason"])),
                    equal_to([("line 2", "empty_source")]), label="rejects")
        assert_that(out.records | beam.MapTuple(lambda where, f: f["records"])
                    | beam.CombineGlobally(sum), equal_to([1]), label="written")


def test_sampler_reads_only_the_kept_lines(tmp_path):
    """The vocab sample of a cleaned file is T2T's sample of the file of its kept lines."""
    from transforms.cleaning.dropped_lines import kept_lines, mark, new_bitmap
    from transforms.formats.text_lines import iter_raw_lines, sample_lines_for_vocab
    import io
    lines = [("line %d" % n).encode() for n in range(1, 201)]
    bitmap = new_bitmap(200)
    for n in range(1, 201, 3):
        mark(bitmap, n)
    kept = [line for n, line in enumerate(lines, 1) if n % 3 != 1]
    kept_file = b"".join(line + b"\n" for line in kept)
    whole = io.BytesIO(b"".join(line + b"\n" for line in lines))
    ours = list(sample_lines_for_vocab(kept_lines(iter_raw_lines(whole), bitmap),
                                       len(kept_file), 100))
    theirs = list(sample_lines_for_vocab(iter_raw_lines(io.BytesIO(kept_file)),
                                         len(kept_file), 100))
    assert ours == theirs and len(ours) > 3


def test_a_large_chunk_is_scored_in_batches(tmp_path, monkeypatch):
    """A chunk longer than SCORE_BATCH_PAIRS (a compressed file) is read, then scored in
    batches on any worker: the same drops."""
    from transforms.clean import clean_pairs
    pairs = [("pair %d" % (n % 7), "对 %d" % (n % 7)) if n % 3 else ("x", "y") for n in range(40)]
    a = _pair(tmp_path, "a", pairs)
    cleaning = parse_cleaning_config(CONFIG, "c.yaml", "pairs")
    whole, _ = run_clean_pairs(tmp_path / "w1", [("train",) + a], cleaning, chunk_lines=100)
    monkeypatch.setattr(clean_pairs, "SCORE_BATCH_PAIRS", 6)
    batched, _ = run_clean_pairs(tmp_path / "w2", [("train",) + a], cleaning, chunk_lines=100)
    assert batched == whole and len(whole[("train", 0)]) == 40 - 7


LATE_CONFIG = ("filters:\n  - LengthFilter: {unit: char, min_length: 2, max_length: 200}\n"
               "  - LangidFilter: {languages: [en, zh]}\n"
               "  - LengthRatioFilter: {unit: char, threshold: 3}\n")


@pytest.mark.parametrize("dedup", ["pairs", "none"])
def test_the_costly_filter_runs_after_dedup_with_the_reasons_of_the_file_order(
        tmp_path, monkeypatch, dedup):
    """LangidFilter (and the filter after it) runs only on the pairs the cheap filter and
    dedup kept, in whole chunks and in batches of a large one: every drop has the reason it
    has when each filter runs on every pair in the file's order, a duplicate `duplicate`."""
    import os

    from repo_paths import DATA_DIR
    from transforms.clean import clean_pairs
    from transforms.cleaning.config import CleaningConfig
    noisy = os.path.join(DATA_DIR, "noisy-enzh")
    with open(os.path.join(noisy, "train-b.en"), encoding="utf-8") as s, \
            open(os.path.join(noisy, "train-b.zh"), encoding="utf-8") as t:
        real = [(a.strip(), b.strip()) for a, b in zip(s, t)][:60]
    pairs = real + real[:20] + [("x", "一"), ("hello there", "你好")]
    a = _pair(tmp_path, "a", pairs)
    cleaning = parse_cleaning_config(LATE_CONFIG, "c.yaml", dedup)
    built = CleaningConfig(cleaning.filters).build_filters()
    expected, seen = {}, set()
    for number, pair in enumerate(pairs, 1):
        if dedup == "pairs" and pair in seen:
            expected[number] = "duplicate"
            continue
        seen.add(pair)
        reason = next((f.reason for f in built if not f.accept(*pair)), None)
        if reason:
            expected[number] = reason
    assert {"duplicate", "LengthFilter", "LangidFilter"} <= set(expected.values()) | (
        {"duplicate"} if dedup == "none" else set())
    whole, _ = run_clean_pairs(tmp_path / "w1", [("train",) + a], cleaning, chunk_lines=25)
    monkeypatch.setattr(clean_pairs, "SCORE_BATCH_PAIRS", 7)
    batched, reports = run_clean_pairs(tmp_path / "w2", [("train",) + a], cleaning,
                                       chunk_lines=1000)
    for drops in (whole, batched):
        assert {n: r["reason"] for n, r in drops[("train", 0)].items()} == expected
    assert reports[("train", 0)]["dropped"] == len(expected)


def test_decide_bucket_is_decide_group_per_key():
    """A bucket's decisions (lists per dataset and chunk, a key seen once decided without
    decide_group) are decide_group's of each of its keys."""
    from transforms.clean.dedup_groups import LATER, Occurrences, PENDING, decide_bucket
    codec = Occurrences(["dev", "train"], ["LengthFilter"])
    reasons = [None, LATER, "LengthFilter"]
    keyed, number = [], 0
    for key in range(12):  # keys of 1, 2 and 3 pairs, every reason, train and dev
        for i in range(1 + key % 3):
            number += 1
            split = "dev" if (key + i) % 4 == 0 else "train"
            reason = reasons[(key // 3 + i) % 3]
            keyed.append((b"k%d" % key, codec.pack(split, i % 2, number, reason,
                                                   10 * (number // 10), 1, 2)))
    lists = [keyed[:7], keyed[7:]]  # two chunks' lists of one bucket
    for dedup_on, overlap in ((True, False), (False, True), (True, True)):
        expected_drops, expected_pending = [], []
        for key in sorted({k for k, _ in keyed}):
            for where, decided in decide_group([p for k, p in keyed if k == key], codec,
                                               dedup_on, overlap):
                (expected_pending if where == PENDING else expected_drops).append(
                    decided if where == PENDING else (where, decided))
        drops, pending = [], []
        for out in decide_bucket((0, lists), codec, dedup_on, overlap):
            if getattr(out, "tag", None) == PENDING:
                pending += [(out.value[0], n) for n in out.value[1]]
            else:
                drops += [(out[0], drop) for drop in out[1]]
        assert sorted(drops) == sorted(expected_drops)
        assert sorted(pending) == sorted(expected_pending)
        assert pending and drops
