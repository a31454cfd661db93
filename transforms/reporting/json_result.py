"""WriteJsonResult: bring small results of a pass back to the driver, on any runner.

Runners differ in what a driver can read back (metrics are not reliable on portable runners),
so each pass writes its small results (vocab lists, counts, shard reports) as one JSON file;
the driver reads it when the pipeline has finished.
"""

from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

import apache_beam as beam
from apache_beam.typehints.decorators import no_annotations

from transforms.contracts.elements import JsonValue

from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores, StoreSettings


def _write(items: Iterable[Tuple[str, JsonValue]], path: str,
           stores: Optional[ObjectStores] = None) -> str:
    result: Dict[str, List[JsonValue]] = {}
    for name, value in items:
        result.setdefault(name, []).append(value)
    file_io.write_json(path, result, stores)
    return path


class _WriteGatheredFn(beam.DoFn):
    """(None, [items]) -> the path of the JSON file written (through the worker's store
    clients on an object store)."""

    def __init__(self, path: str, store_settings: StoreSettings) -> None:
        self._path = path
        self._store_settings = store_settings

    def setup(self) -> None:
        self._stores = ObjectStores(self._store_settings)

    def process(self, keyed: Tuple[None, Iterable[Any]]) -> Iterator[str]:
        yield _write([item for item in keyed[1] if isinstance(item, tuple)], self._path,
                     self._stores)


@beam.typehints.with_output_types(str)
class WriteJsonResult(beam.PTransform):
    """{name: PCollection of JSON-able values} -> a JSON file {name: [values]} at `path`."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self._path = path

    @no_annotations  # its input is a dict of PCollections; Beam takes PCollection hints only
    def expand(self, named: Dict[str, beam.PCollection]) -> beam.PCollection:
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
                | "Write" >> beam.ParDo(_WriteGatheredFn(
                    self._path, StoreSettings.from_options(seed.pipeline.options))))
