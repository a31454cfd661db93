"""Many language pairs in one job (`--corpora`), end to end on real corpora.

One module-scoped 3-pair job (en-zh, en-de and a tiny en-vi with weight 2) proves several
things at once: the vocabulary sample's shares are the temperature formula's, the shared
subword vocabulary is T2T's `SubwordTextEncoder` over exactly the mixed sample's lines (its
language tags reserved, as T2T's `reserved_tokens`), every input starts with its target
language's tag, and `inspect` shows it. A one-entry corpora file writes what the
single-pair flags write, byte for byte.
"""

import json
import os

import pytest

from datagen_helpers import output_bytes, read_examples
from many_pairs_corpora import CORPORA, corpora_file
from pipeline import datagen
from pipeline.tools import inspect
import t2t_reference as t2t

pytestmark = pytest.mark.slow

VOCAB_SIZE = 600


@pytest.fixture(scope="module")
def three_pairs(tmp_path_factory):
    base = tmp_path_factory.mktemp("many_pairs")
    corpora = corpora_file(str(base / "data"))
    out = base / "out"
    summary = datagen.run(["--corpora", corpora, "--output_dir", str(out), "--problem", "p",
                           "--vocab_size", str(VOCAB_SIZE), "--runner", "FnApiRunner"])
    return base, out, summary


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f.read().split("\n")[:-1]]


def test_the_sample_shares_are_the_temperature_formula(three_pairs):
    base, _, summary = three_pairs
    mix = summary["vocab"]["shared"]["mix"]
    assert mix["sampling_temperature"] == 5.0
    # n_l: lines of language l over every corpus; w_l: its corpora's weights, by lines
    lines = {"en": 300 + 200 + 60, "zh": 300, "de": 200, "vi": 60}
    weight = {"en": (300 + 200 + 60 * 2.0) / 560, "zh": 1.0, "de": 1.0, "vi": 2.0}
    total = sum(lines.values())
    raw = {lang: (n / total) ** (1 / 5.0) * weight[lang] for lang, n in lines.items()}
    for lang, figures in mix["languages"].items():
        assert figures["lines"] == lines[lang]
        assert figures["share"] == pytest.approx(raw[lang] / sum(raw.values()), rel=1e-12)
    # the sample holds as many lines as the data, each language its share (within a line)
    assert mix["sample_lines"] == total
    sampled = {lang: f["sampled_lines"] for lang, f in mix["languages"].items()}
    assert sum(sampled.values()) == total
    for lang, n in sampled.items():
        assert abs(n - total * mix["languages"][lang]["share"]) < 1
        assert mix["languages"][lang]["sampled_bytes"] >= mix["languages"][lang][
            "sampled_chars"] > 0
    assert sampled["vi"] > 60  # the small language is upsampled


