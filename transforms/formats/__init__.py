"""Pure formats (no Apache Beam, no TensorFlow): corpus readers (TSV, TMX, SGM, ...), text
lines, compression checks, TFRecord framing, Examples, rejects.

May import: transforms.codecs, transforms.contracts, transforms.errors."""
