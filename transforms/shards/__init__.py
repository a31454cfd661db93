"""The output's shards as files, without Beam stages: `record_formats` (one adapter per
`--output_format`, the one object that names shards, the splits; on `format_base`, with the
text adapter in `text_format`) and `shard_fragments` (an encode bundle's records of one
shard, sorted, in a work file).

May import: transforms.codecs, transforms.formats, transforms.contracts, transforms.storage.
"""
