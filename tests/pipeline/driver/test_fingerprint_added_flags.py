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
        assert "--spm_model_type None -> bpe" in fingerprint.differences(
            make(dict(flags, vocab_type="sentencepiece")), make(changed))
