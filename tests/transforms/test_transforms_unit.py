"""PTransform unit tests on tiny inputs: each transform on its own, on TestPipeline.

The end-to-end job tests (marked slow) check that the transforms fit together; these check
what each one promises, in well under a second each: ScanTextFiles, SampleAndCountTokens
and its combine, MaterializeDatasets, WriteJsonResult, BuildTokenIndexes and
LearnSubwordVocabs (against the plain-Python reference learner).
"""

import collections
import dataclasses
import json
import os

import apache_beam as beam
import pytest
from hypothesis import given, settings, strategies as st
from apache_beam.testing.util import assert_that, equal_to

from beam_unit import test_pipeline, write
from pipeline.driver.options import default_config
from repo_paths import DATA_DIR
from transforms.codecs import subword_learner as learner
from transforms.elements import SampleFile
from transforms.codecs import tokenizer
from transforms.file_scan import ScanTextFiles
from transforms.json_result import WriteJsonResult
from transforms.materialize import MaterializeDatasets
from transforms.subword_refine import (BuildTokenIndexes, LearnSubwordVocabs,
                                       _RoundPlan, _work_items)
from transforms.token_counts import (SampleAndCountTokens, _SumCountsFn, count_lines_with,
                                     count_triples, with_rejected_lines)



# ScanTextFiles

def test_scan_counts_lines_bytes_seek_points_and_first_invalid_line(tmp_path):
    five = "one\ntwo\nthree\nfour\nfive"  # no final newline: still five lines
    files = {
        "five": write(tmp_path / "five.txt", five),
        "two": write(tmp_path / "two.txt", "a\nb\n"),
        "gz": write(tmp_path / "five.txt.gz", five),
        "bad": write(tmp_path / "bad.txt", b"ok\n\xff\xfe\nok\n"),
        "empty": write(tmp_path / "empty.txt", b""),
    }
    expected = [
        # a seek point at the start of every 2nd line; none at the very end of the file
        (files["five"], {"bytes": 23, "lines": 5, "checkpoints": [(0, 0), (2, 8), (4, 19)],
                         "first_invalid_utf8_line": None}),
        (files["two"], {"bytes": 4, "lines": 2, "checkpoints": [(0, 0)],
                        "first_invalid_utf8_line": None}),
        # sizes of the decompressed text; a compressed stream is read whole (no seek points)
        (files["gz"], {"bytes": 23, "lines": 5, "checkpoints": [(0, 0)],
                       "first_invalid_utf8_line": None}),
        (files["bad"], {"bytes": 9, "lines": 3, "checkpoints": [(0, 0), (2, 6)],
                        "first_invalid_utf8_line": 2}),
        (files["empty"], {"bytes": 0, "lines": 0, "checkpoints": [(0, 0)],
                          "first_invalid_utf8_line": None}),
    ]
    with test_pipeline() as p:
        scanned = p | beam.Create(sorted(files.values())) | ScanTextFiles(chunk_lines=2)
        assert_that(scanned, equal_to(expected))


# SampleAndCountTokens

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


_line = st.one_of(st.text(alphabet="ab c\r\t中", max_size=12).map(lambda t: t.encode()),
                  st.just(b"\xff\xfe bad"), st.just(b""))


@settings(max_examples=400, deadline=None)
@given(lines=st.lists(_line, max_size=60), trailing_newline=st.booleans(),
       budget=st.integers(min_value=1, max_value=400), size_factor=st.sampled_from([1, 3, 9]),
       part_bytes=st.integers(min_value=1, max_value=80))
def test_sample_parts_give_exactly_the_whole_files_sample(lines, trailing_newline, budget,
                                                          size_factor, part_bytes):
    """Planned parts (each read from its own start byte) hold exactly T2T's sample of the
    file, in order: any stride (the size sets it), budget, part size, invalid lines passed
    over, \r, empty lines, with or without a final newline."""
    import io
    from transforms.formats.text_lines import (iter_raw_lines, plan_sample_parts,
                                       sample_lines_for_vocab, sample_part_lines)
    data = b"\n".join(lines) + (b"\n" if trailing_newline and lines else b"")
    size = len(data) * size_factor  # a size beyond the bytes read makes the stride larger
    whole = list(sample_lines_for_vocab(iter_raw_lines(io.BytesIO(data)), size, budget,
                                        on_invalid="reject"))
    parts = plan_sample_parts(iter_raw_lines(io.BytesIO(data)), size, budget, part_bytes,
                              on_invalid="reject")
    from_parts = []
    for part in parts:
        stream = io.BytesIO(data)
        stream.seek(part[0])
        from_parts.extend(sample_part_lines(iter_raw_lines(stream), size, budget, part,
                                            on_invalid="reject"))
    assert from_parts == whole
    assert all(a[1] <= b[0] for a, b in zip(parts, parts[1:]))


