"""The encode pass's Beam stages: `encode_pairs` (chunks of line pairs encoded in parallel, by
the pure `transforms.pairs`), `shuffled_shards` (the deterministic global shuffle and the
sharded write) and `length_stats` (the length report's histograms).

May import: transforms.codecs, transforms.formats, transforms.cleaning, transforms.contracts, transforms.pairs, transforms.storage, transforms.shards, transforms.reporting.
"""
