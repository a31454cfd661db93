"""The job's Beam stages, grouped by the pass they serve, and the packages they stand on.

The passes' stages (PTransforms, DoFns, CombineFns), one package a pass:
- `prepare`: the input files scanned, and other formats materialized into line pairs;
- `vocab`: the byte-budget sample counted, and one learner a vocabulary kind (`learners`
  is their framework), with the stages of its passes;
- `clean`: the pairs `--filters` and `--dedup` drop, and why;
- `encode`: pairs encoded in chunks, the global shuffle into shards, length statistics;
- `reporting`: what every pass's stages report back (counters, progress marks, results).

What they stand on, without Beam stages of their own:
- pure (no Apache Beam, no TensorFlow): `codecs` (tokenizers, vocabularies), `formats`
  (corpus readers, records), `cleaning` (OpusFilter's filters), `contracts` (the frozen
  config and the typed elements), `pairs` (chunks of line pairs read and encoded, mixing rates);
- files: `storage` (any file system, object stores, vocabulary files), `shards` (record
  formats, shard names, shard fragments).

A pass's package never imports another pass's. Each package's `__init__` names what it may
import; tests/test_architecture.py holds every import to it.

May import: none.
"""
