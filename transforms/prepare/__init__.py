"""The prepare pass's Beam stages: `file_scan` (line counts, sizes, seek points and UTF-8
validity of every input file) and `materialize` (TSV, TMX, SGM, IWSLT XML and archived
datasets turned into line pairs, with their rejects).

May import: transforms.codecs, transforms.formats, transforms.cleaning, transforms.contracts, transforms.pairs, transforms.storage, transforms.shards, transforms.reporting.
"""
