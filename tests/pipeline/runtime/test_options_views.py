"""pipeline/runtime/options_views.py: the job's options keep their views.

The first two tests show Beam's behaviour the class works around, on Beam's own class: when
Beam keeps its views itself, `test_stock_view_as_parses_again_on_every_call` fails and the
class can go; `test_stock_options_recurse_on_any_attribute_before_their_state` is why the
views are not kept as an attribute.
"""

import copy
import pickle

import apache_beam as beam
import cloudpickle
import pytest
from apache_beam.options.pipeline_options import (DirectOptions, PipelineOptions,
                                                  StandardOptions, TypeOptions)
from apache_beam.testing.util import assert_that, equal_to

from pipeline.runtime.options_views import JobOptions

FLAGS = ["--runner", "DirectRunner", "--direct_num_workers", "2"]


def _counting_parses(monkeypatch):
    """Counts the views Beam's `PipelineOptions.view_as` builds (each parses the flags)."""
    calls = []
    stock = PipelineOptions.view_as

    def counted(self, cls):
        calls.append(cls)
        return stock(self, cls)
    monkeypatch.setattr(PipelineOptions, "view_as", counted)
    return calls


def _build(options):
    pipeline = beam.Pipeline(options=options)
    values = pipeline | beam.Create(range(5))
    for i in range(20):
        values = values | "Add%d" % i >> beam.Map(lambda x: x + 1)
    return pipeline, values


def test_stock_view_as_parses_again_on_every_call(monkeypatch):
    """Beam's view_as makes a new view (a new parser, a new parse) each call: building a
    pipeline of 22 transforms asks for well over a hundred of them."""
    options = PipelineOptions(FLAGS)
    assert options.view_as(StandardOptions) is not options.view_as(StandardOptions)
    calls = _counting_parses(monkeypatch)
    _build(options)
    assert len(calls) > 100


def test_stock_options_recurse_on_any_attribute_before_their_state():
    """An options object as copy and pickle first make it (`__new__`, no state yet): any
    attribute lookup or assignment recurses, because `__getattr__`/`__setattr__` consult
    `self._visible_options`, itself looked up through `__getattr__`. A cache read or set as
    an attribute while `beam.Pipeline` deep-copies its options breaks there."""
    bare = PipelineOptions.__new__(PipelineOptions)
    with pytest.raises(RecursionError):
        getattr(bare, "views", None)
    with pytest.raises(RecursionError):
        bare.views = {}


def test_each_view_is_made_once_and_a_pipeline_parses_a_few(monkeypatch):
    options = JobOptions(FLAGS)
    assert options.view_as(StandardOptions) is options.view_as(StandardOptions)
    calls = _counting_parses(monkeypatch)
    _build(options)
    # the original and the pipeline's deep copy make each class's view once (a view asked
    # for another view parses it: Beam's own view_as): a dozen or so, not hundreds
    assert len(calls) < 20


def test_views_share_the_values_and_a_copy_has_its_own():
    options = JobOptions(FLAGS)
    standard = options.view_as(StandardOptions)
    direct = options.view_as(DirectOptions)
    standard.runner = "Other"
    assert options.view_as(StandardOptions).runner == "Other"
    assert options.get_all_options()["runner"] == "Other"
    direct.direct_num_workers = 3
    assert options.view_as(DirectOptions).direct_num_workers == 3

    copied = copy.deepcopy(options)
    assert type(copied) is JobOptions
    copied.view_as(StandardOptions).runner = "Copy"
    copied.view_as(TypeOptions).runtime_type_check = True
    assert copied.view_as(StandardOptions).runner == "Copy"
    assert copied.get_all_options()["runtime_type_check"] is True
    assert options.view_as(StandardOptions).runner == "Other"  # the original untouched
    assert options.view_as(TypeOptions).runtime_type_check is False
    assert copied.view_as(DirectOptions).direct_num_workers == 3


def test_replaced_values_make_new_views():
    options = JobOptions(FLAGS)
    assert options.view_as(StandardOptions).runner == "DirectRunner"
    options._all_options = dict(options._all_options, runner="Elsewhere")
    assert options.view_as(StandardOptions).runner == "Elsewhere"


@pytest.mark.parametrize("dumps, loads", [(pickle.dumps, pickle.loads),
                                          (cloudpickle.dumps, pickle.loads)])
def test_pickled_and_back_it_is_the_same_options(dumps, loads):
    options = JobOptions(FLAGS)
    options.view_as(StandardOptions).runner = "Other"
    back = loads(dumps(options))
    assert back.get_all_options() == options.get_all_options()
    assert back.view_as(StandardOptions) is back.view_as(StandardOptions)
    assert back.view_as(StandardOptions).runner == "Other"


def test_same_options_as_beams_and_a_pipeline_runs():
    assert JobOptions(FLAGS).get_all_options() == PipelineOptions(FLAGS).get_all_options()
    pipeline, values = _build(JobOptions(["--runner", "DirectRunner"]))
    assert_that(values, equal_to([20, 21, 22, 23, 24]))
    pipeline.run().wait_until_finish()
