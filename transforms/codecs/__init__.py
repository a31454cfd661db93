"""Pure-Python text codecs: no Apache Beam, no TensorFlow.

Anyone can load a vocabulary file and encode/decode with these modules in plain Python.
"""
