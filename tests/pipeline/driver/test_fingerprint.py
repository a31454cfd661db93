"""pipeline/driver/fingerprint: what makes a rerun "the same run" (a noop) and what makes it
another (refused without --overwrite); how a vocabulary's sidecar records what it was made
from; and inputs changed while the job ran."""

import json
import os

import pytest

from driver_fixtures import config, corpus, write
from pipeline.driver import fingerprint
from pipeline.runtime.errors import DatagenError


def flags_of(tmp_path, *argv, train=None):
    return config(tmp_path, *argv, train=train).flags()


def diff(make, old_flags, new_flags):
    return fingerprint.differences(make(old_flags), make(new_flags))


def test_the_same_run_twice_has_the_same_fingerprint_and_it_survives_json(tmp_path):
    flags = flags_of(tmp_path, "--vocab_size", "300")
    for make in (fingerprint.output_fingerprint, fingerprint.vocab_fingerprint):
        first, second = make(flags), make(dict(reversed(list(flags.items()))))
        assert first == second
        assert fingerprint.differences(json.loads(json.dumps(first)), second) == []


@pytest.mark.parametrize("flag, value", [
    ("output_dir", "/elsewhere"), ("problem", "other_problem"), ("overwrite", True),
    ("allow_empty", True), ("vocab_partitions", 7), ("bisection_rounds_per_pass", 3),
    ("bisection_lookahead", 2), ("encode_chunk_lines", 5), ("lock_stale_seconds", 9.0),
    ("in_process_below_mb", 0.0), ("log_level", "debug")])
def test_flags_that_change_no_output_byte_change_no_fingerprint(tmp_path, flag, value):
    flags = flags_of(tmp_path)
    for make in (fingerprint.output_fingerprint, fingerprint.vocab_fingerprint):
        assert diff(make, flags, dict(flags, **{flag: value})) == []


@pytest.mark.parametrize("flag, value", [
    ("seed", 1), ("num_train_shards", 3), ("num_dev_shards", 2), ("max_line_chars", 100),
    ("output_format", "parquet")])
def test_flags_of_the_encoding_change_the_output_not_the_vocabulary(tmp_path, flag, value):
    flags = flags_of(tmp_path)
    changed = dict(flags, **{flag: value})
    assert diff(fingerprint.output_fingerprint, flags, changed) == [
        "--%s %s -> %s" % (flag, flags[flag], value)]  # the old value, also one left out
    assert diff(fingerprint.vocab_fingerprint, flags, changed) == []


@pytest.mark.parametrize("flag, value", [
    ("vocab_size", 300), ("vocab_type", "word"), ("shared_vocab", True),
    ("file_byte_budget", 1e6), ("max_subtoken_length", None), ("on_invalid_utf8", "replace"),
    ("on_misaligned", "reject"), ("source_lang", "xx"), ("dedup", "pairs"),
    ("drop_dev_overlap", True), ("train_format", "lines")])
def test_flags_of_the_vocabulary_change_both(tmp_path, flag, value):
    flags = flags_of(tmp_path)
    changed = dict(flags, **{flag: value})
    for make in (fingerprint.output_fingerprint, fingerprint.vocab_fingerprint):
        changes = diff(make, flags, changed)
        assert len(changes) == 1 and changes[0].startswith("--%s " % flag)
        assert changes[0].endswith("-> %s" % value)


def test_cleaning_off_is_left_out_so_older_outputs_keep_their_fingerprint(tmp_path):
    recorded = fingerprint.output_fingerprint(flags_of(tmp_path))["flags"]
    assert not {"dedup", "drop_dev_overlap", "output_format"} & set(recorded)
    assert "vocab_size" in recorded and "seed" in recorded


def test_inputs_are_compared_by_their_files_not_their_spelling(tmp_path, monkeypatch):
    source, target = corpus(tmp_path)
    flags = flags_of(tmp_path, train=(source, target))
    monkeypatch.chdir(tmp_path)
    for spelling in ({"train_source": "in/train.en", "train_target": "in/train.de"},
                     {"train_source": str(tmp_path / "in" / "*.en"),
                      "train_target": str(tmp_path / "in" / "t?ain.de")}):
        for make in (fingerprint.output_fingerprint, fingerprint.vocab_fingerprint):
            assert make(flags) == make(dict(flags, **spelling))
    recorded = fingerprint.output_fingerprint(flags)["inputs"]
    assert recorded == {
        "train_source": {source: {"size": 24, "mtime": round(os.path.getmtime(source), 3)}},
        "train_target": {target: {"size": 24, "mtime": round(os.path.getmtime(target), 3)}}}


