"""transforms.reporting.job_metrics on TestPipeline: the counters DoFns update (`JobCounters`) and
reading them back from the finished pipeline (`counter_values`), as the driver does after
every pass (the summary's `metrics`)."""

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from beam_unit import test_pipeline
from transforms.reporting.job_metrics import JobCounters, counter_values


class _CountFn(beam.DoFn):
    """Counts its elements as the job's DoFns do: one update per element's figures, the
    counters made in `setup`."""

    def setup(self):
        self._counters = JobCounters()

    def process(self, element):
        split, chars = element
        self._counters.inc("%s.pairs_read" % split)
        self._counters.inc("%s.chars" % split, chars)
        self._counters.inc("%s.never" % split, 0)  # no update: the counter is never made
        yield element


def test_counters_are_summed_per_name_and_read_back_from_the_result():
    elements = [("train", 3), ("train", 4), ("dev", 5)]
    p = test_pipeline()
    counted = (p | beam.Create(elements) | "Counted" >> beam.ParDo(_CountFn())
               | "Again" >> beam.ParDo(_CountFn()))  # the same name in two steps: summed
    assert_that(counted, equal_to(elements))
    result = p.run()
    result.wait_until_finish()
    assert counter_values(result) == {"train.pairs_read": 4, "train.chars": 14,
                                      "dev.pairs_read": 2, "dev.chars": 10}


def test_a_pipeline_without_counters_reads_back_empty():
    p = test_pipeline()
    assert_that(p | beam.Create([1, 2]) | beam.Map(lambda x: x * 2), equal_to([2, 4]))
    result = p.run()
    result.wait_until_finish()
    assert counter_values(result) == {}

