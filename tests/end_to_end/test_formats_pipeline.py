"""Every corpus format through the whole job, mixed in one run, each dataset named in the
summary with balanced books; misaligned units are an error or rejects; a bounded fuzz test."""

import collections
import json
import os
import random
import tarfile
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from datagen_helpers import (DATA_DIR, assert_books_balance, read_examples, run_datagen,
                             shard_files, with_t2t_vocab)
from format_readers import (CMN_HEAD as TSV, IWSLT_EN as EN_XML, IWSLT_ZH as ZH_XML,
                            SGM_EN as EN_SGM, SGM_ZH as ZH_SGM, TMX_ENES)
from pipeline import datagen
from transforms.codecs.subword import SubwordEncoder

FLAGS = ["--problem", "p", "--vocab_size", 8192, "--num_train_shards", 2,
         "--source_lang", "en", "--target_lang", "zh"]



def _all_inputs(out, split="train"):
    return [i for path in shard_files(out, "p", split) for i, _ in read_examples(path)]



@pytest.mark.slow
def test_mixed_formats_in_one_run(tmp_path):
    mlqe = os.path.join(DATA_DIR, "enzh-mlqe-pe")
    tgz = tmp_path / "mlqe-dev.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(os.path.join(mlqe, "dev.en"), arcname="mlqe/dev.en")
        tar.add(os.path.join(mlqe, "dev.zh"), arcname="mlqe/dev.zh")
    zipped = tmp_path / "sgm.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        z.write(EN_SGM, "valid.en.sgm")
        z.write(ZH_SGM, "valid.zh.sgm")
    out = with_t2t_vocab(tmp_path / "out")
    summary = run_datagen(
        out, ",".join([os.path.join(mlqe, "train.en"), "%s!mlqe/dev.en" % tgz, EN_XML,
                       "%s!valid.en.sgm" % zipped]),
        ",".join([os.path.join(mlqe, "train.zh"), "%s!mlqe/dev.zh" % tgz, ZH_XML,
                  "%s!valid.zh.sgm" % zipped]),
        *FLAGS, "--train_tsv", TSV, "--dev_source", EN_SGM, "--dev_target", ZH_SGM)
    assert_books_balance(summary)
    datasets = summary["splits"]["train"]["datasets"]
    assert {name: (d["format"], d["pairs_read"]) for name, d in datasets.items()} == {
        "train.en": ("lines", 3000), "dev.en": ("lines", 1000),
        "IWSLT17.TED.tst2017.en-zh.head5docs.en.xml": ("iwslt", 647),
        "valid.en.sgm": ("sgm", 3000), "cmn.head3000.txt": ("tsv", 3000)}
    assert summary["splits"]["dev"]["datasets"]["valid.en-zh.head3000.en.sgm"]["format"] == "sgm"
    assert summary["splits"]["train"]["pairs_written"] == len(_all_inputs(out))
    en = SubwordEncoder.from_file(os.path.join(out, "vocab.p.8192.subwords.en"))
    inputs = collections.Counter(_all_inputs(out))
    # the first SGM segment, stripped of its padding; the first TSV row, BOM removed
    assert inputs[tuple(en.encode("Do you think we look young enough to blend in at a high school?") + [1])] == 1
    assert inputs[tuple(en.encode("Hi.") + [1])] >= 1
    # the zipped SGM pair and the plain one in dev hold the same pairs
    dev = collections.Counter(_all_inputs(out, "dev"))
    assert sum(dev.values()) == 3000


def _tmx(path, units):
    body = "".join(
        "<tu>%s</tu>\n" % "".join('<tuv xml:lang="%s"><seg>%s</seg></tuv>' % (lang, text)
                                  for lang, text in unit) for unit in units)
    path.write_text('<?xml version="1.0"?>\n<tmx version="1.4"><header srclang="en"/><body>\n'
                    + body + "</body></tmx>\n", encoding="utf-8")
    return str(path)


@pytest.mark.slow
def test_tmx_learns_a_vocab_and_rejects_units_missing_a_side(tmp_path):
    real = TMX_ENES
    out = tmp_path / "out"
    summary = run_datagen(out, None, None, "--problem", "p", "--vocab_size", 300,
                          "--num_train_shards", 2, "--source_lang", "en", "--target_lang", "es",
                          "--train_tmx", real, "--shared_vocab")
    assert_books_balance(summary)
    d = summary["splits"]["train"]["datasets"]["en-es.head800.tmx"]
    assert d["pairs_read"] == 800 and d["rejected_by_reason"] == {"empty_pair": 1}
    assert os.path.exists(out / "vocab.p.300.subwords")

    broken = _tmx(tmp_path / "broken.tmx", [
        [("EN-us", "Hello &amp; welcome"), ("es", "Hola y bienvenidos")],
        [("en", "Only English")],
        [("es-ES", "Adiós"), ("en_GB", "Bye &#x263A;")]])
    with pytest.raises(datagen.DatagenError, match=r"broken\.tmx.*tu 2: missing target"):
        run_datagen(tmp_path / "o2", None, None, "--problem", "p", "--vocab_size", 50,
                    "--source_lang", "en", "--target_lang", "es", "--train_tmx", broken)
    out3 = tmp_path / "o3"
    summary = run_datagen(out3, None, None, "--problem", "p", "--vocab_size", 50,
                          "--num_train_shards", 1, "--source_lang", "en", "--target_lang", "es",
                          "--train_tmx", broken, "--on_misaligned", "reject")
    assert_books_balance(summary)
    with open(out3 / "rejects" / "p-train.jsonl", encoding="utf-8") as f:
        (reject,) = [json.loads(line) for line in f]
    assert (reject["where"], reject["reason"], reject["source"]) == ("tu 2", "missing_target", "Only English")
    en = SubwordEncoder.from_file(str(out3 / "vocab.p.50.subwords.en"))
    assert sorted(en.decode(list(i[:-1])) for i in _all_inputs(out3)) == ["Bye \u263a", "Hello & welcome"]


