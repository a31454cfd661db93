"""Iterate training batches of an `--output_format parquet` output without TensorFlow: with
pyarrow, as a PyTorch DataLoader's dataset (when torch is installed), and through Hugging Face
datasets: `python examples/read_parquet_torch.py OUTPUT_DIR [t2t|nmt]`.
"""

import sys

import datasets

from pipeline.tools import batches

output_dir = sys.argv[1]
mode = sys.argv[2] if len(sys.argv) > 2 else "t2t"  # "nmt" for --vocab_type word outputs
size = 4096 if mode == "t2t" else 64                  # tokens (t2t) or pairs (nmt) per batch
key = "inputs" if mode == "t2t" else "source"

# pyarrow, streamed one row group at a time, shuffled through a buffer
print("pyarrow: %d batches" % sum(1 for _ in batches.parquet_batches(
    output_dir, size, mode=mode, seed=42)))

try:  # PyTorch: the batches are already made, so the DataLoader takes batch_size=None
    import torch

    class Batches(torch.utils.data.IterableDataset):
        def __iter__(self):
            return batches.parquet_batches(output_dir, size, mode=mode, seed=42)

    for batch in torch.utils.data.DataLoader(Batches(), batch_size=None):
        assert batch[key].dtype == torch.int32
    print("torch DataLoader: done")
except ImportError:
    print("torch not installed: the DataLoader part is skipped")

# Hugging Face datasets: load_dataset reads the shards; shuffle it, then batch it
files = batches.shard_files(output_dir)
table = datasets.load_dataset("parquet", data_files=files, split="train").shuffle(seed=42)
print("datasets: %d rows, %d batches" % (table.num_rows, sum(
    1 for _ in batches.dataset_batches(table, size, mode=mode))))
