"""WriteShuffledShards: the deterministic global shuffle and the sharded TFRecord write.

Every record arrives keyed by (split, shard) with a 64-bit key derived from the seed and its
position (see `encode_pairs.shuffle_key`); a shard is a contiguous range of the key space and
its records are written sorted by key. Neither depends on bundles, workers or the runner, so
the same input and seed give byte-identical files everywhere. Files are written under a
temporary directory; the driver renames them into place only after the whole job succeeded.

Records are framed by `transforms.tfrecord_framing` (length, data and their masked CRC32Cs),
the framing TensorFlow's TFRecord reader expects.
"""

import json

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from transforms.tfrecord_framing import frame_record


def shard_file_name(problem, split, shard, num_shards):
    """T2T's name: `{problem}-{split}-00000-of-00010`."""
    return "%s-%s-%05d-of-%05d" % (problem, split, shard, num_shards)


class _WriteShardFn(beam.DoFn):
    def __init__(self, problem, num_shards, tmp_dir):
        self._problem = problem
        self._num_shards = num_shards
        self._tmp_dir = tmp_dir

    def process(self, item):
        (split, shard), grouped = item
        records = sorted(grouped["records"])
        name = shard_file_name(self._problem, split, shard, self._num_shards[split])
        path = FileSystems.join(self._tmp_dir, name)
        by_dataset = {}
        with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            for _, dataset_index, _, record in records:
                f.write(frame_record(record))
                by_dataset[dataset_index] = by_dataset.get(dataset_index, 0) + 1
        yield {"split": split, "shard": shard, "name": name, "records": len(records),
               "by_dataset": sorted(by_dataset.items())}


class _WriteRejectsFn(beam.DoFn):
    def __init__(self, tmp_dir):
        self._tmp_dir = tmp_dir

    def process(self, item):
        split, rejects = item
        rejects = sorted(rejects, key=lambda r: (r["dataset_index"], r["ordinal"]))
        by_reason = {}
        name = "%s.jsonl" % split
        with FileSystems.create(FileSystems.join(self._tmp_dir, name),
                                compression_type=CompressionTypes.UNCOMPRESSED) as f:
            for reject in rejects:
                f.write((json.dumps(reject, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
                key = "%d\t%s" % (reject["dataset_index"], reject["reason"])
                by_reason[key] = by_reason.get(key, 0) + 1
        yield {"split": split, "name": name, "rejected": len(rejects),
               "by_dataset_reason": sorted(by_reason.items())}


class WriteShuffledShards(beam.PTransform):
    """((split, shard), (key, pair_index, line, record)) -> one report per shard file written.

    Every shard of every split is written, empty ones included.
    """

    def __init__(self, problem, num_shards, tmp_dir):
        super().__init__()
        self._problem = problem
        self._num_shards = dict(num_shards)
        self._tmp_dir = tmp_dir

    def expand(self, records):
        all_shards = [((split, shard), None)
                      for split, n in sorted(self._num_shards.items()) for shard in range(n)]
        expected = records.pipeline | "AllShards" >> beam.Create(all_shards)
        return ({"records": records, "expected": expected}
                | "GroupByShard" >> beam.CoGroupByKey()
                | "WriteShard" >> beam.ParDo(_WriteShardFn(self._problem, self._num_shards,
                                                           self._tmp_dir)))


class WriteRejects(beam.PTransform):
    """(split, reject dict) -> one JSON-lines file per split, sorted by position, and a report."""

    def __init__(self, tmp_dir):
        super().__init__()
        self._tmp_dir = tmp_dir

    def expand(self, rejects):
        return (rejects
                | "GroupBySplit" >> beam.GroupByKey()
                | "WriteRejects" >> beam.ParDo(_WriteRejectsFn(self._tmp_dir)))