def test_the_shared_vocabulary_is_t2ts_over_the_mixed_sample(three_pairs):
    base, out, summary = three_pairs
    files = {f["path"]: f["sampled_lines"] for f in summary["vocab"]["shared"]["files"]}
    sample = []
    for name, src, tgt, *_ in CORPORA:  # corpus by corpus, source side then target side
        for lang in (src, tgt):
            path = str(base / "data" / name / ("train." + lang))
            lines = _lines(path)
            take = files[path]
            for j, line in enumerate(lines):  # line j taken floor((j+1)k/n) - floor(jk/n) times
                sample += [line] * (((j + 1) * take) // len(lines) - (j * take) // len(lines))
    tags = ["<2de>", "<2vi>", "<2zh>"]
    reference = t2t.t2t_build_vocab_from_lines(
        sample, VOCAB_SIZE, 200, reserved_tokens=list(t2t.text_encoder.RESERVED_TOKENS) + tags)
    with open(out / ("vocab.p.%d.subwords" % VOCAB_SIZE), "rb") as f:
        ours = f.read()
    assert ours == t2t.t2t_vocab_bytes(reference)
    assert ours.split(b"\n")[:5] == [b"'<pad>_'", b"'<EOS>_'", b"'<2de>_'", b"'<2vi>_'",
                                     b"'<2zh>_'"]


def test_every_input_starts_with_its_target_languages_tag(three_pairs):
    base, out, summary = three_pairs
    assert summary["lang_tags"] == {"de": {"token": "<2de>", "id": 2},
                                    "vi": {"token": "<2vi>", "id": 3},
                                    "zh": {"token": "<2zh>", "id": 4}}
    encoder = t2t.t2t_encoder_from_file(out / ("vocab.p.%d.subwords" % VOCAB_SIZE))
    expected = {}
    for name, src, tgt, *_ in CORPORA:
        tag = summary["lang_tags"][tgt]["id"]
        for a, b in zip(_lines(str(base / "data" / name / ("train." + src))),
                        _lines(str(base / "data" / name / ("train." + tgt)))):
            if a and b:
                expected[(tag,) + tuple(encoder.encode(a)) + (1,)] = tuple(
                    encoder.encode(b)) + (1,)
    written = {}
    for shard in summary["splits"]["train"]["shards"]:
        written.update(read_examples(str(out / shard["name"])))
    assert written == expected
    report = inspect.inspect(str(out), num_records=100, seed=2)
    shown = {r["source"].split(" ", 1)[0] for r in report["records"]}
    assert shown == {"<2de>", "<2vi>", "<2zh>"}
    assert all(r["inputs"][0] in (2, 3, 4) for r in report["records"])


def test_one_corpus_is_the_single_pair_flags_byte_for_byte(tmp_path):
    data = tmp_path / "data"
    corpora = corpora_file(str(data), CORPORA[2:])
    name, src, tgt = CORPORA[2][:3]
    flags = ["--problem", "p", "--vocab_size", "300", "--num_train_shards", "3",
             "--runner", "FnApiRunner"]
    from_flags = datagen.run(["--output_dir", str(tmp_path / "flags"), "--train_source",
                              str(data / name / ("train." + src)), "--train_target",
                              str(data / name / ("train." + tgt))] + flags)
    from_file = datagen.run(["--output_dir", str(tmp_path / "file"), "--corpora", corpora]
                            + flags)
    # the vocabulary's sidecar records how it was asked for (a corpora file)
    sidecars = lambda files: {k: v for k, v in files.items() if not k.startswith(".vocab")}
    assert sidecars(output_bytes(tmp_path / "file")) == sidecars(output_bytes(tmp_path / "flags"))
    assert "lang_tags" not in from_file and "mix" not in from_file["vocab"]["source"]
    for key in ("splits", "lengths"):
        assert json.dumps(from_file[key]).replace("/file/", "/x/") == json.dumps(
            from_flags[key]).replace("/flags/", "/x/")


LINES = {name: lines for name, _, _, _, _, lines, _ in CORPORA}


def test_each_pair_has_its_own_shards_books_and_lengths(three_pairs):
    base, out, summary = three_pairs
    train = summary["splits"]["train"]
    pairs = train["language_pairs"]
    # --num_train_shards 10 shared by the pairs' lines: 300, 200 and 60 of 560
    assert {pair: len(entry["shards"]) for pair, entry in pairs.items()} == {
        "en-de": 4, "en-vi": 1, "en-zh": 5}
    assert pairs["en-de"]["shards"] == ["p~en-de-train-%05d-of-00004" % i for i in range(4)]
    assert sorted(name for name in os.listdir(out) if name.startswith("p~")) == sorted(
        name for entry in pairs.values() for name in entry["shards"])
    import tensorflow as tf
    parse = tf.train.Example.FromString
    for pair, entry in pairs.items():
        assert entry["pairs_read"] == LINES[pair]
        assert entry["pairs_read"] == entry["pairs_written"] + entry["pairs_rejected"]
        assert entry["weight"] == (2.0 if pair == "en-vi" else 1.0)
        tag = summary["lang_tags"][pair.split("-")[1]]["id"]
        records = 0
        for name in entry["shards"]:
            for raw in tf.data.TFRecordDataset(str(out / name)).as_numpy_iterator():
                feature = parse(raw).features.feature
                assert feature["lang_pair"].bytes_list.value == [pair.encode()]
                assert feature["inputs"].int64_list.value[0] == tag
                records += 1
        assert records == entry["pairs_written"]
        lengths = summary["lengths"]["pairs"][pair]["train"]
        assert lengths["pairs"] == entry["pairs_written"]
    assert sum(entry["pairs_written"] for entry in pairs.values()) == train["pairs_written"]
    with open(out / "p.lengths.html", encoding="utf-8") as f:
        page = f.read()
    assert "Per language pair" in page and ">en-vi</td>" in page
    report = inspect.inspect(str(out), num_records=50, seed=1)
    assert {r["lang_pair"] for r in report["records"]} == set(pairs)
    # a reader finds a pair's own shards complete (the marker is the problem's)
    from pipeline.tools.reader import make_dataset
    batched = make_dataset(str(out / "p~en-vi-train-*"), batch_size=4096, mode="t2t",
                           shuffle=False, drop_long_sequences=False)
    assert sum(int(b["inputs"].shape[0]) for b in batched) == pairs["en-vi"]["pairs_written"]


def _within_sampling_error(counts, rates, n):
    for pair, rate in rates.items():
        sigma = (rate * (1 - rate) / n) ** 0.5
        assert abs(counts.get(pair, 0) / n - rate) < 4 * sigma + 1e-9, (pair, counts, rates)


def test_the_mixture_reader_realizes_its_rates(three_pairs):
    import collections
    from pipeline.tools import batches
    from pipeline.tools.mixture import Mixture
    from transforms.pairs import mixing
    _, out, summary = three_pairs
    books = summary["splits"]["train"]["language_pairs"]
    n = 8000
    mixed = Mixture(str(out), temperature=2.0, seed=7, num_records=n)
    assert mixed.rates == mixing.temperature_shares(
        {pair: [(entry["pairs_written"], entry["weight"])] for pair, entry in books.items()}, 2.0)
    stream = list(mixed.records())
    assert len(stream) == n
    _within_sampling_error(collections.Counter(pair for pair, _ in stream), mixed.rates, n)
    # each record is its pair's (the tags say so); the same seed gives the same stream
    tags = {entry["id"]: lang for lang, entry in summary["lang_tags"].items()}
    from transforms.formats.example_proto import Int64FeaturesWriter
    parse = Int64FeaturesWriter()
    assert all(tags[parse.parse(record)["inputs"][0]] == pair.split("-")[1]
               for pair, record in stream[:500])
    assert [pair for pair, _ in Mixture(str(out), temperature=2.0, seed=7,
                                        num_records=300).records()] == [
        pair for pair, _ in stream[:300]]
    assert [pair for pair, _ in Mixture(str(out), temperature=2.0, seed=8,
                                        num_records=300).records()] != [
        pair for pair, _ in stream[:300]]
    # given rates: a pair left out is not read; a small pair is read again and again
    given = Mixture(str(out), rates={"en-de": 1, "en-vi": 3}, seed=1, num_records=n)
    assert given.rates == {"en-de": 0.25, "en-vi": 0.75}
    counts = collections.Counter(pair for pair, _ in given.records())
    _within_sampling_error(counts, given.rates, n)
    assert counts["en-vi"] > 60 * 50
    pairs = list(batches.mixture_pairs(Mixture(str(out), seed=3, num_records=100)))
    assert len(pairs) == 100 and all(len(inputs) for inputs, _ in pairs)
    # tf.data: TensorFlow's own seeded sampling at the same rates
    import tensorflow as tf
    from pipeline.tools.reader import make_dataset
    records = Mixture(str(out), temperature=1.0, seed=5, num_records=4000).tf_records(tf)
    counts = collections.Counter(
        tf.train.Example.FromString(raw).features.feature["lang_pair"].bytes_list.value[0]
        .decode() for raw in records.as_numpy_iterator())
    _within_sampling_error(counts, Mixture(str(out), temperature=1.0).rates, 4000)
    batched = make_dataset(Mixture(str(out), seed=5, num_records=700), batch_size=512,
                           mode="t2t", shuffle=False, max_length=1000)
    assert sum(int(b["inputs"].shape[0]) for b in batched) == 700
    with pytest.raises(ValueError, match="no language pair en-fr"):
        Mixture(str(out), rates={"en-fr": 1})


def test_mix_shards_write_one_set_at_the_rates_in_parquet(tmp_path):
    import pyarrow.parquet as pq
    corpora = corpora_file(str(tmp_path / "data"))
    out = tmp_path / "out"
    summary = datagen.run(["--corpora", corpora, "--output_dir", str(out), "--problem", "p",
                           "--vocab_type", "word", "--vocab_size", "300", "--mix_shards",
                           "--num_train_shards", "3", "--output_format", "parquet",
                           "--runner", "FnApiRunner"])
    train = summary["splits"]["train"]
    assert [s["name"] for s in train["shards"]] == [
        "p-train-%05d-of-00003.parquet" % i for i in range(3)]
    books = train["language_pairs"]
    from transforms.pairs import mixing
    rates = mixing.temperature_shares(
        {name: [(lines, weight)] for name, _, _, _, _, lines, weight in CORPORA}, 5.0)
    # the largest pair against its rate is written once, the others repeated to their rates
    total = max(LINES[pair] / rate for pair, rate in rates.items())
    rows = {}
    for shard in train["shards"]:
        table = pq.read_table(str(out / shard["name"]))
        for pair, inputs, targets in zip(table.column("lang_pair").to_pylist(),
                                         table.column("inputs").to_pylist(),
                                         table.column("targets").to_pylist()):
            rows.setdefault(pair, []).append((tuple(inputs), tuple(targets)))
    for pair, entry in books.items():
        assert entry["shards"] == []
        planned = max(LINES[pair], round(total * rates[pair]))
        # a rejected line's repeats are not written either
        most = entry["pairs_rejected"] * -(-planned // LINES[pair])
        assert planned - most <= entry["records"] == len(rows[pair]) <= planned
        assert len(set(rows[pair])) <= entry["pairs_written"]
    assert train["records"] == sum(len(r) for r in rows.values())
    assert abs(len(rows["en-vi"]) / train["records"] - rates["en-vi"]) < 0.01
    assert summary["splits"]["train"]["pairs_written"] == sum(
        entry["pairs_written"] for entry in books.values())
    # the table has the records written, repeats included (issue 50, item 17: they were in
    # the summary JSON only)
    from pipeline.output.summary import format_summary
    table = format_summary(summary).splitlines()
    assert table[table.index(next(line for line in table if line.startswith("split")))].split(
        ) == ["split", "read", "written", "rejected", "shards", "records"]
    [train_line] = [line for line in table if line.split()[:2] == ["train", str(
        train["pairs_read"])]]
    assert train_line.split()[-1] == str(train["records"])
    for pair, entry in books.items():
        [line] = [line for line in table if line.strip().startswith(pair + " ")]
        assert line.split()[-2:] == ["-", str(entry["records"])]


def test_a_rerun_is_a_no_op_and_an_edited_corpora_file_is_refused(three_pairs):
    base, out, summary = three_pairs
    corpora = str(base / "data" / "corpora.yaml")
    flags = ["--corpora", corpora, "--output_dir", str(out), "--problem", "p", "--vocab_size",
             str(VOCAB_SIZE), "--runner", "FnApiRunner"]
    assert datagen.run(flags)["noop"]
    with open(corpora) as f:
        edited = json.load(f)
    edited["corpora"][2]["weight"] = 3.0
    other = base / "data" / "edited.yaml"
    other.write_text(json.dumps(edited))
    from pipeline.runtime.errors import DatagenError
    with pytest.raises(DatagenError) as refused:
        datagen.run(flags[:1] + [str(other)] + flags[2:])
    # what changed, not both whole lists (issue 50, item 17)
    assert "--corpora: corpora[2] (en-vi): weight 2.0 -> 3.0; pass --overwrite" in str(
        refused.value)
    assert "en-zh" not in str(refused.value), refused.value


def test_the_readme_example_runs_as_written(tmp_path):
    """docs/many-pairs.md's commands (its `many-pairs` example), from a directory holding the
    project's `sample_data` (python: this interpreter)."""
    import shlex
    import subprocess
    import sys
    import readme_examples
    from repo_paths import REPO_ROOT
    block = readme_examples.shell_script("many-pairs")
    os.symlink(os.path.join(REPO_ROOT, "sample_data"), tmp_path / "sample_data")
    outputs = []
    for command in block.replace("\\\n", " ").strip().split("\n")[1:]:  # after `set -e...`
        argv = shlex.split(command)
        assert argv[0] == "python"
        done = subprocess.run([sys.executable] + argv[1:], cwd=str(tmp_path), env=dict(
            os.environ, PYTHONPATH=REPO_ROOT), capture_output=True, text=True, timeout=1200)
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append(done.stdout)
    summary = json.loads((tmp_path / "local_output" / "many-pairs" /
                          "translate_many.datagen_summary.json").read_text())
    assert set(summary["splits"]["train"]["language_pairs"]) == {"en-de", "en-vi", "en-zh"}
    for line in ("language tags (reserved ids 2-4): <2de> <2vi> <2zh>",
                 "  en-vi                  pair        100        100          0       1"):
        assert line in outputs[0]
    assert "source: <2" in outputs[1]


def test_cleaning_takes_each_pairs_languages_and_dedups_within_a_pair(tmp_path):
    """Two pairs with the same English lines: en-de, and en-xx whose target is the German
    text under a language code py3langid does not know. One LangidFilter without languages:
    each pair's own (en-de kept, en-xx refused); `--dedup source` within a pair (the
    English lines of en-xx are not duplicates of en-de's)."""
    data = tmp_path / "data"
    corpora = corpora_file(str(data), [CORPORA[1][:5] + (150, 1.0)])
    os.makedirs(data / "en-xx")
    for lang, name in (("en", "train.en"), ("de", "train.xx")):
        (data / "en-xx" / name).write_bytes((data / "en-de" / ("train." + lang)).read_bytes())
    with open(corpora) as f:
        entries = json.load(f)["corpora"]
    entries.append({"name": "en-xx", "source_lang": "en", "target_lang": "xx",
                    "train": {"source": "en-xx/train.en", "target": "en-xx/train.xx"}})
    (data / "corpora.yaml").write_text(json.dumps({"corpora": entries}))
    (tmp_path / "filters.yaml").write_text("filters:\n  - LangidFilter: {}\n")
    summary = datagen.run(["--corpora", corpora, "--output_dir", str(tmp_path / "out"),
                           "--filters", str(tmp_path / "filters.yaml"), "--dedup", "source",
                           "--vocab_type", "word", "--vocab_size", "300",
                           "--runner", "FnApiRunner"])
    pairs = summary["splits"]["train"]["language_pairs"]
    ende, enxx = pairs["en-de"], pairs["en-xx"]
    assert ende["pairs_written"] > 0.8 * 150
    assert enxx["pairs_written"] == 0
    assert set(enxx["rejected_by_reason"]) <= {"LangidFilter", "duplicate", "empty_source"}
    # the duplicates en-xx has are its own lines' (as en-de's), not en-de's lines again
    assert enxx["rejected_by_reason"].get("duplicate", 0) == ende["rejected_by_reason"].get(
        "duplicate", 0)
    mix = summary["vocab"]["shared"]["mix"]["languages"]
    assert mix["xx"]["lines"] == 0 and mix["xx"]["sampled_lines"] == 0
    assert mix["de"]["sampled_lines"] == mix["de"]["sample_lines"] > 0


PACKED_LENGTH, MAX_LENGTH = 128, 100


def _records(path):
    """Every record of a TFRecord shard as {feature: ints, lang_pair: str}."""
    import tensorflow as tf
    from transforms.formats.example_proto import Int64FeaturesWriter
    examples = Int64FeaturesWriter()
    out = []
    for raw in tf.data.TFRecordDataset(str(path)).as_numpy_iterator():
        features = examples.parse_all(raw)
        features["lang_pair"] = features["lang_pair"].decode()
        out.append(features)
    return out


def _t2t_packed(records):
    """T2T 1.15.7's `pack_examples` of `records` as `Text2TextProblem` packs a shard."""
    return list(t2t.generator_utils.pack_examples(
        [{"inputs": r["inputs"], "targets": r["targets"]} for r in records], True,
        PACKED_LENGTH, spacing=0, chop_long_sequences=False))


def test_packing_and_max_length_per_pair_and_on_mixed_shards(tmp_path):
    """--packed_length with several pairs packs each shard as T2T packs it, per language
    pair: a pair's own shards are T2T's `pack_examples` of the unpacked run's shard; on
    --mix_shards shards each packed record holds one pair's records (and its `lang_pair`),
    each pair's records in a shard T2T's packing of that pair's records there. --max_length
    rejects are counted per pair in the books, and filtered before packing."""
    from pipeline.tools import mixture
    corpora = corpora_file(str(tmp_path / "data"))
    # subword: --packed_length is refused for word records (no EOS: no reader takes them)
    flags = ["--corpora", corpora, "--problem", "p", "--vocab_size", "300",
             "--num_train_shards", "2", "--runner", "FnApiRunner"]
    runs = {}
    for mix in (False, True):
        for packed in (False, True):
            out = tmp_path / ("out-%s-%s" % (mix, packed))
            runs[mix, packed] = out, datagen.run(
                flags + ["--output_dir", str(out)] + (["--mix_shards"] if mix else []) + (
                    ["--packed_length", str(PACKED_LENGTH), "--max_length", str(MAX_LENGTH)]
                    if packed else []))

    def short(r):
        return max(len(r["inputs"]), len(r["targets"])) <= MAX_LENGTH

    over = {}
    (ref_out, ref), (out, summary) = runs[False, False], runs[False, True]
    for pair, entry in summary["splits"]["train"]["language_pairs"].items():
        ref_entry = ref["splits"]["train"]["language_pairs"][pair]
        assert entry["shards"] == ref_entry["shards"] and len(entry["shards"]) >= 1
        records = [r for name in ref_entry["shards"] for r in _records(ref_out / name)]
        over[pair] = sum(not short(r) for r in records)
        assert entry["rejected_by_reason"].get("over_max_length", 0) == over[pair]
        assert entry["pairs_written"] == ref_entry["pairs_written"] - over[pair]
        assert entry["pairs_written"]  # every pair is packed
        assert entry["packing"]["pairs"] == entry["pairs_written"]
        for name in entry["shards"]:
            packed = _records(out / name)
            assert {r.pop("lang_pair") for r in packed} <= {pair}
            assert packed == _t2t_packed([r for r in _records(ref_out / name) if short(r)])
    assert sum(over.values()) > 0 and summary["splits"]["train"]["packing"]["records"] < sum(
        e["pairs_written"] for e in summary["splits"]["train"]["language_pairs"].values())

    (ref_out, ref), (out, summary) = runs[True, False], runs[True, True]
    books = summary["splits"]["train"]["language_pairs"]
    assert {pair: e["rejected_by_reason"].get("over_max_length", 0)
            for pair, e in books.items()} == over
    for shard in summary["splits"]["train"]["shards"]:
        unpacked, packed = _records(ref_out / shard["name"]), _records(out / shard["name"])
        assert shard["pairs"] == sum(short(r) for r in unpacked)
        for pair in books:
            own = [dict(r) for r in packed if r["lang_pair"] == pair]
            for r in own:
                del r["lang_pair"]
            assert own == _t2t_packed([r for r in unpacked if r["lang_pair"] == pair
                                       and short(r)])

    # the readers: inspect names a packed record's pair; a mixture of packed pairs reads
    report = inspect.inspect(str(runs[False, True][0]), num_records=3, seed=1)
    assert "pairs packed" in inspect.format_report(report)
    assert all(r["lang_pair"] in books and r["pairs"] for r in report["records"])
    mixed = mixture.Mixture(str(runs[False, True][0]), temperature=5, seed=1, num_records=30)
    per_pair = {pair: e for pair, e in runs[False, True][1]["splits"]["train"][
        "language_pairs"].items()}
    pair_rates = {p: r * per_pair[p]["packing"]["pairs_per_record"] for p, r in mixed.rates.items()}
    from transforms.pairs import mixing
    shares = mixing.temperature_shares({p: [(e["pairs_written"], e.get("weight", 1.0))]
                                        for p, e in per_pair.items()}, 5.0)
    for p, rate in pair_rates.items():  # the pairs, not the packed records, at the rates
        assert rate / sum(pair_rates.values()) == pytest.approx(shares[p], rel=1e-9)
    from transforms.formats.example_proto import Int64FeaturesWriter
    drawn = [(pair, Int64FeaturesWriter().parse_all(record)) for pair, record in mixed.records()]
    assert len(drawn) == 30
    assert all(f["lang_pair"].decode() == pair and f["inputs_segmentation"] for pair, f in drawn)
