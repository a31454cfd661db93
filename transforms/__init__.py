"""Beam PTransforms for datagen, and (in `transforms.codecs`) the pure text codecs they use."""
