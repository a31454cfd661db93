"""WriteJsonResult: bring small results of a pass back to the driver, on any runner.

Runners differ in what a driver can read back (metrics are not reliable on portable runners),
so each pass writes its small results (vocab lists, counts, shard reports) as one JSON file;
the driver reads it when the pipeline has finished.
"""

import apache_beam as beam

from transforms import file_io


def _write(items, path):
    result = {}
    for name, value in items:
        result.setdefault(name, []).append(value)
    file_io.write_json(path, result)
    return path


def _write_gathered(keyed, path):
    return _write([item for item in keyed[1] if isinstance(item, tuple)], path)


class WriteJsonResult(beam.PTransform):
    """{name: PCollection of JSON-able values} -> a JSON file {name: [values]} at `path`."""

    def __init__(self, path):
        super().__init__()
        self._path = path

    def expand(self, named):
        tagged = [pcoll | "Tag_%s" % name >> beam.Map(lambda v, name=name: (name, v))
                  for name, pcoll in sorted(named.items())]
        # One element even when every input is empty, so the file is always written. A
        # GroupByKey on one key gathers the items with half the stages and ParDos of
        # `combiners.ToList` (every ParDo costs the driver Beam's DoFn checks, per pass).
        seed = tagged[0].pipeline | "Seed" >> beam.Impulse()  # one b"" element
        return ((tagged + [seed])
                | "Flatten" >> beam.Flatten()
                | "OneKey" >> beam.Map(lambda item: (None, item))
                | "Gather" >> beam.GroupByKey()
                | "Write" >> beam.Map(_write_gathered, path=self._path))
