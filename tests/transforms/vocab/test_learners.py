"""The learners' passes as data (`transforms.vocab.learners`): probe keys, pass labels."""

from transforms.vocab.subword_learning import ProbeKey
from transforms.vocab.learners import VocabPass


def test_probe_keys_keep_their_text_form():
    key = ProbeKey.parse("source:12")
    assert key == ("source", 12) and key.vocab == "source" and key.min_count == 12
    assert key.text == "source:12" and ProbeKey.parse("a:b:3") == ("a:b", 3)


def test_a_pass_label_puts_a_riding_stage_first():
    vocab_pass = VocabPass("vocab source, target", ("sample, count, index", "rounds 1-10"),
                           None, "result.json", None)
    assert vocab_pass.label() == "vocab source, target: sample, count, index; rounds 1-10"
    assert vocab_pass.label("scan 2 files") == (
        "vocab source, target: scan 2 files; sample, count, index; rounds 1-10")
