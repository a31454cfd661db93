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

from datagen_helpers import DATA_DIR, output_bytes, read_examples
from pipeline import datagen
from pipeline.tools import inspect
import t2t_reference as t2t

pytestmark = pytest.mark.slow

VOCAB_SIZE = 600
# (corpus name, source lang, target lang, source file, target file, lines, weight)
CORPORA = [
    ("en-zh", "en", "zh", "enzh-mlqe-pe/train.en", "enzh-mlqe-pe/train.zh", 300, 1.0),
    ("en-de", "en", "de", "ende-opennmt/train.en", "ende-opennmt/train.de", 200, 1.0),
    ("en-vi", "en", "vi", "envi-nmt-testdata/iwslt15.tst2013.100.en",
     "envi-nmt-testdata/iwslt15.tst2013.100.vi", 60, 2.0),
]


def _head(src, dst, lines):
    with open(os.path.join(DATA_DIR, src), "rb") as f:
        data = b"".join(f.readline() for _ in range(lines))
    with open(dst, "wb") as f:
        f.write(data)
    return dst


def _corpora_file(directory, corpora=CORPORA):
    """A corpora file over the first lines of the test corpora, paths relative to it."""
    entries = []
    for name, src, tgt, src_file, tgt_file, lines, weight in corpora:
        os.makedirs(os.path.join(directory, name), exist_ok=True)
        _head(src_file, os.path.join(directory, name, "train." + src), lines)
        _head(tgt_file, os.path.join(directory, name, "train." + tgt), lines)
        entries.append({"name": name, "source_lang": src, "target_lang": tgt,
                        "train": {"source": "%s/train.%s" % (name, src),
                                  "target": "%s/train.%s" % (name, tgt)},
                        "weight": weight})
    path = os.path.join(directory, "corpora.yaml")
    with open(path, "w") as f:
        json.dump({"corpora": entries}, f)  # JSON is YAML
    return path


@pytest.fixture(scope="module")
def three_pairs(tmp_path_factory):
    base = tmp_path_factory.mktemp("many_pairs")
    corpora = _corpora_file(str(base / "data"))
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
    report = inspect.inspect(str(out), num_records=200)
    shown = {r["source"].split(" ", 1)[0] for r in report["records"]}
    assert shown == {"<2de>", "<2vi>", "<2zh>"}
    assert all(r["inputs"][0] in (2, 3, 4) for r in report["records"])


def test_one_corpus_is_the_single_pair_flags_byte_for_byte(tmp_path):
    data = tmp_path / "data"
    corpora = _corpora_file(str(data), CORPORA[2:])
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
