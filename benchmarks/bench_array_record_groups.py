"""ArrayRecord writer options on the job's own records: the shards' size and what Grain reads.

The train shards of a TFRecord output (`--tfrecord_dir`, any run of the job) are rewritten
once per writer option string (`--options`, array_record's syntax), the same records in the
same shards; per option: the total size (and its ratio to the TFRecord shards), the zero bytes
at the files' ends, Grain's random reads (`ArrayRecordDataSource[i]` at random indices, CPU
and wall microseconds per record) and a globally shuffled epoch (`MapDataset.shuffle`, what a
Grain trainer reads), and whether Grain logged an ERROR opening the files (it does for any
group size but 1). Each option runs in a fresh process, one after another.

  .venv/bin/python benchmarks/bench_array_record_groups.py --tfrecord_dir OUT
  .venv/bin/python benchmarks/bench_array_record_groups.py --tfrecord_dir OUT \
      --options group_size:1,uncompressed group_size:1,zstd:3 group_size:16,zstd:3
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

_ONE = r'''
import glob, json, logging, os, random, sys, time
sys.path.insert(0, sys.argv[1])
options, out, shards = sys.argv[2], sys.argv[3], sys.argv[4:]
from transforms.formats.tfrecord_framing import read_records
from array_record.python.array_record_module import ArrayRecordWriter
paths = []
for i, shard in enumerate(sorted(shards)):
    path = os.path.join(out, "s%05d.array_record" % i)
    writer = ArrayRecordWriter(path, options)
    with open(shard, "rb") as f:
        for record in read_records(f):
            writer.write(record)
    writer.close()
    paths.append(path)
errors = []
class Collect(logging.Handler):
    def emit(self, record):
        if record.levelno >= logging.ERROR:
            errors.append(record.getMessage())
logging.getLogger().addHandler(Collect())
logging.getLogger("absl").setLevel(logging.ERROR)  # Grain's "Failed to load jax profiler"
import grain
source = grain.sources.ArrayRecordDataSource(paths)
n = len(source)
rng = random.Random(0)
picks = [rng.randrange(n) for _ in range(20000)]
cpu, wall = time.process_time(), time.perf_counter()
for i in picks:
    source[i]
random_cpu = (time.process_time() - cpu) / len(picks) * 1e6
random_wall = (time.perf_counter() - wall) / len(picks) * 1e6
cpu, wall = time.process_time(), time.perf_counter()
count = sum(1 for _ in grain.MapDataset.source(source).shuffle(seed=0))
epoch_cpu, epoch_wall = time.process_time() - cpu, time.perf_counter() - wall
zeros = 0
for path in paths:
    with open(path, "rb") as f:
        data = f.read()
    zeros += len(data) - len(data.rstrip(b"\0"))
print(json.dumps({"options": options, "records": count,
                  "bytes": sum(os.path.getsize(p) for p in paths), "zero_tail": zeros,
                  "random_us_cpu": round(random_cpu, 1), "random_us_wall": round(random_wall, 1),
                  "epoch_s_cpu": round(epoch_cpu, 2), "epoch_s_wall": round(epoch_wall, 2),
                  "grain_errors": len(errors)}))
'''


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tfrecord_dir", required=True,
                        help="a TFRecord output of the job; its *-train-* shards are read")
    parser.add_argument("--options", nargs="+", default=[
        "group_size:1,uncompressed", "group_size:1,zstd:3", "group_size:16,zstd:3"])
    args = parser.parse_args(argv)
    shards = sorted(p for p in glob.glob(os.path.join(args.tfrecord_dir, "*-train-*"))
                    if "." not in os.path.basename(p))
    if not shards:
        parser.error("no TFRecord train shards in %s" % args.tfrecord_dir)
    tfrecord_bytes = sum(os.path.getsize(p) for p in shards)
    print("%d TFRecord train shards, %d bytes" % (len(shards), tfrecord_bytes))
    print("%-28s %9s %11s %6s %10s %14s %16s %7s" % (
        "options", "records", "bytes", "x TFR", "zero tail", "random us cpu/wall",
        "shuffled epoch s", "errors"))
    for options in args.options:
        with tempfile.TemporaryDirectory(prefix="bench-array-record-") as out:
            done = subprocess.run([sys.executable, "-c", _ONE, REPO, options, out] + shards,
                                  capture_output=True, text=True, check=True)
        row = json.loads(done.stdout.splitlines()[-1])
        print("%-28s %9d %11d %6.2f %10d %8.1f/%-9.1f %7.2f/%-8.2f %7d" % (
            options, row["records"], row["bytes"], row["bytes"] / tfrecord_bytes,
            row["zero_tail"], row["random_us_cpu"], row["random_us_wall"], row["epoch_s_cpu"],
            row["epoch_s_wall"], row["grain_errors"]))


if __name__ == "__main__":
    main()
