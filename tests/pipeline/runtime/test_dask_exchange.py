"""The Dask runner's exchanges (pipeline/runtime/dask_exchange.py), computed with dask's
synchronous scheduler on graphs of literal producer results (no cluster, no Beam pass):

- a GroupByKey's tree gives every bucket exactly the values a direct (producer, bucket)
  selection gives, in producer order, for any number of producers and buckets;
- its tasks and edges grow linearly: no term in producers x buckets, no task reading more
  than `FAN` results (producers merged a group at a time excepted);
- a Reshuffle's partitions read every value once, at most two slots each (or, fewer
  than its producers, every n-th producer).
"""

import dask
import pytest

from pipeline.runtime.dask_exchange import (FAN, Export, deal_reads, deal_slots, gather,
                                            grouped, hash_reads)


def _produced(producers, buckets, values_per=7):
    """[(key, value)] of each producer, and its hash export."""
    outputs, exports = [], []
    for p in range(producers):
        values = [("k%d" % ((p * 3 + v) % 11), (p, v)) for v in range(values_per)]
        export = Export("hash", buckets)
        for value in values:
            export(value)
        outputs.append(values)
        exports.append(export.values)
    return outputs, exports


def _dependencies(task):
    return [a for a in task[1:] if isinstance(a, list) and a and isinstance(a[0], tuple)]


@pytest.mark.parametrize("producers, buckets", [
    (1, 1), (3, 1), (1, 2), (4, 2), (2, 7), (5, 16), (40, 16), (17, 64), (200, 64), (3, 65)])
def test_every_bucket_gets_the_values_of_a_direct_selection_in_producer_order(
        producers, buckets):
    outputs, exports = _produced(producers, buckets)
    dsk = {("p", i): export for i, export in enumerate(exports)}
    reads = hash_reads(dsk, "route", [(("p", i), -1) for i in range(producers)], buckets)
    assert len(reads) == buckets
    for b, refs in enumerate(reads):
        dsk[("c", b)] = (grouped, [key for key, _, _ in refs],
                         [(export, pick) for _, export, pick in refs])
    results = dask.get(dsk, [("c", b) for b in range(buckets)])
    for b, result in enumerate(results):
        expected: dict = {}
        for export in exports:
            for key, value in export.get(b, []):
                expected.setdefault(key, []).append(value)
        assert dict(result) == expected
    every = sorted(v for result in results for _, vs in result for v in vs)
    assert every == sorted(v for values in outputs for _, v in values)


def _count(producers, buckets):
    dsk = {("p", i): {} for i in range(producers)}
    reads = hash_reads(dsk, "route", [(("p", i), 0) for i in range(producers)], buckets)
    nodes = {k: v for k, v in dsk.items() if k[0] == "route"}
    edges = sum(len(v[1]) for v in nodes.values()) + sum(len(r) for r in reads)
    return nodes, edges, reads


@pytest.mark.parametrize("threads", [2, 16, 64, 200])
def test_a_group_by_keys_tasks_and_edges_grow_linearly(threads):
    for producers in (threads, 2 * threads, 50 * threads):
        nodes, edges, reads = _count(producers, threads)
        tasks = producers + len(nodes) + threads
        assert tasks <= 3 * (producers + threads), (producers, threads, tasks)
        assert edges <= 3 * (producers + FAN * threads), (producers, threads, edges)
        tree = [v for k, v in nodes.items() if k[1] > 0]
        assert all(len(v[1]) <= FAN for v in tree)
        assert all(len(r) <= FAN for r in reads)


def test_a_reshuffle_reads_each_value_once_from_one_producer_or_slot():
    for producers, partitions in ((1, 8), (3, 8), (8, 8), (8, 3)):
        slots = deal_slots(producers, partitions)
        dsk = {}
        for p in range(producers):
            export = Export("deal", slots)
            for v in range(10):
                export((p, v))
            dsk[("p", p)] = export.values
        reads = deal_reads([(("p", p), -1) for p in range(producers)], partitions)
        assert len(reads) == partitions
        if partitions >= producers:
            assert all(1 <= len(r) <= 2 for r in reads)
        for i, refs in enumerate(reads):
            dsk[("c", i)] = (gather, [k for k, _, _ in refs], [(e, s) for _, e, s in refs])
        got = dask.get(dsk, [("c", i) for i in range(partitions)])
        assert sorted(v for part in got for v in part) == sorted(
            (p, v) for p in range(producers) for v in range(10))