@pytest.mark.slow
def test_sample_in_parts_counts_as_the_whole_file(tmp_path):
    """A real corpus file sampled in 2 KB parts, on TestPipeline: the totals and file
    statistics of T2T's whole-file sample; an invalid line is reported with its own number
    whether or not parts were asked for."""
    from transforms.formats.text_lines import iter_raw_lines, plan_sample_parts, sample_lines_for_vocab
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
            assert len(plan_sample_parts(iter_raw_lines(f), len(data), budget, 2048)) > 10
        counts = collections.Counter(t for line in sample for t in tokenizer.encode(line))
        assert 100 < len(sample) < 7000 or budget == 1e8
        with test_pipeline() as p:
            out = (p | beam.Create([SampleFile("v", plain, len(data))])
                   | SampleAndCountTokens(["v"], budget, part_bytes=2048))
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
    fn = _SumCountsFn()
    parts = [{"a": 1, "b": 2}, {"b": 3}, {}, {"a": 5, "c": 1, "d": 1}]
    accs = [fn.add_input(fn.create_accumulator(), part) for part in parts]
    assert fn.extract_output(fn.merge_accumulators(accs)) == {"a": 6, "b": 5, "c": 1, "d": 1}
    assert sorted(count_triples(("v", {"x": 2, "y": 1}))) == [("v", "x", 2), ("v", "y", 1)]
    with test_pipeline() as p:
        summed = (p | beam.Create([("v", part) for part in parts] + [("w", {"z": 1})])
                  | beam.CombinePerKey(_SumCountsFn())
                  | beam.MapTuple(lambda n, c: (n, sorted(c.items()))))
        assert_that(summed, equal_to([("v", [("a", 6), ("b", 5), ("c", 1), ("d", 1)]),
                                      ("w", [("z", 1)])]))


# MaterializeDatasets

SETTINGS = default_config(encode_chunk_lines=1, source_lang="en", target_lang="zh",
                          source_column=0, target_column=1, on_misaligned="reject",
                          on_invalid_utf8="error", max_line_chars=10).read


def _dataset(fmt, source, target=None, index=0):
    return {"split": "train", "index": index, "name": os.path.basename(source), "format": fmt,
            "source": source, "target": target}


def _read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def _materialized(facts):
    """A fact dict as (written lines, rejects) so a test can compare it."""
    if "error" in facts:
        return facts["split"], facts["index"], "error", facts["error"]
    rejects = [(r["ordinal"], r["where"], r["reason"], r["source"], r["target"])
               for r in map(json.loads, _read_lines(facts["rejects_path"]))]
    return (facts["split"], facts["index"], facts["units"], _read_lines(facts["source_path"]),
            _read_lines(facts["target_path"]), facts["facts"]["source"]["checkpoints"],
            sorted(facts["rejected_by_reason"].items()), rejects)


def test_materialize_tsv_and_misaligned_lines_into_line_pairs_and_rejects(tmp_path):
    tsv = write(tmp_path / "a.tsv",
                "hello\tnihao\n\tempty source\ntoo-few\nlong long long\tx\r\nlast\tone\n")
    src = write(tmp_path / "b.en", "one\ntwo\r\nthree\n")
    tgt = write(tmp_path / "b.zh", "yi\ner\n")
    with test_pipeline() as p:
        facts = (p | beam.Create([_dataset("tsv", tsv), _dataset("lines", src, tgt, index=1)])
                 | MaterializeDatasets(str(tmp_path / "work"), SETTINGS)
                 | beam.Map(_materialized))
        assert_that(facts, equal_to([
            ("train", 0, 5, ["hello", "last"], ["nihao", "one"], [(0, 0), (1, 6)],
             [("empty_source", 1), ("line_too_long", 1), ("too_few_columns", 1)],
             [(2, "line 2", "empty_source", "", "empty source"),
              (3, "line 3", "too_few_columns", "too-few", ""),
              (4, "line 4", "line_too_long", "long long long", "x")]),
            ("train", 1, 3, ["one", "two"], ["yi", "er"], [(0, 0), (1, 4)],
             [("unmatched_source_line", 1)],
             [(3, "line 3", "unmatched_source_line", "three", "")]),
        ]))