def test_an_edited_added_or_removed_input_is_a_difference(tmp_path):
    source, target = corpus(tmp_path)
    pattern = str(tmp_path / "in" / "*.en")
    flags = flags_of(tmp_path, "--train_source", pattern, train=(source, target))
    before = fingerprint.output_fingerprint(flags)
    write(source, "hello 0\nhello 1\nhello 2 and more\n")
    assert fingerprint.differences(before, fingerprint.output_fingerprint(flags)) == [
        "%s changed (size/mtime)" % source]
    before = fingerprint.output_fingerprint(flags)
    extra = write(tmp_path / "in" / "more.en", "x\n")
    assert fingerprint.differences(before, fingerprint.output_fingerprint(flags)) == [
        "--train_source %s is a new input" % extra]
    before = fingerprint.output_fingerprint(flags)
    os.remove(source)
    assert fingerprint.differences(before, fingerprint.output_fingerprint(flags)) == [
        "--train_source %s no longer an input" % source]


def test_only_train_inputs_determine_the_vocabulary(tmp_path):
    flags = flags_of(tmp_path)
    dev_source, dev_target = corpus(tmp_path, name="dev")
    with_dev = dict(flags, dev_source=dev_source, dev_target=dev_target)
    assert diff(fingerprint.vocab_fingerprint, flags, with_dev) == []
    assert diff(fingerprint.output_fingerprint, flags, with_dev) == [
        "--dev_source %s is a new input" % dev_source,
        "--dev_target %s is a new input" % dev_target]


def test_an_archive_member_counts_as_its_archive_and_a_directory_as_its_files(tmp_path):
    archive = write(tmp_path / "in" / "c.tgz", "not really a tarball")
    gpt2 = tmp_path / "gpt2"
    vocab, merges = write(gpt2 / "vocab.json", "{}"), write(gpt2 / "merges.txt", "#\n")
    flags = dict(flags_of(tmp_path), train_tsv=archive + "!inside/a.tsv", bpe_vocab=str(gpt2),
                 vocab_type="byte_bpe")
    inputs = fingerprint.vocab_fingerprint(flags)["inputs"]
    assert list(inputs["train_tsv"]) == [archive]
    assert sorted(inputs["bpe_vocab"]) == [merges, vocab]


def test_a_given_bpe_directory_rewritten_in_place_is_a_difference(tmp_path):
    """`cp new/merges.txt gpt2/` changes no directory entry, so the directory's own stamp
    stays: its files' stamps are what show it (the output was made with other merges)."""
    gpt2 = tmp_path / "gpt2"
    write(gpt2 / "vocab.json", "{}")
    merges = write(gpt2 / "merges.txt", "#\n")
    flags = dict(flags_of(tmp_path), vocab_type="byte_bpe", bpe_vocab=str(gpt2))
    before = fingerprint.output_fingerprint(flags)
    with open(merges, "a", encoding="utf-8") as f:
        f.write("a b\n")
    assert fingerprint.differences(before, fingerprint.output_fingerprint(flags)) == [
        "%s changed (size/mtime)" % merges]


def test_a_given_vocabulary_file_is_an_input_of_both(tmp_path):
    flags = flags_of(tmp_path)
    words = write(tmp_path / "words.txt", "<unk>\n<s>\n</s>\nhello\n")
    given = dict(flags, vocab_type="word", word_vocab=words)
    for make in (fingerprint.output_fingerprint, fingerprint.vocab_fingerprint):
        assert list(make(given)["inputs"]["word_vocab"]) == [words]


def test_a_missing_input_is_recorded_as_no_files(tmp_path):
    flags = dict(flags_of(tmp_path), dev_source=str(tmp_path / "none*.en"))
    assert fingerprint.output_fingerprint(flags)["inputs"]["dev_source"] == {}


# -- inputs changed while the job ran --------------------------------------------------------

def test_changed_inputs_names_the_first_file_changed_or_deleted(tmp_path):
    source, target = corpus(tmp_path)
    flags = flags_of(tmp_path, train=(source, target))
    recorded = fingerprint.output_fingerprint(flags)
    assert fingerprint.changed_inputs(recorded, flags) is None
    write(target, "hallo 0\n")
    assert fingerprint.changed_inputs(recorded, flags) == (
        "--train_target %s changed while the job ran (size 24 -> 8 bytes, modified since it "
        "started): the output would mix two versions of it" % target)
    os.remove(source)
    assert fingerprint.changed_inputs(recorded, flags) == (
        "--train_source %s was deleted while the job ran" % source)


def test_changed_inputs_ignores_the_jobs_own_outputs_matched_by_a_pattern(tmp_path):
    source, target = corpus(tmp_path)
    out = tmp_path / "out"
    own = write(out / "translate_enzh_wmt8k-train-00000-of-00001", "x")
    flags = dict(flags_of(tmp_path, train=(source, target)),
                 train_source=source + "," + str(out / "*"))
    recorded = fingerprint.output_fingerprint(flags)
    assert own in recorded["inputs"]["train_source"]
    os.remove(own)  # the job rewrites its own files: not a change of its inputs
    assert fingerprint.changed_inputs(recorded, flags) is None


