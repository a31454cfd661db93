"""Pure formats: corpus readers (TSV, TMX, SGM, ...), text lines, compression checks, TFRecord framing, Examples, rejects.

No Apache Beam, no TensorFlow; may import transforms.codecs and each other only."""