def test_materialize_reports_errors_as_facts_not_exceptions(tmp_path):
    tsv = write(tmp_path / "a.tsv", "hello\tnihao\ntoo-few\n")
    bad = write(tmp_path / "bad.tsv", b"ok\tok\n\xff\tx\n")
    settings = dataclasses.replace(SETTINGS, on_misaligned="error")
    with test_pipeline() as p:
        facts = (p | beam.Create([_dataset("tsv", tsv), _dataset("tsv", bad, index=1)])
                 | MaterializeDatasets(str(tmp_path / "work"), settings)
                 | beam.Map(lambda f: (f["index"], f.get("error", "")))
                 | beam.MapTuple(lambda i, e: (i, ("too few columns" in e and "a.tsv" in e,
                                                   "invalid UTF-8" in e and "bad.tsv" in e))))
        assert_that(facts, equal_to([(0, (True, False)), (1, (False, True))]))


# WriteJsonResult

def test_json_result_gathers_named_pcollections_into_one_file(tmp_path):
    path = str(tmp_path / "result.json")
    with test_pipeline() as p:
        named = {"numbers": p | "Numbers" >> beam.Create([3, 1, 2]),
                 "dicts": p | "Dicts" >> beam.Create([{"a": [1, 2]}]),
                 "nothing": p | "Nothing" >> beam.Create([])}
        assert_that(named | WriteJsonResult(path), equal_to([path]))
    with open(path) as f:
        result = json.load(f)
    assert sorted(result) == ["dicts", "numbers"]  # an empty PCollection leaves no key
    assert sorted(result["numbers"]) == [1, 2, 3] and result["dicts"] == [{"a": [1, 2]}]


def test_json_result_of_nothing_is_an_empty_object(tmp_path):
    path = str(tmp_path / "empty.json")
    with test_pipeline() as p:
        _ = {"x": p | beam.Create([])} | WriteJsonResult(path)
    with open(path) as f:
        assert json.load(f) == {}


# BuildTokenIndexes and LearnSubwordVocabs

TARGET = 120


@pytest.fixture(scope="module")
def tiny_counts():
    """T2T token counts of the first 30 lines of an English and a German file."""
    counts = {}
    for name, side in (("de", "ende-opennmt/train.de"), ("en", "enzh-mlqe-pe/train.en")):
        c = collections.Counter()
        with open(os.path.join(DATA_DIR, side), encoding="utf-8") as f:
            for _, line in zip(range(30), f):
                c.update(tokenizer.encode(line.strip()))
        counts[name] = dict(c)
    return counts


def _chosen(reports):
    """[(round, {(name, min_count): vocab})] -> [(name, probes still wanted, chosen vocab)]."""
    vocabs, sizes = {}, collections.defaultdict(dict)
    for _, round_vocabs in reports:
        vocabs.update(round_vocabs)
        for (name, min_count), vocab in round_vocabs.items():
            sizes[name][min_count] = len(vocab)
    out = []
    for name in sorted(sizes):
        chosen, wanted = learner.next_probes(sizes[name], TARGET, 0)
        out.append((name, wanted, vocabs.get((name, chosen))))
    return out


def test_build_token_indexes_writes_an_index_per_vocab(tiny_counts, tmp_path):
    from transforms.codecs.subword_index import TokenIndex
    with test_pipeline() as p:
        infos = (p | beam.Create(sorted(tiny_counts.items()))
                 | BuildTokenIndexes(str(tmp_path), 200)
                 | beam.MapTuple(lambda n, info: (n, os.path.basename(info["path"]),
                                                  info["alphabet"], info["distinct_tokens"])))
        assert_that(infos, equal_to([
            (name, name + ".npz", sorted(learner.build_alphabet(counts)), len(counts))
            for name, counts in tiny_counts.items()]))
    for name, counts in tiny_counts.items():
        with open(tmp_path / (name + ".npz"), "rb") as f:
            index = TokenIndex.load(f.read())
        alphabet = sorted(learner.build_alphabet(counts))
        assert (learner.refine_indexed(index, alphabet, [3])
                == learner.refine(counts.items(), alphabet, [3], 200))


def test_learn_subword_vocabs_equals_the_reference_learner(tiny_counts, tmp_path):
    expected = [(name, [], learner.learn_vocab(counts, TARGET, 200, indexed=False))
                for name, counts in sorted(tiny_counts.items())]
    with test_pipeline() as p:
        learnt = (p | beam.Create(sorted(tiny_counts.items()))
                  | BuildTokenIndexes(str(tmp_path), 200)
                  | LearnSubwordVocabs(["de", "en"], TARGET, num_partitions=2, rounds=2))
        chosen = learnt["vocabs"] | beam.combiners.ToList() | beam.FlatMap(_chosen)
        assert_that(chosen, equal_to(expected), label="Chosen")
        # every round's probes are reported, and each probe has 4 iterations of sizes
        rounds = learnt["probes"] | beam.MapTuple(lambda r, probes: (r, sorted(probes)))
        assert_that(rounds, equal_to([(1, ["de"]), (1, ["en"]), (2, ["de"]), (2, ["en"])]),
                    label="Rounds")  # one report per vocabulary and round
        iterations = (learnt["sizes"] | beam.MapTuple(lambda r, it, sizes: it)
                      | beam.Distinct())
        assert_that(iterations, equal_to([1, 2, 3, 4]), label="Iterations")