# -- vocabulary sidecars -----------------------------------------------------------------

def test_a_sidecar_is_a_hidden_file_beside_the_vocabulary(tmp_path):
    assert fingerprint.sidecar_path("/o/vocab.p.8192.subwords") == (
        "/o/.vocab.p.8192.subwords.fingerprint.json")
    assert fingerprint.sidecar_path("gs://b/o/vocab.p.8192.bpe/") == (
        "gs://b/o/.vocab.p.8192.bpe.fingerprint.json")


def test_a_sidecar_written_is_read_back_and_none_without_one(tmp_path):
    vocab = str(tmp_path / "vocab.p.8192.subwords")
    assert fingerprint.read_sidecar(vocab) is None
    recorded = fingerprint.vocab_fingerprint(flags_of(tmp_path))
    fingerprint.write_sidecar(vocab, recorded)
    assert fingerprint.differences(fingerprint.read_sidecar(vocab), recorded) == []


@pytest.mark.parametrize("content, problem", [
    ('{"flags": {"vocab_size": 8', "Expecting"), ('["a list"]', "not a fingerprint"),
    ('{"inputs": {"train_source": 3}}', "not a fingerprint"), ("\xff\xfe", "")])
def test_a_corrupt_sidecar_is_one_line_naming_it(tmp_path, content, problem):
    vocab = str(tmp_path / "vocab.p.8192.subwords")
    sidecar = write(fingerprint.sidecar_path(vocab), content)
    with pytest.raises(DatagenError) as raised:
        fingerprint.read_sidecar(vocab)
    message = str(raised.value)
    assert message.startswith("%s is corrupt (%s" % (sidecar, problem))
    assert message.endswith("cannot tell what %s was made from; pass --overwrite to "
                            "relearn it" % vocab)
    assert "\n" not in message


def test_a_changed_corpora_file_is_its_changed_entries_and_fields_not_both_lists():
    """Issue 50, item 17: the refusal after an edited corpora file printed both whole lists."""
    entry = {"name": "en-de", "source_lang": "en", "target_lang": "de", "weight": 1.0,
             "source_column": 0, "target_column": 1, "train_format": "auto",
             "dev_format": "auto"}
    vi = dict(entry, name="en-vi", target_lang="vi", weight=2.0)
    old = {"flags": {"corpora": [entry, vi], "problem": "p"}, "inputs": {}}
    new = {"flags": {"corpora": [entry, dict(vi, weight=3.0)], "problem": "p"}, "inputs": {}}
    assert fingerprint.differences(old, new) == ["--corpora: corpora[1] (en-vi): weight 2.0 -> 3.0"]
    fr = dict(entry, name="en-fr", target_lang="fr")
    new["flags"]["corpora"] = [dict(entry, train_format="tsv"), fr]
    assert fingerprint.differences(old, new) == [
        "--corpora: entry en-vi removed",
        "--corpora: corpora[0] (en-de): train_format auto -> tsv",
        "--corpora: corpora[1] (en-fr) is new"]
    new["flags"]["corpora"] = [vi, entry]
    assert fingerprint.differences(old, new) == [
        "--corpora: entries reordered: en-de, en-vi -> en-vi, en-de"]


def test_a_byte_bpe_vocabulary_learnt_with_the_old_id_layout_is_a_difference(tmp_path):
    """A learnt byte_bpe vocabulary's ids changed (issue 50, item 2: `<pad>` 0 and EOS 1, was
    EOS 0): its fingerprints record the layout, so a vocabulary or output learnt before
    (recorded without one) is refused, not reused; given ones and other kinds keep theirs."""
    learnt = dict(flags_of(tmp_path), vocab_type="byte_bpe")
    for make in (fingerprint.vocab_fingerprint, fingerprint.output_fingerprint):
        now = make(learnt)
        assert now["layout"] == "<pad> 0, EOS 1"
        before = {k: v for k, v in now.items() if k != "layout"}  # as an older job wrote it
        assert fingerprint.differences(before, now) == [
            "the vocabulary's id layout of an earlier version -> <pad> 0, EOS 1"]
    gpt2 = tmp_path / "gpt2"
    write(gpt2 / "vocab.json", "{}")
    write(gpt2 / "merges.txt", "#\n")
    for flags in (dict(learnt, bpe_vocab=str(gpt2)), flags_of(tmp_path),
                  dict(flags_of(tmp_path), vocab_type="word")):
        for make in (fingerprint.vocab_fingerprint, fingerprint.output_fingerprint):
            assert "layout" not in make(flags)
