"""pipeline/driver/fingerprint and the SentencePiece flags: at their defaults they are left
out of the fingerprints, so an output or vocabulary made before the kind existed is still the
same run's; changed, they are recorded and a difference."""

from pipeline.driver import fingerprint
from pipeline.driver.options import flag_defaults

SPM_FLAGS = ("spm_model", "spm_model_type", "spm_character_coverage", "spm_special_ids",
             "spm_trainer_options")


def _without_spm(fp):
    """A fingerprint as a version without the SentencePiece kind recorded it."""
    return {"flags": {k: v for k, v in fp["flags"].items() if k not in SPM_FLAGS},
            "inputs": fp["inputs"]}


def test_spm_flags_at_their_defaults_are_left_out():
    flags = flag_defaults()
    for make in (fingerprint.output_fingerprint, fingerprint.vocab_fingerprint):
        current = make(flags)
        assert not set(SPM_FLAGS) & set(current["flags"])
        assert fingerprint.differences(_without_spm(current), current) == []


def test_spm_flags_changed_are_recorded_and_differ():
    flags = flag_defaults()
    changed = dict(flags, vocab_type="sentencepiece", spm_model_type="bpe")
    for make in (fingerprint.output_fingerprint, fingerprint.vocab_fingerprint):
        assert make(changed)["flags"]["spm_model_type"] == "bpe"
        assert "--spm_model_type unigram -> bpe" in fingerprint.differences(
            make(dict(flags, vocab_type="sentencepiece")), make(changed))


def test_output_format_at_its_default_is_left_out_and_another_is_a_difference():
    """Outputs made before --output_format existed keep their fingerprint (a rerun is still
    a no-op); another format is a change that needs --overwrite."""
    flags = flag_defaults()
    assert flags["output_format"] == "tfrecord"
    default = fingerprint.output_fingerprint(flags)
    assert "output_format" not in default["flags"]
    parquet = fingerprint.output_fingerprint(dict(flags, output_format="parquet"))
    assert parquet["flags"]["output_format"] == "parquet"
    assert fingerprint.differences(default, parquet) == ["--output_format tfrecord -> parquet"]
    assert "output_format" not in fingerprint.vocab_fingerprint(
        dict(flags, output_format="parquet"))["flags"]


def test_max_length_and_packed_length_off_are_left_out_and_set_are_output_differences():
    """They change the shards' bytes, not the vocabulary (learnt from every pair, as T2T's
    training-time filter leaves the vocabulary alone); off, outputs made before they existed
    keep their fingerprint."""
    flags = flag_defaults()
    default = fingerprint.output_fingerprint(flags)
    for flag, value in (("max_length", 128), ("packed_length", 256)):
        assert flags[flag] == 0 and flag not in default["flags"]
        changed = fingerprint.output_fingerprint(dict(flags, **{flag: value}))
        # the real old value, not None (issue 42 item 12)
        assert fingerprint.differences(default, changed) == ["--%s 0 -> %d" % (flag, value)]
        assert fingerprint.vocab_fingerprint(dict(flags, **{flag: value})) == \
            fingerprint.vocab_fingerprint(flags)