def test_learn_subword_vocabs_does_no_work_once_the_search_is_decided(tiny_counts):
    from transforms.codecs.subword_index import TokenIndex
    counts = tiny_counts["en"]
    alphabet = sorted(learner.build_alphabet(counts))
    index = TokenIndex.build(counts.items(), 200)
    known = {}

    def size_of(min_count, _lo, _hi):
        known[min_count] = len(learner.refine_indexed(index, alphabet, [min_count])[min_count])
        return known[min_count]

    learner.bisect_min_count(TARGET, size_of)
    # The index file does not exist: loading it would fail the test.
    info = {"path": "/nonexistent/en.npz", "alphabet": alphabet, "distinct_tokens": len(counts)}
    with test_pipeline() as p:
        learnt = (p | beam.Create([("en", info)])
                  | LearnSubwordVocabs(["en"], TARGET, num_partitions=2, rounds=1,
                                       known={"en": known}))
        assert_that(learnt["vocabs"], equal_to([]), label="Vocabs")
        assert_that(learnt["probes"], equal_to([]), label="Probes")
        assert_that(learnt["sizes"], equal_to([]), label="Sizes")


def test_refinement_round_planning_pieces():
    assert list(_work_items(("v", {"path": "p"}), 3)) == [
        ("v", {"path": "p"}, 0), ("v", {"path": "p"}, 1), ("v", {"path": "p"}, 2)]
    # sizes known before the pipeline and learnt by earlier rounds (other vocabularies' too)
    learnt = [(("v", 250), 150), (("v", 375), 120), (("w", 1), 5)]
    plan = _RoundPlan({"v": {500: 90}, "w": {}}, 100, 0, None, 1)
    assert plan("v", learnt) == [437]  # 500 -> 90 < 100, 250 -> 150, 375 -> 120: then 437
    # width 2: the node after it on the path the known sizes predict (437 -> ~103 > 100)
    assert _RoundPlan({"v": {500: 90}}, 100, 0, None, 2)("v", learnt) == [437, 468]
    # the first probe of a fresh search is the middle of T2T's [1, 1000]; nothing to guess from
    assert _RoundPlan({"v": {}}, 100, 0, None, 2)("v", []) == [500]
    assert _RoundPlan({"v": {}}, 100, 1, None, 1)("v", []) == [250, 500, 750]
    assert plan.rank("v") == 0 and plan.rank("w") == 1


def test_rounds_take_the_index_built_in_their_process_and_idle_shares_load_it(
        tiny_counts, tmp_path, monkeypatch):
    """The process that built a vocabulary's index gives it to the rounds (the same object,
    no file read); a work item with no probe in a round of a search still going on loads its
    index then, for the rounds to come (it would otherwise load it in the next round, where
    every item has probes)."""
    from apache_beam.utils import shared
    from transforms import subword_refine
    from transforms.storage.object_stores import StoreSettings
    handles = {"de": shared.Shared(), "en": shared.Shared()}
    build = subword_refine._BuildIndexFn(str(tmp_path), 200, StoreSettings(), handles)
    build.setup()
    (name, info), = build.process(("de", tiny_counts["de"]))
    loads = []
    real_load = subword_refine._load_index
    monkeypatch.setattr(subword_refine, "_load_index",
                        lambda path, stores=None: loads.append(path) or real_load(path, stores))

    def round_fn(known):
        plan = subword_refine._RoundPlan(known, TARGET, 0, 10, 2)
        fn = subword_refine._RefineProbesFn(1, 2, 4, learner.RESERVED_TOKENS, handles, plan,
                                            StoreSettings())
        fn.setup()
        return fn

    fn = round_fn({"de": {}, "en": {}})
    rank = fn._plan.rank("de")
    busy = list(fn.process((name, info, (0 - rank) % 2)))  # the share with round 1's probe
    assert busy and loads == []  # the probe ran on the index as built
    assert fn._indexes[info["path"]] is build._built[info["path"]]
    # another process (a fresh handle map stands in for one): the idle share loads the index
    handles["de"] = shared.Shared()
    idle = round_fn({"de": {}, "en": {}})
    assert list(idle.process((name, info, (1 - rank) % 2))) == []
    assert loads == [info["path"]] and info["path"] in idle._indexes
    # a decided search: an idle item loads nothing
    decided = round_fn({"de": {m: TARGET for m in range(1, 1001)}, "en": {}})
    assert list(decided.process((name, info, 1))) == [] and loads == [info["path"]]
