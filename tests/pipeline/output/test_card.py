"""The dataset card's pure parts (`pipeline.output.card`, `card_samples`): Hugging Face's size
categories, the length ratio rows, and sample positions drawn across every shard with the
seed, reproducibly."""

from pipeline.output.card import ratio_lines, size_category
from pipeline.output.card_samples import draw_positions


def test_size_categories_are_hugging_faces():
    assert [size_category(n) for n in (0, 999, 1000, 99_999, 100_000, 10 ** 10)] == [
        "n<1K", "n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "n>10B"]


def test_positions_are_drawn_across_every_shard_and_mapped_to_their_shard():
    counts = [5, 0, 7, 3]
    drawn = draw_positions(counts, 15, "0\x00en-de\x00train")
    assert [p for p, _, _ in drawn] == list(range(15))  # all of them, in reading order
    starts = [0, 5, 5, 12]
    assert all(starts[shard] + index == p and index < counts[shard] for p, shard, index in drawn)
    some = draw_positions([1000] * 10, 4, 7)
    assert some == draw_positions([1000] * 10, 4, 7)  # the seed decides
    assert some != draw_positions([1000] * 10, 4, 8)
    assert [p for p, _, _ in some] == sorted(p for p, _, _ in some)
    assert max(p for p, _, _ in some) >= 1000  # not only the head of the first shard
    assert draw_positions([0, 0], 4, 0) == []


def test_ratio_histogram_rows_are_the_summarys_or_say_not_measured():
    counted = {"pairs": 4, "ratio_histogram": [["<0.5", 1], ["0.5-0.67", 0], [">=2.0", 3]]}
    replayed = {"pairs": 5, "ratio_histogram": [["<0.5", 1], [">=2.0", 3]]}  # an old chunk
    lines = ratio_lines({"splits": {"train": {"lengths": counted},
                                    "dev": {"lengths": replayed}}})
    assert lines[-4:] == ["| train | <0.5 | 1 | 0.2500 |", "| train | 0.5-0.67 | 0 | 0.0000 |",
                          "| train | >=2.0 | 3 | 0.7500 |", "| dev | not measured | | |"]
