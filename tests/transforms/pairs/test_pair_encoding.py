"""`transforms.pairs.pair_encoding` without Beam: blocks of pairs become records by shard with
their counts, on real lines and the tiny real subword vocabulary (the line cache changes no
record; --max_length keeps what T2T keeps)."""


from beam_unit import TINY_SUBTOKENS
from transforms.pairs.chunk_reading import ChunkSpan
from transforms.codecs.subword import vocab_file_text
from transforms.codecs.subword_vocabulary import SubwordVocabulary
from transforms.codecs.vocabulary import SINGLE_FILE
from transforms.formats.example_proto import Int64FeaturesWriter, PairExampleWriter
from transforms.pairs.pair_encoding import (BlockPlan, PairEncoder, PairTally, shard_of,
                                            shuffle_keys)

SOURCE = [b"hello world", b"", b"  hello  ", b"w\xffrld", b"world hello", b"hello"]
TARGET = [b"\xe4\xbd\xa0\xe5\xa5\xbd", b"x", b"world\r", b"hello", b"  ", b"world"]
SPAN = ChunkSpan("s.en", "s.zh", 10, 6)  # lines 11..16 of both files


def _encoder():
    vocab = SubwordVocabulary.for_encoding({SINGLE_FILE: vocab_file_text(TINY_SUBTOKENS)})
    return vocab, PairEncoder(vocab, vocab, PairExampleWriter("inputs", "targets"))


def test_pairs_become_records_by_shard_with_their_counts():
    vocab, encoder = _encoder()
    pairs = [(1, "hello world", "你好世界"), (2, "hello", "world!"), (3, "hello world", "你好")]
    by_shard, tally, too_long, dropped = encoder.encode(
        pairs, BlockPlan(shuffle_keys(7, "train", 0), 0, 3))
    assert too_long.lengths == dropped == []
    key_of = shuffle_keys(7, "train", 0)
    examples = Int64FeaturesWriter()
    expected = {}
    for number, source, target in pairs:
        key = key_of(number)
        record = examples.serialize({"inputs": vocab.encode(source) + [1],
                                     "targets": vocab.encode(target) + [1]})
        expected.setdefault(shard_of(key, 3), []).append((key, 0, number, record))
    assert by_shard == expected
    ids = [[len(vocab.encode(p[side])) for p in pairs] for side in (1, 2)]
    assert tally.lengths == [(s + 1, t + 1) for s, t in zip(*ids)]
    assert tally.ids == [sum(ids[0]), sum(ids[1])]
    assert tally.chars == [sum(len(p[1]) for p in pairs), sum(len(p[2]) for p in pairs)]
    assert tally.token_counts() == [sum(ids[0]), 0, sum(ids[1]), 0]


def test_the_line_cache_changes_no_record(monkeypatch):
    """Lines met again come from the cache; emptied all the time, the records are the same."""
    from transforms.pairs import pair_encoding
    pairs = [(n, ["hello", "world hello", "hello"][n % 3], ["你好", "世界"][n % 2])
             for n in range(1, 30)]
    results = []
    for size in (1 << 17, 1):
        monkeypatch.setattr(pair_encoding, "LINE_CACHE_SIZE", size)
        _, encoder = _encoder()
        by_shard, tally = {}, PairTally()
        for start in range(0, len(pairs), 4):
            block = encoder.encode(pairs[start:start + 4],
                                   BlockPlan(shuffle_keys(1, "dev", 2), 2, 2))
            for shard, entries in block.by_shard.items():
                by_shard.setdefault(shard, []).extend(entries)
            tally.add(block.written)
        results.append((by_shard, tally.lengths, tally.ids, tally.chars))
    assert results[0] == results[1]
    measured = _encoder()[1].measure(pairs, BlockPlan(shuffle_keys(1, "dev", 2), 2, 2))
    assert (measured.lengths, measured.ids, measured.chars) == results[0][1:]


def test_max_length_keeps_the_pairs_t2t_keeps_and_returns_the_others():
    """--max_length: a pair goes when its longer side has more ids than that (EOS included),
    as T2T's `example_valid_size`; the kept pairs' records and counts are those of encoding
    them alone, the dropped ones' counts go to their own tally."""
    vocab, encoder = _encoder()
    pairs = [(1, "hello world", "你好世界"), (2, "hello", "world!"), (3, "hello world", "你好"),
             (4, "hello hello hello hello", "world")]
    lengths = {n: max(len(vocab.encode(s)), len(vocab.encode(t))) + 1 for n, s, t in pairs}
    limit = sorted(lengths.values())[1]  # at least one pair on each side of it
    by_shard, tally, too_long, dropped = encoder.encode(
        pairs, BlockPlan(shuffle_keys(7, "train", 0), 0, 3, limit))
    assert dropped == [p for p in pairs if lengths[p[0]] > limit] != []
    kept = [p for p in pairs if lengths[p[0]] <= limit]
    alone, alone_tally, _, _ = _encoder()[1].encode(
        kept, BlockPlan(shuffle_keys(7, "train", 0), 0, 3))
    assert by_shard == alone and tally.lengths == alone_tally.lengths
    assert tally.ids == alone_tally.ids and tally.chars == alone_tally.chars
    assert sorted(max(pair) for pair in too_long.lengths) == sorted(
        lengths[n] for n, _, _ in dropped)
    everything = _encoder()[1].measure(
        pairs, BlockPlan(shuffle_keys(7, "train", 0), 0, 3))
    assert [a + b for a, b in zip(tally.ids, too_long.ids)] == everything.ids
