"""EncodePairs: read line-aligned chunks of source/target files and encode them in parallel.

Each element is one chunk: a range of lines of a source/target file pair, with the byte offsets
where the range starts in both files (found by `ScanTextFiles`), so chunks are read by
different workers. The DoFn loads both vocabularies once per worker in `setup`, strips each
line, encodes both sides and appends EOS, exactly as T2T's `text2text_generate_encoded`.
Pairs with an empty side are rejected with a reason (T2T drops them silently); every other
pair becomes a serialized `tf.train.Example` keyed for the deterministic shuffle.
"""

import hashlib

import apache_beam as beam

from transforms import file_io
from transforms.codecs.subword import EOS_ID, SubwordEncoder
from transforms.text_lines import decode_line, iter_raw_lines

REJECTS = "rejects"
REJECT_TEXT_CHARS = 500


def shuffle_key(seed, split, pair_index, line_number):
    """A 64-bit key from the seed and the pair's position: the global shuffle order."""
    digest = hashlib.blake2b(b"%d\x00%s\x00%d\x00%d" % (seed, split.encode(), pair_index, line_number),
                             digest_size=8).digest()
    return int.from_bytes(digest, "big")


def shard_of(key, num_shards):
    """Shards are contiguous ranges of the key space."""
    return (key * num_shards) >> 64


def load_subword_vocab(path):
    return SubwordEncoder.from_text(file_io.read_bytes(path).decode("utf-8"))


class _EncodeChunkFn(beam.DoFn):
    def __init__(self, source_vocab_path, target_vocab_path, seed, num_shards):
        self._paths = (source_vocab_path, target_vocab_path)
        self._seed = seed
        self._num_shards = num_shards  # {split: number of shards}

    def setup(self):
        import tensorflow as tf  # heavy: imported once per worker
        self._example_cls = tf.train.Example
        self._source = load_subword_vocab(self._paths[0])
        self._target = (self._source if self._paths[1] == self._paths[0]
                        else load_subword_vocab(self._paths[1]))

    def _example(self, inputs, targets):
        example = self._example_cls()
        feature = example.features.feature
        feature["inputs"].int64_list.value.extend(inputs)
        feature["targets"].int64_list.value.extend(targets)
        return example.SerializeToString(deterministic=True)

    def process(self, chunk):
        split = chunk["split"]
        src_path, tgt_path = chunk["source"], chunk["target"]
        first, count = chunk["first_line"], chunk["num_lines"]
        num_shards = self._num_shards[split]
        with file_io.open_text_source(src_path) as src, file_io.open_text_source(tgt_path) as tgt:
            if chunk["source_offset"]:
                src.seek(chunk["source_offset"])
            if chunk["target_offset"]:
                tgt.seek(chunk["target_offset"])
            src_lines = iter_raw_lines(src)
            tgt_lines = iter_raw_lines(tgt)
            for i in range(count):
                number = first + i + 1  # 1-based line number
                raw_src = next(src_lines, None)
                raw_tgt = next(tgt_lines, None)
                if raw_src is None or raw_tgt is None:
                    raise ValueError("%s / %s: file changed while reading, line %d is missing"
                                     % (src_path, tgt_path, number))
                source = decode_line(raw_src, src_path, number).strip()
                target = decode_line(raw_tgt, tgt_path, number).strip()
                if not source or not target:
                    reason = ("empty_pair" if not source and not target
                              else "empty_source" if not source else "empty_target")
                    yield beam.pvalue.TaggedOutput(REJECTS, (split, {
                        "split": split, "pair_index": chunk["pair_index"],
                        "source_file": src_path, "target_file": tgt_path, "line": number,
                        "reason": reason, "source": source[:REJECT_TEXT_CHARS],
                        "target": target[:REJECT_TEXT_CHARS]}))
                    continue
                record = self._example(self._source.encode(source) + [EOS_ID],
                                       self._target.encode(target) + [EOS_ID])
                key = shuffle_key(self._seed, split, chunk["pair_index"], number)
                yield (split, shard_of(key, num_shards)), (key, chunk["pair_index"], number, record)


def plan_chunks(split, pair_index, source_path, target_path, source_scan, target_scan):
    """Chunks of a file pair: line ranges that start at a seek point present in both files."""
    total = source_scan["lines"]
    src_points = dict(map(tuple, source_scan["checkpoints"]))
    tgt_points = dict(map(tuple, target_scan["checkpoints"]))
    starts = sorted(set(src_points) & set(tgt_points) | {0})
    starts = [s for s in starts if s < total] or [0]
    chunks = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else total
        chunks.append({"split": split, "pair_index": pair_index, "source": source_path,
                       "target": target_path, "first_line": start, "num_lines": end - start,
                       "source_offset": src_points.get(start, 0),
                       "target_offset": tgt_points.get(start, 0)})
    return chunks


class EncodePairs(beam.PTransform):
    """Chunks -> ((split, shard), (key, pair_index, line, serialized Example)) and rejects."""

    def __init__(self, source_vocab_path, target_vocab_path, seed, num_shards):
        super().__init__()
        self._fn = _EncodeChunkFn(source_vocab_path, target_vocab_path, seed, num_shards)

    def expand(self, chunks):
        return (chunks
                | "Spread" >> beam.Reshuffle()
                | "Encode" >> beam.ParDo(self._fn).with_outputs(REJECTS, main="records"))
