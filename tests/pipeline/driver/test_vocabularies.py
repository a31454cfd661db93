"""pipeline/driver/vocabularies: which vocabularies a run needs and where they go; whether each
is given (--word_vocab, ...), reused (its fingerprint sidecar matches, or it has none) or
learnt; and what is written into the output directory, sidecar first."""

import json
import logging
import os

import pytest

from driver_fixtures import (config, layout, pass_runner, prepared, vocab_pass_driver,
                             vocab_step, write)
from pipeline.driver import fingerprint
from pipeline.driver.datasets import plan_datasets
from pipeline.runtime.errors import DatagenError
from registries import every_kind

WORDS = "<unk>\n<s>\n</s>\nhello\n"


def setup(tmp_path, *flags, train=None):
    """(VocabStep with its fingerprint set, {split: [Dataset]}, layout)."""
    cfg = config(tmp_path, *flags, train=train)
    out = layout(cfg)
    step = vocab_step(cfg, out, pass_runner())
    step.fingerprint = fingerprint.vocab_fingerprint(cfg.flags())  # as the job sets it
    return step, {"train": plan_datasets(cfg, "train")}, out


def error_of(fn, *args):
    with pytest.raises(DatagenError) as raised:
        fn(*args)
    assert "\n" not in str(raised.value)
    return str(raised.value)


# -- which vocabularies ----------------------------------------------------------------------

def test_one_vocabulary_per_side_named_by_the_files_extensions(tmp_path):
    step, planned, out = setup(tmp_path)
    assert step.plan(planned) == {
        "source": (out.path("vocab.translate_enzh_wmt8k.8192.subwords.en"), planned["train"]),
        "target": (out.path("vocab.translate_enzh_wmt8k.8192.subwords.de"), planned["train"])}


@pytest.mark.parametrize("kind", every_kind())
def test_a_shared_vocabulary_is_named_by_its_kind(tmp_path, kind):
    from transforms.codecs.kinds import codec_kind
    suffix = codec_kind(kind).file_suffix  # "subwords" for T2T's kind, as the test above
    step, planned, out = setup(tmp_path, "--shared_vocab", "--vocab_type", kind,
                               "--vocab_size", "300")
    assert step.plan(planned) == {
        "shared": (out.path("vocab.translate_enzh_wmt8k.300.%s" % suffix), planned["train"])}


def test_the_language_flags_name_the_vocabularies(tmp_path):
    step, planned, out = setup(tmp_path, "--source_lang", "en_GB", "--target_lang", "de-CH")
    assert [path for path, _ in step.plan(planned).values()] == [
        out.path("vocab.translate_enzh_wmt8k.8192.subwords.en_GB"),
        out.path("vocab.translate_enzh_wmt8k.8192.subwords.de-CH")]


def test_two_sides_of_one_language_are_one_line(tmp_path):
    pair = (write(tmp_path / "a" / "x.en", "a\n"), write(tmp_path / "b" / "y.en", "b\n"))
    step, planned, _ = setup(tmp_path, train=pair)
    assert error_of(step.plan, planned) == (
        "source and target language are both 'en': pass --source_lang/--target_lang, or "
        "--shared_vocab")


def test_a_tsv_without_language_flags_is_one_line(tmp_path):
    tsv = write(tmp_path / "in" / "x.tsv", "a\tb\n")
    step, planned, _ = setup(tmp_path, "--train_tsv", tsv)
    assert error_of(step.plan, planned) == (
        "pass --source_lang and --target_lang (vocab file suffixes), or --shared_vocab")


def test_an_extension_that_cannot_name_a_file_is_one_line(tmp_path):
    pair = (write(tmp_path / "in" / "x.e n", "a\n"), write(tmp_path / "in" / "x.de", "b\n"))
    step, planned, _ = setup(tmp_path, train=pair)
    assert error_of(step.plan, planned).startswith(
        "the language taken from %s's extension (pass --source_lang/--target_lang) 'e n' "
        "cannot be part of a file name" % pair[0])


def test_one_given_file_is_a_shared_vocabulary_and_two_are_source_and_target(tmp_path):
    words = write(tmp_path / "w.txt", WORDS)
    step, planned, _ = setup(tmp_path, "--vocab_type", "word", "--word_vocab", words)
    plan = step.plan(planned)
    assert list(plan) == ["shared"] and step.given(plan) == {"shared": words}
    other = write(tmp_path / "w2.txt", WORDS)
    step, planned, _ = setup(tmp_path, "--vocab_type", "word", "--word_vocab",
                             "%s,%s" % (words, other))
    assert step.given(step.plan(planned)) == {"source": words, "target": other}


def test_learnt_vocabularies_are_given_nothing(tmp_path):
    step, planned, _ = setup(tmp_path)
    assert step.given(step.plan(planned)) == {}


# -- checks before anything runs -------------------------------------------------------------

