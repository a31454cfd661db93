"""Corpus cleaning with OpusFilter's semantics: pure Python, no Apache Beam, no TensorFlow.

`filters` (and `html_tags`, `langid`) score a pair of lines as OpusFilter 3.3.1's filters of
the same names do, `dedup` normalizes a pair into its de-duplication key as OpusFilter's
`remove_duplicates` does, `near_duplicates` is the Bifixer-like normalization and the
datasketch-compatible MinHash-LSH of `--dedup normalized|minhash`, `decontaminate` the
`--decontaminate` index, `dropped_lines` is the bitmap of dropped line numbers, and `config`
reads the `--filters` YAML file and checks every filter name and parameter before the job
starts. The Beam stages are `transforms.clean.clean_pairs` and `near_dedup`. Beyond the
standard library it uses regex, PyYAML, numpy, py3langid and threadpoolctl.

May import: transforms.errors.
"""
