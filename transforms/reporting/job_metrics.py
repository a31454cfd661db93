"""The job's Beam counters: what a runner's UI shows while a pass runs (Dataflow's job page,
Flink's operator metrics and accumulators), and what the driver reads back when it ends.

Every counter is in the namespace `datagen` and named `{split}.{figure}` for the encode pass
(`train.pairs_read`, `train.pairs_encoded`, `train.rejected.too_long`, `dev.records_written`,
`dev.bytes_written`) and `vocab.{name}.{figure}` for the vocabulary sample
(`vocab.source.sampled_lines`, `vocab.source.sampled_chars`). They are counted per chunk or
per shard, not per record (one counter update a record would cost more than the record).
"""

import logging
from typing import Any, Dict

from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter

NAMESPACE = "datagen"
LOG = logging.getLogger("datagen")


class JobCounters:
    """The counters a DoFn updates, made on first use of each name (make it in `setup`)."""

    def __init__(self) -> None:
        self._counters: Dict[str, Any] = {}

    def inc(self, name: str, n: int = 1) -> None:
        if n:
            if name not in self._counters:
                self._counters[name] = Metrics.counter(NAMESPACE, name)
            self._counters[name].inc(n)


def counter_values(result: Any) -> Dict[str, int]:
    """{name: value} of the job's counters in a finished pipeline's result, summed over
    steps; committed values (exact whatever the runner retried) where the runner reports
    them, else attempted ones; {} when the runner reports no metrics."""
    try:
        counters = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))["counters"]
    except Exception as e:  # a runner without metrics, or a service that did not answer:
        LOG.debug("no Beam counters from %s: %s", type(result).__name__, e)  # news only
        return {}
    values: Dict[str, int] = {}
    for counter in counters:
        try:
            value = counter.committed
        except Exception:  # a runner without committed metrics raises its own error
            value = None
        if value is None:
            value = counter.attempted
        name = counter.key.metric.name
        values[name] = values.get(name, 0) + int(value or 0)
    return values
