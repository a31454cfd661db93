"""What a training reader is asked for, as small frozen options objects (as TFDS's `ReadConfig`).

`pipeline.tools.reader` batches records in one of two ways, tensorflow/nmt's and T2T's, each
with its own settings, after steps both share (sharding, skipping, shuffling the records).
Each group is one dataclass here: `RecordReading` (both modes), `NmtBatching`, `T2TBatching`,
so a setting is declared once, with its default, and a mode is the type of its batching: a
setting of the other mode cannot be passed, rather than being checked by hand among two dozen
keywords. `options_of` turns `make_dataset`'s keywords (its older, flat call, which README and
docs/ show) into these objects, and names the keywords a mode does not take as before.

No TensorFlow here: these are plain settings.
"""

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, Dict, Optional, Tuple, Union


@dataclass(frozen=True)
class RecordReading:
    """The steps before batching, in both modes: `Dataset.shard(num_shards, shard_index)`,
    `Dataset.skip(skip_count)`, the records shuffled (`random_seed`, `output_buffer_size`:
    None is the mode's default, `reshuffle_each_iteration`), `num_parallel_calls` for the
    maps (results are deterministic regardless); `require_complete`: datagen shards are read
    only from an output with its completion marker and all its shards."""
    num_shards: int = 1
    shard_index: int = 0
    skip_count: Optional[int] = None
    shuffle: bool = True
    random_seed: Optional[int] = None
    output_buffer_size: Optional[int] = None
    reshuffle_each_iteration: bool = True
    num_parallel_calls: int = 4
    require_complete: bool = True


@dataclass(frozen=True)
class NmtBatching:
    """tensorflow/nmt's `get_iterator` (word records, no EOS in them): each side cut to
    `src_max_len` / `tgt_max_len` (None or 0: no limit), `num_buckets` length buckets,
    `sos_id`/`eos_id` added to the target, elements as tuples with `as_tuple`."""
    mode: ClassVar[str] = "nmt"
    src_max_len: Optional[int] = None
    tgt_max_len: Optional[int] = None
    num_buckets: int = 1
    sos_id: int = 1
    eos_id: int = 2
    as_tuple: bool = False

    @staticmethod
    def buffer_size(batch_size: int) -> int:
        """The records' shuffle buffer when none is given: nmt's `batch_size * 1000`."""
        return batch_size * 1000


@dataclass(frozen=True)
class T2TBatching:
    """T2T's length bucketing (`batch_size` in tokens): `max_length` (None: batch_size, or a
    packed output's --packed_length), `min_length`, `min_length_bucket`,
    `length_bucket_step`, `drop_long_sequences`, and the batches shuffled with
    `batch_shuffle_size` (when the records are)."""
    mode: ClassVar[str] = "t2t"
    max_length: Optional[int] = None
    min_length: int = 0
    min_length_bucket: int = 8
    length_bucket_step: float = 1.1
    drop_long_sequences: bool = True
    batch_shuffle_size: int = 512

    @staticmethod
    def buffer_size(batch_size: int) -> int:
        """The records' shuffle buffer when none is given: T2T's `shuffle_buffer_size`."""
        return 1024


Batching = Union[NmtBatching, T2TBatching]
MODES: Dict[str, Any] = {"nmt": NmtBatching, "t2t": T2TBatching}


def _fields(cls: Any) -> Dict[str, Any]:
    return {f.name: f.default for f in dataclasses.fields(cls)}


def options_of(mode: str, settings: Dict[str, Any]) -> Tuple[RecordReading, Batching]:
    """`make_dataset`'s keywords as options: ValueError for an unknown mode or a setting
    of the other mode given a value (None, or the other mode's default, is no value: a
    caller may pass every keyword); TypeError for a keyword neither takes."""
    if mode not in MODES:
        raise ValueError("mode must be 'nmt' or 't2t', got %r" % (mode,))
    reading, own = _fields(RecordReading), _fields(MODES[mode])
    other = _fields(MODES["t2t" if mode == "nmt" else "nmt"])
    unknown = sorted(set(settings) - set(reading) - set(own) - set(other))
    if unknown:
        raise TypeError("make_dataset() got an unexpected keyword argument %r" % unknown[0])
    misused = sorted(name for name, value in settings.items()
                     if name in other and name not in own
                     and value is not None and value != other[name])
    if misused:
        raise ValueError("mode %r does not take %s" % (mode, ", ".join(misused)))
    # None is "the default" for every setting, as the flat call's keywords had it
    given = {name: value for name, value in settings.items() if value is not None}
    return (RecordReading(**{k: v for k, v in given.items() if k in reading}),
            MODES[mode](**{k: v for k, v in given.items() if k in own}))
