"""The cleaning pass's Beam stages: `clean_pairs` (which pairs `--filters`, `--dedup` and
`--decontaminate` drop, and why), `near_dedup` (`--dedup minhash`'s MinHash-LSH) with
`band_runs` (its LSH buckets grouped in rounds of bounded size), `dedup_groups` (the exact
dedup's groups) and `pair_reading` (a chunk's pairs, as both read them), over the pure
`transforms.cleaning`.

May import: transforms.codecs, transforms.formats, transforms.cleaning, transforms.contracts, transforms.pairs, transforms.storage, transforms.shards, transforms.reporting.
"""
