"""What every stage agrees on, as plain frozen data: `config` (`DatagenConfig`, the settings
the passes read) and `elements` (the typed elements between stages). No Apache Beam, no
TensorFlow: they pickle cheaply to any worker.

May import: transforms.codecs.
"""
