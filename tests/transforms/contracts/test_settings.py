"""`transforms.contracts.settings`: a field declares its flag; `flag_fields` lists them with
values declared elsewhere (`Declared`) read in; a config with such fields still pickles as
plain values."""

import dataclasses
import pickle

import pytest

from transforms.contracts.config import JobConfig, VocabConfig
from transforms.contracts.settings import OPERATIONAL, Declared, derived, flag_fields, setting


@dataclasses.dataclass(frozen=True)
class _Part:
    size: int = setting("How many.", 3)
    where: str = setting("Where.", "here", flag="where_to", role=OPERATIONAL)
    made: str = derived("made from where_to")


def test_a_field_declares_its_flag_and_a_derived_field_none():
    listed = flag_fields(_Part)
    assert [(field, name, flag.default) for field, name, flag in listed] == [
        ("size", "size", 3), ("where", "where_to", "here")]
    assert listed[1][2].role == OPERATIONAL


def test_fields_have_no_dataclass_default():
    """A config is built from the parsed flags: a forgotten setting is an error at once."""
    with pytest.raises(TypeError, match="missing"):
        _Part(size=1)  # type: ignore[call-arg]


def test_declared_values_are_read_from_their_registry():
    from transforms.codecs.kinds import DEFAULT_KIND, KIND_NAMES
    from transforms.shards.record_formats import DEFAULT_FORMAT, FORMATS
    vocab_type = dict((f, flag) for f, _, flag in flag_fields(VocabConfig))["vocab_type"]
    assert (vocab_type.default, tuple(vocab_type.choices)) == (DEFAULT_KIND, KIND_NAMES)
    output_format = dict((f, flag) for f, _, flag in flag_fields(JobConfig))["output_format"]
    assert output_format.default == DEFAULT_FORMAT
    assert sorted(output_format.choices) == sorted(FORMATS)
    assert Declared("transforms.codecs.kinds", "DEFAULT_KIND").value() == DEFAULT_KIND


def test_a_part_pickles_as_its_values():
    part = _Part(4, "there", "x")
    assert pickle.loads(pickle.dumps(part)) == part
    assert b"How many" not in pickle.dumps(part)  # the declarations stay with the class
