"""The cleaning pass's Beam stage: `clean_pairs` (which pairs `--filters` and `--dedup` drop,
and why), over the pure filters of `transforms.cleaning`.

May import: transforms.codecs, transforms.formats, transforms.cleaning, transforms.contracts, transforms.pairs, transforms.storage, transforms.shards, transforms.reporting.
"""