def test_a_missing_given_vocabulary_is_one_line(tmp_path):
    missing = str(tmp_path / "none.txt")
    step, _, _ = setup(tmp_path, "--vocab_type", "word", "--word_vocab", missing)
    assert error_of(step.check_given) == "--word_vocab %s: no such file" % missing


def test_a_given_vocabulary_that_is_not_one_is_one_line(tmp_path):
    model = write(tmp_path / "m.model", "not a model")
    step, _, _ = setup(tmp_path, "--vocab_type", "sentencepiece", "--spm_model", model)
    assert error_of(step.check_given).startswith(
        "--spm_model %s: not a readable sentencepiece vocabulary (" % model)


def test_a_readable_given_vocabulary_passes(tmp_path):
    words = write(tmp_path / "w.txt", WORDS)
    setup(tmp_path, "--vocab_type", "word", "--word_vocab", words)[0].check_given()


# -- given, reused or learnt -----------------------------------------------------------------

def shared_words(tmp_path, *flags):
    return setup(tmp_path, "--vocab_type", "word", "--vocab_size", "10", "--shared_vocab",
                 *flags)


def test_a_vocabulary_not_there_is_learnt(tmp_path):
    step, planned, _ = shared_words(tmp_path)
    choice = step.choose(step.plan(planned))
    assert (choice.reused, choice.given, choice.to_learn) == (
        {}, {}, {"shared": planned["train"]})


def test_a_vocabulary_put_there_by_hand_is_reused(tmp_path, caplog):
    step, planned, out = shared_words(tmp_path)
    path = write(out.path("vocab.translate_enzh_wmt8k.10.words"), WORDS)
    with caplog.at_level(logging.INFO, logger="datagen"):
        choice = step.choose(step.plan(planned))
    assert choice.reused == {"shared": {"path": path, "size": 4, "reused": True,
                                        "pad_id": 2, "eos_ids": []}}  # word: nmt's
    assert choice.to_learn == {}
    assert "%s has no %s: reused as given" % (path, fingerprint.sidecar_path(path)) in (
        caplog.messages)


def test_a_vocabulary_of_this_runs_inputs_is_reused_and_of_others_refused(tmp_path):
    step, planned, out = shared_words(tmp_path)
    path = write(out.path("vocab.translate_enzh_wmt8k.10.words"), WORDS)
    fingerprint.write_sidecar(path, step.fingerprint)
    assert list(step.choose(step.plan(planned)).reused) == ["shared"]
    other = dict(step.fingerprint, flags=dict(step.fingerprint["flags"], file_byte_budget=5.0))
    fingerprint.write_sidecar(path, other)
    assert error_of(step.choose, step.plan(planned)) == (
        "%s was made from other vocab inputs/flags: --file_byte_budget 5.0 -> 100000000.0; "
        "pass --overwrite to relearn it" % path)


def test_overwrite_relearns_a_vocabulary_that_is_there(tmp_path):
    step, planned, out = shared_words(tmp_path, "--overwrite")
    write(out.path("vocab.translate_enzh_wmt8k.10.words"), WORDS)
    assert list(step.choose(step.plan(planned)).to_learn) == ["shared"]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def test_a_given_vocabulary_is_copied_into_the_output_after_its_sidecar(tmp_path):
    words = write(tmp_path / "w.txt", "hello\n<unk>\n")  # specials moved to the front
    step, planned, out = setup(tmp_path, "--vocab_type", "word", "--word_vocab", words)
    plan = step.plan(planned)
    choice = step.choose(plan)
    assert choice.given == {"shared": words} and choice.to_learn == {}
    copy = out.path("vocab.translate_enzh_wmt8k.8192.words")
    os.makedirs(out.output_dir)
    assert step.write_given(plan, choice.given) == {
        "shared": {"path": copy, "size": 4, "reused": False, "given": words, "pad_id": 2,
                   "eos_ids": []}}
    assert read(copy) == "<unk>\n<s>\n</s>\nhello\n"
    assert fingerprint.read_sidecar(copy) == step.fingerprint


def test_a_learnt_vocabulary_is_written_with_its_sidecar_and_reported(tmp_path):
    step, planned, out = shared_words(tmp_path)
    plan = step.plan(planned)
    learner = step.learner(step.choose(plan).to_learn, None)
    first = learner.next_pass()  # the job runs the first pass itself (prepare rides along)
    ds = planned["train"][0]
    stats = [{"vocab": "shared", "path": p, "sampled_lines": 3, "sampled_chars": 20}
             for p in (ds.source, ds.target)]
    write(first.result_path, json.dumps({"vocabs": [["shared", {"": WORDS}]],
                                          "sampling": stats, "distinct": [["shared", 6]]}))
    vocab_pass_driver(pass_runner()).read(first, 0.5)
    report = step.learn(plan, learner)
    path = out.path("vocab.translate_enzh_wmt8k.10.words")
    assert read(path) == WORDS
    assert fingerprint.read_sidecar(path) == step.fingerprint
    assert report["shared"] == {"path": path, "size": 4, "pad_id": 2, "eos_ids": [],
                                "reused": False, "sampled_lines": 6,
                                "sampled_chars": 40, "files": stats[::-1],  # by path
                                "distinct_tokens": 6}
    assert "passes" in report


