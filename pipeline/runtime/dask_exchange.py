"""How a pass's elements cross from one stage's tasks to the next's on Dask, in a graph whose
tasks and edges grow linearly with the cluster's threads and the pass's partitions.

A dask key is the unit of transfer: a task that depends on another gets its whole result. An
exchange of P producing tasks into B consuming partitions with a key per (producer, bucket),
as Beam's and the job's first translations had, is P x B tasks: 292 + 96 tasks for the vocab
and encode passes of the sample at 2 threads, 68,827 + 31,173 at 50, a scheduler stalled for
11 s (issue 49). Consumers that read every producer whole would be P + B tasks but P x B edges,
and each consumer would hold every bucket in memory. So:

- **GroupByKey** (`hash`): each producing task returns its buckets as one result, a dict
  {bucket: values} (a bucket nobody filled is not there). When there are more producers than
  buckets they are first merged a group at a time (`route` over the whole range), down to at
  most B results. Then a tree of `route` nodes, each reading at most `FAN` results of the
  level before and keeping a `FAN`-th of their bucket range, narrows the range level by level
  until a consumer reads at most `FAN` results holding its bucket. Every node holds about one
  producer's share of the data; each level reads the data `FAN` times over. Tasks: P + about
  (1 + log_FAN B) x (B + P / B) + B; edges: at most FAN a task.
- **Reshuffle** (`deal`): into n = max(P, --dask_npartitions or 2 x threads) partitions, each
  reading one producer (n = P: its output; n > P: one of its ceil(n / P) round-robin slots)
  or, with fewer partitions asked for, every n-th producer. A Reshuffle after a `Create` keeps
  the Create's partitions (one per work item), so a worker that joins mid-pass finds work.
- **list**: a stage reading another's output whole (a side input, a ParDo whose side input
  depends on its own main input) reads each producing task's result.

What a consumer reads is a list of refs (key, export, pick): the result of task `key`, its
export number `export` when the task returns several (-1: the result itself), then bucket or
slot `pick` of it (-1: all of it). Grouping concatenates values in producer order, so the
elements a partition gets do not depend on the tree's shape.
"""

import typing as t
import zlib

from apache_beam.coders import FastPrimitivesCoder

KEY_CODER = FastPrimitivesCoder().as_deterministic_coder("GroupByKey")  # keys -> buckets
FAN = 4  # the most results a node of a GroupByKey's tree reads
Ref = t.Tuple[t.Any, int, int]  # (dask key, export number or -1, bucket or slot or -1)

# -- on the workers -----------------------------------------------------------------------


class Export:
    """A task's output of one stream for the next stage: a list (`list`), a dict {bucket:
    values} of `n` buckets by key hash (`hash`) or `n` lists dealt round-robin (`deal`)."""

    def __init__(self, mode: str, n: int) -> None:
        self.mode, self.n, self.turn = mode, n, 0
        self.values: t.Any = ([] if mode == "list" else {} if mode == "hash"
                              else [[] for _ in range(n)])

    def __call__(self, value: t.Any) -> None:
        if self.mode == "list":
            self.values.append(value)
        elif self.mode == "hash":
            bucket = zlib.crc32(KEY_CODER.encode(value[0])) % self.n
            self.values.setdefault(bucket, []).append(value)
        else:
            self.values[self.turn % self.n].append(value)
            self.turn += 1


def _picked(result: t.Any, export: int, pick: int) -> t.Any:
    part = result[export] if export >= 0 else result
    if pick < 0:
        return part
    return part.get(pick, []) if isinstance(part, dict) else part[pick]


def route(parents: t.Sequence[t.Any], exports: t.Sequence[int], low: int, high: int) -> dict:
    """A node of a GroupByKey's tree: the buckets in [low, high) of its parents' results
    (export `exports[i]` of parent i), each bucket's values in parent order."""
    merged: dict = {}
    for parent, export in zip(parents, exports):
        for bucket, values in _picked(parent, export, -1).items():
            if low <= bucket < high:
                merged.setdefault(bucket, []).extend(values)
    return merged


def gather(parents: t.Sequence[t.Any], picks: t.Sequence[t.Tuple[int, int]]) -> list:
    """The values a partition (or a side input) reads: pick `picks[i]` of parent i, in order."""
    return [value for parent, (export, pick) in zip(parents, picks)
            for value in _picked(parent, export, pick)]


def grouped(parents: t.Sequence[t.Any], picks: t.Sequence[t.Tuple[int, int]]) -> t.Iterable:
    """A GroupByKey partition's (key, values) of what it reads."""
    groups: dict = {}
    for key, value in gather(parents, picks):
        groups.setdefault(key, []).append(value)
    return groups.items()


# -- on the driver: the refs each partition reads -----------------------------------------


def deal_slots(producers: int, partitions: int) -> int:
    """How many round-robin slots each of `producers` tasks deals into for `partitions`."""
    return max(1, -(-partitions // max(1, producers)))


def deal_reads(parents: t.Sequence[t.Tuple[t.Any, int]], partitions: int) -> t.List[t.List[Ref]]:
    """The refs of each of `partitions` partitions of a Reshuffle of `parents` (key, export)
    whose tasks dealt into `deal_slots` slots: slot s of producer p is read by partition
    (s x producers + p) mod `partitions`, so each reads at most two slots, or every
    `partitions`-th producer when there are more."""
    count, slots = len(parents), deal_slots(len(parents), partitions)
    reads: t.List[t.List[Ref]] = [[] for _ in range(partitions)]
    for j in range(count * slots):
        key, export = parents[j % count]
        reads[j % partitions].append((key, export, j // count))
    return reads


def hash_reads(dsk: dict, name: str, parents: t.Sequence[t.Tuple[t.Any, int]],
               buckets: int) -> t.List[t.List[Ref]]:
    """The refs of each of `buckets` partitions of a GroupByKey of `parents` (key, export),
    adding the tree's nodes to `dsk` under keys (`name`, level, range, group)."""
    level_of: t.List[t.Tuple[t.Any, int]] = list(parents)
    count = len(level_of)
    if count > buckets:  # merge producers a group at a time, down to `buckets` results
        size = -(-count // buckets)
        merged = []
        for g in range(0, count, size):
            key = (name, 0, 0, g // size)
            group = level_of[g:g + size]
            dsk[key] = (route, [k for k, _ in group], [e for _, e in group], 0, buckets)
            merged.append((key, -1))
        level_of = merged
    depth, width = 0, 1
    while width < buckets:  # FAN ** depth >= buckets: single buckets at the last level
        depth, width = depth + 1, width * FAN
    # level_of[r][j]: (key, export) of the node of range r, group j, at the current level
    nodes = [level_of]
    for level in range(1, depth):
        span = FAN ** (depth - level)  # buckets a range of this level covers
        above = nodes
        nodes = []
        for r in range(-(-buckets // span)):
            parents_r = above[r // FAN]
            row = []
            for j in range(0, len(parents_r), FAN):
                group = parents_r[j:j + FAN]
                key = (name, level, r, j // FAN)
                dsk[key] = (route, [k for k, _ in group], [e for _, e in group],
                            r * span, min(buckets, (r + 1) * span))
                row.append((key, -1))
            nodes.append(row)
    return [[(key, export, b) for key, export in nodes[b // FAN if depth > 1 else 0]]
            for b in range(buckets)]
