"""WriteJsonResult (`transforms.reporting.json_result`) on TestPipeline: named PCollections
gathered into one file."""

import json

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from beam_unit import test_pipeline
from transforms.reporting.json_result import WriteJsonResult


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