@pytest.mark.slow
def test_sgm_pairs_by_id_not_position(tmp_path):
    with open(ZH_SGM, encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    segs = [i for i, line in enumerate(lines) if line.startswith("<seg")]
    shuffled = [lines[i] for i in segs]
    random.Random(5).shuffle(shuffled)
    reordered = list(lines)
    for i, line in zip(segs, shuffled):
        reordered[i] = line
    zh_reordered = tmp_path / "reordered.zh.sgm"
    zh_reordered.write_text("".join(reordered), encoding="utf-8")
    a, b = with_t2t_vocab(tmp_path / "a"), with_t2t_vocab(tmp_path / "b")
    run_datagen(a, EN_SGM, ZH_SGM, *FLAGS)
    run_datagen(b, EN_SGM, str(zh_reordered), *FLAGS)
    assert sorted(read_examples(shard_files(a, "p", "train")[0])) == sorted(
        read_examples(shard_files(b, "p", "train")[0]))

    missing = tmp_path / "missing.zh.sgm"
    missing.write_text("".join(l for l in lines if not l.startswith('<seg id="7">')), encoding="utf-8")
    with pytest.raises(datagen.DatagenError, match=r"seg 7: unmatched source segment"):
        run_datagen(with_t2t_vocab(tmp_path / "c"), EN_SGM, str(missing), *FLAGS)
    summary = run_datagen(with_t2t_vocab(tmp_path / "d"), EN_SGM, str(missing), *FLAGS,
                          "--on_misaligned", "reject")
    assert_books_balance(summary)
    assert summary["splits"]["train"]["rejected_by_reason"] == {"unmatched_source_segment": 1}


# --- fuzz: bad bytes, random text, broken XML, random line counts ---------------------------

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
_lines = st.lists(st.one_of(_text, st.binary(max_size=20).map(lambda b: b.decode("latin-1"))),
                  max_size=6)


@st.composite
def _corpora(draw):
    kind = draw(st.sampled_from(["lines", "bytes", "tmx", "sgm", "tsv"]))
    if kind == "lines":
        src = "\n".join(draw(_lines)).encode("utf-8")
        tgt = "\n".join(draw(_lines)).encode("utf-8")
    elif kind == "bytes":
        src, tgt = draw(st.binary(max_size=80)), draw(st.binary(max_size=80))
    elif kind == "tmx":
        body = draw(st.sampled_from(["<tu><tuv xml:lang='en'><seg>%s</seg></tuv>",
                                     "<tu><tuv xml:lang='en'><seg>a</seg></tuv><tuv xml:lang='zh'><seg>%s</seg></tuv></tu>",
                                     "<tu><tuv lang='EN'><seg>%s</seg>"]))
        src = ("<tmx><body>%s</body></tmx>" % (body % draw(_text).replace("<", "&lt;"))).encode()
        tgt = b""
    elif kind == "sgm":
        n, m = draw(st.integers(0, 3)), draw(st.integers(0, 3))
        seg = '<seg id="%d">%s</seg>\n'
        src = ('<doc docid="d">\n' + "".join(seg % (i, draw(_text)) for i in range(n)) + "</doc>").encode()
        tgt = ('<doc docid="d">\n' + "".join(seg % (i, draw(_text)) for i in range(m)) + "</doc>").encode()
    else:
        src = "\n".join("\t".join(draw(st.lists(_text, max_size=3))) for _ in range(draw(st.integers(0, 4)))).encode()
        tgt = b""
    options = draw(st.fixed_dictionaries({"--on_misaligned": st.sampled_from(["error", "reject"]),
                                          "--on_invalid_utf8": st.sampled_from(["error", "reject", "replace"])}))
    return kind, src, tgt, options


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=_corpora())
def test_fuzz_ends_in_a_clear_error_or_balanced_books(tmp_path_factory, case):
    kind, src, tgt, options = case
    d = tmp_path_factory.mktemp("fuzz")
    ext = {"lines": "en", "bytes": "en", "tmx": "tmx", "sgm": "sgm", "tsv": "tsv"}[kind]
    (d / ("in." + ext)).write_bytes(src)
    (d / "in.zh").write_bytes(tgt)
    if kind == "sgm":
        (d / "in.zh.sgm").write_bytes(tgt)
    out = with_t2t_vocab(d / "out")
    extra = [a for kv in options.items() for a in kv]
    if kind in ("lines", "bytes"):
        args = (str(d / "in.en"), str(d / "in.zh"))
    elif kind == "sgm":
        args = (str(d / "in.sgm"), str(d / "in.zh.sgm"))
    else:
        args = (None, None)
        extra += ["--train_%s" % kind, str(d / ("in." + ext))]
    try:
        summary = run_datagen(out, *args, *FLAGS, *extra)
    except datagen.DatagenError as e:
        assert str(e).strip()
        return
    assert_books_balance(summary)
    assert summary["splits"]["train"]["pairs_written"] == len(_all_inputs(out))


@pytest.mark.parametrize("path,lang", [
    ("a/train.en.gz", "en"), ("x/newstest.zh.sgm", "zh"), ("c.tgz!d/train.de", "de"),
    ("IWSLT17.TED.tst2017.zh-en.zh.xml", "zh"), ("train.vi.bz2", "vi")])
def test_vocab_suffix_from_file_names(path, lang):
    from pipeline.output.layout import lang_of
    assert lang_of(path) == lang