def test_each_vocabulary_samples_its_sides_prepared_files(tmp_path):
    step, planned, _ = setup(tmp_path)
    train = planned["train"]
    cleaned = prepared("train", 0, "a.src", "a.tgt", 10, dropped="a.dropped",
                       dropped_bytes=(30, 40))
    assert step.sample_files({"source": train, "target": train}, {"train": [cleaned]}) == {
        "source": [("a.src", 70, None, "a.dropped")],
        "target": [("a.tgt", 60, None, "a.dropped")]}
    converted = prepared("train", 0, "m.src", "m.tgt", 10)
    converted.source_facts = dict(converted.source_facts, rejected_lines="m.src.rejected",
                                  rejected_bytes=5)
    assert step.sample_files({"shared": train}, {"train": [converted]}) == {
        "shared": [("m.src", 105, "m.src.rejected"), ("m.tgt", 100)]}
    assert step.sample_files({"shared": train}, None) == {
        "shared": [(train[0].source, None), (train[0].target, None)]}  # sized by the scan


# -- language tags ---------------------------------------------------------------------------

def _two_pairs(tmp_path, *flags):
    """A VocabStep and datasets of a corpora file of en-de and en-fr (3 lines each)."""
    for lang in ("en", "de", "fr"):
        write(tmp_path / ("t." + lang), "a\nb\nc\n")
    path = tmp_path / "c.yaml"
    path.write_text("corpora:\n" + "".join(
        "  - {name: %s, source_lang: en, target_lang: %s, train: {source: t.en, target: t.%s}}\n"
        % (name, lang, lang) for name, lang in (("x", "de"), ("y", "fr"))))
    cfg = config(tmp_path, "--corpora", str(path), *flags)
    step = vocab_step(cfg, layout(cfg), pass_runner())
    return step, {"train": plan_datasets(cfg, "train")}


def test_several_target_languages_get_tags_by_default_and_one_shared_vocabulary(tmp_path):
    step, planned = _two_pairs(tmp_path)
    assert list(step.plan(planned)) == ["shared"]
    assert step.tags == {"de": "<2de>", "fr": "<2fr>"} and step.reserved == ("<2de>", "<2fr>")
    assert [(ds.pair, ds.target_lang) for ds in planned["train"]] == [("en-de", "de"),
                                                                      ("en-fr", "fr")]
    step, planned = _two_pairs(tmp_path, "--lang_tags", "none")
    step.plan(planned)
    assert step.tags == {}


def test_one_corpus_has_no_tags_unless_asked_then_its_target_languages(tmp_path):
    step, planned, _ = setup(tmp_path)
    step.plan(planned)
    assert step.tags == {}
    step, planned, _ = setup(tmp_path, "--lang_tags", "target")
    assert "needs --shared_vocab" in error_of(step.plan, planned)
    step, planned, _ = setup(tmp_path, "--lang_tags", "target", "--shared_vocab")
    step.plan(planned)
    assert step.tags == {"de": "<2de>"}  # the target file's extension


def test_a_given_vocabulary_must_hold_every_tag(tmp_path):
    write(tmp_path / "words", WORDS + "<2de>\n")
    step, planned = _two_pairs(tmp_path, "--vocab_type", "word", "--word_vocab",
                               str(tmp_path / "words"))
    plan = step.plan(planned)
    assert "has no <2fr>" in error_of(step.check_given_tags, plan)
    write(tmp_path / "words", WORDS + "<2de>\n<2fr>\n")
    step.check_given_tags(plan)


@pytest.mark.slow  # trains two small SentencePiece models
def test_a_given_sentencepiece_model_whose_tags_text_matches_is_refused(tmp_path):
    """Issue 50, item 7: a user-defined symbol is matched in text, so a `<2de>` inside a
    sentence would become the tag's id; control symbols are not."""
    from gpt2_files import TRAIN_FILES, lines as gpt2_lines
    from transforms.codecs import sentencepiece_model
    lines = gpt2_lines(TRAIN_FILES[0])[:400]
    for kind, refused in (("user_defined_symbols", True), ("control_symbols", False)):
        model = tmp_path / ("%s.model" % kind)
        model.write_bytes(sentencepiece_model.train(lines, sentencepiece_model.trainer_options(
            "unigram", 300, 1.0, extra={kind: ["<2de>", "<2fr>"]})))
        step, planned = _two_pairs(tmp_path, "--vocab_type", "sentencepiece", "--spm_model",
                                   str(model))
        plan = step.plan(planned)
        if refused:
            assert "<2de> is a user-defined symbol, which SentencePiece matches in text" in (
                error_of(step.check_given_tags, plan))
        else:
            step.check_given_tags(plan)
