"""Line pairs, in pure Python (no Apache Beam, no TensorFlow): `chunk_reading` (an encode
chunk's raw lines into blocks of pairs or rejects), `pair_encoding` (blocks into records keyed
for the shuffle, with their counts) and `mixing` (temperature-sampled rates of many language
pairs, also read by the training readers).

May import: transforms.codecs, transforms.formats, transforms.cleaning, transforms.contracts.
"""
