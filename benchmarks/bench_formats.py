"""The same job in every `--output_format`, one row per format: the job's wall time (and its
ratio to TFRecord's), the output's size, the consumer library's read throughput and the job's
peak memory.

Read throughput: records per second over the train split, one pass, records parsed to int32
arrays and nothing else, in a fresh process per reader:
- tfrecord: `tf.data.TFRecordDataset` + `tf.io.parse_single_example` (the reader's parse);
- array_record: `grain.MapDataset` over `ArrayRecordDataSource`, globally shuffled (what a
  Grain trainer reads), the Example parsed with protobuf;
- parquet: pyarrow `iter_batches` (`pipeline.tools.batches.parquet_pairs`), and Hugging Face
  `datasets.load_dataset("parquet")` iterated as numpy (the load's conversion counted);
- fairseq: the data-bin's train `.bin`/`.idx` of both sides, memory-mapped as fairseq's
  `MMapIndexedDataset` reads them, each sentence copied to an int32 array (numpy only).
The job's CPU seconds (user + sys of it and its reaped children, `wait4`) are less spoiled
by a loaded machine than its wall time: both are shown, each with its ratio to TFRecord's.

Input: the bench corpus (`--data_dir`, `train.{en,zh}.xz`), all of it by default or its first
`--lines N` pairs. Each format's records are checked equal to TFRecord's, shard by shard.

  .venv/bin/python benchmarks/bench_formats.py                 # the full bench corpus
  .venv/bin/python benchmarks/bench_formats.py --lines 20000   # a smoke run
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [HERE, REPO]

from bench_runners import DEFAULT_DATA_DIR, inputs  # noqa: E402
from bench_runs import DEFAULT_RUNNER_ARGS, run_measured  # noqa: E402

FORMATS = ("tfrecord", "array_record", "parquet", "fairseq", "text")  # tfrecord first: the base

_READ = r'''
import glob, json, sys, time
fmt, files = sys.argv[1], sorted(sys.argv[2:])
n = 0
if fmt == "tfrecord":
    import tensorflow as tf
    spec = {"inputs": tf.io.VarLenFeature(tf.int64), "targets": tf.io.VarLenFeature(tf.int64)}
    ds = tf.data.TFRecordDataset(files).map(
        lambda r: {k: tf.cast(tf.sparse.to_dense(v), tf.int32)
                   for k, v in tf.io.parse_single_example(r, spec).items()},
        num_parallel_calls=tf.data.AUTOTUNE)
    start = time.perf_counter()
    for _ in ds.as_numpy_iterator():
        n += 1
elif fmt == "array_record":
    import grain
    import numpy as np
    from transforms.formats.example_proto import Int64FeaturesWriter
    ex = Int64FeaturesWriter()
    ds = grain.MapDataset.source(grain.sources.ArrayRecordDataSource(files)).shuffle(seed=0)
    start = time.perf_counter()
    for record in ds.map(ex.parse):
        np.asarray(record["inputs"], np.int32), np.asarray(record["targets"], np.int32)
        n += 1
elif fmt == "parquet":
    from pipeline.tools.batches import parquet_pairs
    start = time.perf_counter()
    for _ in parquet_pairs(files):
        n += 1
elif fmt == "fairseq":  # the data-bin's train .bin/.idx, each sentence an int array
    import numpy as np
    from transforms.formats.fairseq_bin import read_index
    start = time.perf_counter()
    for idx in files:
        with open(idx, "rb") as f:
            dtype, sizes, pointers = read_index(f.read())
        data = np.memmap(idx[:-4] + ".bin", dtype=dtype, mode="r")
        starts = pointers // dtype.itemsize
        for p, size in zip(starts.tolist(), sizes.tolist()):
            np.asarray(data[p:p + size], np.int32)
            n += 1
    n //= 2  # both sides: pairs
else:  # datasets
    import datasets
    start = time.perf_counter()  # the load (Arrow conversion into the cache) counted
    ds = datasets.load_dataset("parquet", data_files=files,
                               split="train").with_format("numpy")
    for _ in ds:
        n += 1
print(json.dumps({"records": n, "seconds": time.perf_counter() - start}))
'''


def read_throughput(reader, files, work):
    env = dict(os.environ, PYTHONPATH=REPO, HF_DATASETS_CACHE=os.path.join(work, "hf"))
    done = subprocess.run([sys.executable, "-c", _READ, reader] + files, cwd=REPO, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("%s read failed: %s" % (reader, done.stderr[-2000:]))
    got = json.loads(done.stdout.strip().splitlines()[-1])
    return got["records"], got["records"] / got["seconds"]


def same_records(out, base):
    from transforms.shards.record_formats import format_of
    for path in sorted(glob.glob(os.path.join(base, "p-*-of-*"))):
        name = os.path.basename(path)
        (other,) = glob.glob(os.path.join(out, name + "*"))
        if list(format_of(other).read_shard(other)) != list(format_of(path).read_shard(path)):
            raise AssertionError("%s: records differ from TFRecord's" % other)


def _summary(out):
    with open(os.path.join(out, "p.datagen_summary.json")) as f:
        return json.load(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data_dir", default=DEFAULT_DATA_DIR)
    parser.add_argument("--lines", type=int, default=0, help="first N pairs (0: all)")
    parser.add_argument("--work_dir", default=None)
    parser.add_argument("--json", default=None, help="also write the rows here")
    parser.add_argument("--formats", default=",".join(FORMATS),
                        help="comma-separated, tfrecord first (the base of the ratios)")
    args = parser.parse_args()
    work = args.work_dir or tempfile.mkdtemp(prefix="bench-formats-")
    os.makedirs(work, exist_ok=True)
    if not args.lines:  # the whole corpus: `inputs` with a limit no corpus reaches
        args.lines = 1 << 62
    argv = inputs(args, work) + ["--problem", "p", "--vocab_size", "8192"] \
        + DEFAULT_RUNNER_ARGS.split()
    rows = []
    for fmt in args.formats.split(","):
        out = os.path.join(work, "out-" + fmt)
        run = run_measured([sys.executable, "-m", "pipeline.datagen"] + argv + [
            "--output_dir", out, "--output_format", fmt, "--overwrite"],
            os.path.join(work, "job-" + fmt), cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO))
        if run["returncode"] != 0:
            raise RuntimeError("%s job failed: see %s" % (fmt, run["stderr_path"]))
        shards = sorted(glob.glob(os.path.join(out, "p-*-of-*")))
        if fmt not in ("tfrecord", "text"):  # text holds the text, not the ids
            same_records(out, os.path.join(work, "out-tfrecord"))
        train = [p for p in shards if "-train-" in os.path.basename(p)]
        readers = {"tfrecord": ["tfrecord"], "array_record": ["array_record"],
                   "parquet": ["parquet", "datasets"], "fairseq": ["fairseq"], "text": []}[fmt]
        if fmt == "fairseq":  # the data-bin is the output a trainer reads
            train = sorted(glob.glob(os.path.join(out, "p.data-bin", "train.*.idx")))
            shards += glob.glob(os.path.join(out, "p.data-bin", "*"))
        records = sum(s["records"] for s in _summary(out)["splits"]["train"]["shards"])
        throughput = {}
        for reader in readers:
            records, per_second = read_throughput(reader, train, work)
            throughput[reader] = round(per_second)
        rows.append({"format": fmt, "job_seconds": round(run["wall_seconds"], 1),
                     "job_cpu_seconds": round(run["cpu_seconds"], 1),
                     "output_mb": round(sum(os.path.getsize(p) for p in shards) / 2 ** 20, 1),
                     "train_records": records, "read_records_per_s": throughput,
                     "peak_largest_mb": round(run["max_single_process_rss_mb"]),
                     "peak_tree_mb": round(run["tree_peak_rss_mb"])})
    base, base_cpu = rows[0]["job_seconds"], rows[0]["job_cpu_seconds"]
    print("%-13s %9s %7s %9s %7s %10s %10s %12s %12s  %s" % (
        "format", "job s", "x tfr", "job cpu s", "x tfr", "output MB", "records",
        "largest MB", "tree MB", "read records/s"))
    for row in rows:
        row["job_vs_tfrecord"] = round(row["job_seconds"] / base, 3)
        row["cpu_vs_tfrecord"] = round(row["job_cpu_seconds"] / base_cpu, 3)
        print("%-13s %9.1f %7.3f %9.1f %7.3f %10.1f %10d %12d %12d  %s" % (
            row["format"], row["job_seconds"], row["job_vs_tfrecord"],
            row["job_cpu_seconds"], row["cpu_vs_tfrecord"], row["output_mb"],
            row["train_records"], row["peak_largest_mb"], row["peak_tree_mb"],
            ", ".join("%s %d" % kv for kv in row["read_records_per_s"].items())))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
