"""The job's Beam stages (PTransforms, DoFns, CombineFns), and in subpackages what they use.

`codecs` and `formats` are pure (no Beam, no TensorFlow), `storage` reads and writes files; nothing here imports pipeline."""
