"""TextPairs, the text output's stand-in for PairEncoder: each pair's record holds its text,
keyed and sharded as encoded pairs are; the tally counts characters, no vocabulary needed."""

from transforms.formats.example_proto import Int64FeaturesWriter
from transforms.pairs.pair_encoding import BlockPlan, shard_of, shuffle_keys
from transforms.pairs.text_pairs import TextPairs


def test_records_hold_the_text_keyed_as_encoded_pairs_and_lengths_are_characters():
    examples = Int64FeaturesWriter()
    pairs = [(1, "  hello world", "你好 ， 世界"), (2, "a", "bc")]
    key_of = shuffle_keys(0, "train", 3)
    by_shard, tally, too_long, dropped = TextPairs(examples).encode(pairs, BlockPlan(key_of, 3, 4))
    assert too_long.lengths == dropped == []
    entries = sorted(e for entries in by_shard.values() for e in entries)
    assert sorted((key_of(n), 3, n) for n, _, _ in pairs) == [e[:3] for e in entries]
    for shard, shard_entries in by_shard.items():
        assert all(shard_of(key, 4) == shard for key, _, _, _ in shard_entries)
    texts = {n: examples.parse_all(record) for _, _, n, record in entries}
    assert texts[1] == {"inputs": "  hello world".encode(), "targets": "你好 ， 世界".encode()}
    assert tally.lengths == [(13, 7), (1, 2)] and tally.chars == [14, 9]
