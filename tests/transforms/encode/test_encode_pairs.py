"""EncodePairs on TestPipeline: what one chunk of a line-aligned pair becomes.

Each chunk leaves, per shard, one fragment of its records sorted by shuffle key (records are
`tf.train.Example` bytes with the ids the subword encoder gives, EOS appended); pairs with an
empty side are rejected with a reason; every pair is either in a fragment or rejected.
"""

import os

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from beam_unit import (ENCODE_SEED, TINY_SUBTOKENS, chunked_pair, encode_tiny_pairs,
                       test_pipeline)
from transforms.codecs.subword import SubwordEncoder
from transforms.pairs import chunk_reading, pair_encoding
from transforms.pairs.pair_encoding import shard_of, shuffle_key
from transforms.formats.example_proto import Int64FeaturesWriter
from transforms.shards.shard_fragments import read_fragment

@pytest.mark.parametrize("block_pairs,line_cache", [(4096, 1 << 17), (1, 1), (2, 2)])
def test_chunks_become_sorted_fragments_and_rejects(tmp_path, monkeypatch, block_pairs,
                                                    line_cache):
    """Also with blocks of one or two pairs (a reject between and inside blocks) and a line
    cache that is emptied all the time; lines 1 and 3 (and targets 1 and 6) are equal."""
    monkeypatch.setattr(chunk_reading, "BLOCK_PAIRS", block_pairs)
    monkeypatch.setattr(pair_encoding, "LINE_CACHE_SIZE", line_cache)
    source = ["hello world", "", "hello world", "world hello", "  ", "hello world!"]
    target = ["你好世界", "世界", "你好", "", "  ", "你好世界"]
    vocab, chunks = chunked_pair(tmp_path, source, target)  # two chunks of three lines
    encoder = SubwordEncoder(TINY_SUBTOKENS)
    assert [(c["first_line"], c["num_lines"]) for c in chunks] == [(0, 3), (3, 3)]
    fragment_dir = tmp_path / "fragments"
    with test_pipeline() as p:
        out = p | beam.Create(chunks) | encode_tiny_pairs(vocab, tmp_path, {"train": 2})
        assert_that(out.rejects | beam.MapTuple(lambda split, r: (split, r["where"], r["reason"])),
                    equal_to([("train", "line 2", "empty_source"),
                              ("train", "line 4", "empty_target"),
                              ("train", "line 5", "empty_pair")]), label="rejects")
        # per chunk: tokens of the written pairs' sides (lines 1, 3; line 6), no OOV (subword)
        def tokens(lines, numbers):
            return sum(len(encoder.encode(lines[n - 1])) for n in numbers)
        assert_that(out.stats | beam.MapTuple(lambda split, s: (split, list(s))),
                    equal_to([("train", [tokens(source, (1, 3)), 0, tokens(target, (1, 3)), 0]),
                              ("train", [tokens(source, (6,)), 0, tokens(target, (6,)), 0])]),
                    label="stats")
        assert_that(out.records | beam.MapTuple(lambda where, f: f["records"])
                    | beam.CombineGlobally(sum), equal_to([3]), label="fragments")
    examples = Int64FeaturesWriter()
    expected = {}
    for number in (1, 3, 6):  # the pairs with both sides
        key = shuffle_key(ENCODE_SEED, "train", 0, number)
        ids = {"inputs": encoder.encode(source[number - 1]) + [1],
               "targets": encoder.encode(target[number - 1]) + [1]}
        expected.setdefault(shard_of(key, 2), []).append((key, number, ids))
    got = {}
    for name in sorted(os.listdir(fragment_dir)):
        shard = int(name.split("-")[1])
        entries = []
        for (key, _, number), record in read_fragment(str(fragment_dir / name)):
            entries.append((key, number, examples.parse(record)))
        assert entries == sorted(entries)  # a fragment is in shuffle-key order
        got.setdefault(shard, []).extend(entries)
    assert {shard: sorted(e) for shard, e in got.items()} == {
        shard: sorted(e) for shard, e in expected.items()}
