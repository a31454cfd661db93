"""Iterate training batches of an `--output_format array_record` output with Grain (no
TensorFlow): `python examples/read_array_record_grain.py OUTPUT_DIR [t2t|nmt]`.

The records are the TFRecord output's `tf.train.Example`s; Grain reads them by index, so the
shuffle is global and deterministic for a seed (a new order each epoch: seed + epoch).
"""

import sys

import grain

from pipeline.tools import batches

output_dir = sys.argv[1]
mode = sys.argv[2] if len(sys.argv) > 2 else "t2t"  # "nmt" for --vocab_type word outputs
files = batches.shard_files(output_dir)              # complete outputs only
print("%d records in %d shards" % (len(grain.sources.ArrayRecordDataSource(files)), len(files)))
for epoch in range(2):
    n = tokens = 0
    for batch in batches.grain_batches(output_dir, batch_size=4096 if mode == "t2t" else 64,
                                       mode=mode, seed=42 + epoch):
        first = batch["inputs"] if mode == "t2t" else batch["source"]
        n += len(first)
        tokens += int((first != 0).sum())
    print("epoch %d: %d pairs, %d source tokens" % (epoch, n, tokens))
