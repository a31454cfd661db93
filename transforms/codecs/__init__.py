"""Pure-Python text codecs: tokenizers and vocabularies (load, save, encode, decode, learn); no Apache Beam, no TensorFlow.

Anyone can load a vocabulary file and encode/decode with these modules in plain Python.

May import: none."""
