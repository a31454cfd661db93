"""The bundled sample job on a local S3 server against the same job on local disk, same run.

Starts `moto_server` on 127.0.0.1 (tests/object_store_servers.py), uploads the bundled sample
(sample_data/enzh-mlqe-pe: 7,000 train and 1,000 dev pairs), then runs `./run_local.sh`'s job
(`python -m pipeline.datagen`, DirectRunner) alternately with input and output on local disk
and in the bucket, `--repeat` times each, each into a fresh output directory. Prints each
run's wall time and peak memory of the process tree (benchmarks/process_memory.py), the
medians, and the S3/local ratio; checks the two outputs are byte-identical.

    .venv/bin/python benchmarks/bench_object_store.py --repeat 5 [--delay_ms 30]

`--delay_ms` puts a TCP proxy in front of the server that holds every request that long (a
remote store's round trip); 0 (default) measures the local server as it answers.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, os.path.join(ROOT, "tests")]

from object_store_servers import DelayProxy, MotoServer  # noqa: E402
from process_memory import TreeSampler  # noqa: E402

SAMPLE = os.path.join(ROOT, "sample_data", "enzh-mlqe-pe")
BUCKET = "bench"
JOB_FLAGS = ["--problem", "translate_enzh_wmt8k", "--vocab_size", "8192",
             "--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
             "--direct_num_workers", "2"]


def _inputs(prefix):
    return ["--train_source", prefix + "train.en", "--train_target", prefix + "train.zh",
            "--dev_source", prefix + "dev.en", "--dev_target", prefix + "dev.zh"]


def run_job(argv):
    """(wall seconds, peak RSS bytes summed over the tree, peak RSS bytes of its largest
    process) of one job; raises on a failed run."""
    start = time.time()
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.datagen"] + argv, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sampler = TreeSampler(proc.pid, 0.05, 0)
    sampler.start()
    err = proc.communicate()[1]
    seconds = time.time() - start
    sampler.stop()
    if proc.returncode != 0:
        raise RuntimeError("job failed (%d): %s" % (proc.returncode, err[-2000:]))
    return seconds, sampler.peak_bytes, sampler.peak_single_bytes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--delay_ms", type=float, default=0.0)
    parser.add_argument("--json_out", default=None)
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="bench-object-store-")
    server = MotoServer(work)
    proxy = DelayProxy(server.port, args.delay_ms / 1000.0) if args.delay_ms else None
    endpoint = proxy.endpoint if proxy else server.endpoint
    client = server.client()
    client.create_bucket(Bucket=BUCKET)
    for name in sorted(os.listdir(SAMPLE)):
        with open(os.path.join(SAMPLE, name), "rb") as f:
            client.put_object(Bucket=BUCKET, Key="in/" + name, Body=f.read())
    runs = {"local": [], "s3": []}
    try:
        for i in range(args.repeat):
            for where in ("local", "s3"):  # alternated, so load drifts hit both alike
                if where == "local":
                    argv = _inputs(SAMPLE + "/") + ["--output_dir",
                                                    os.path.join(work, "out%d" % i)]
                else:
                    argv = _inputs("s3://%s/in/" % BUCKET) + [
                        "--output_dir", "s3://%s/out%d" % (BUCKET, i)] + server.beam_flags(
                            endpoint)
                seconds, peak, largest = run_job(argv + JOB_FLAGS)
                runs[where].append((seconds, peak, largest))
                print("%-5s run %d: %6.2f s, peak %5.0f MB over the tree, %5.0f MB largest "
                      "process" % (where, i + 1, seconds, peak / 1e6, largest / 1e6),
                      flush=True)
        local_dir = os.path.join(work, "out0")
        same = True
        for name in sorted(os.listdir(local_dir)):
            path = os.path.join(local_dir, name)
            if os.path.isfile(path) and not name.endswith(
                    (".json", "COMPLETE")):
                got = client.get_object(Bucket=BUCKET, Key="out0/" + name)["Body"].read()
                with open(path, "rb") as f:
                    same = same and got == f.read()
    finally:
        if proxy:
            proxy.stop()
        server.stop()
    medians = {w: statistics.median(s for s, _, _ in r) for w, r in runs.items()}
    peaks = {w: max(p for _, p, _ in r) for w, r in runs.items()}
    largest = {w: max(p for _, _, p in r) for w, r in runs.items()}
    print("\nmedian wall: local %.2f s, s3 %.2f s (s3/local %.2fx); peak memory over the tree "
          "(largest process): local %.0f (%.0f) MB, s3 %.0f (%.0f) MB; request delay %g ms; "
          "outputs byte-identical: %s" % (
              medians["local"], medians["s3"], medians["s3"] / medians["local"],
              peaks["local"] / 1e6, largest["local"] / 1e6, peaks["s3"] / 1e6,
              largest["s3"] / 1e6, args.delay_ms, same))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"runs": runs, "median_seconds": medians, "peak_bytes": peaks,
                       "peak_largest_process_bytes": largest,
                       "delay_ms": args.delay_ms, "byte_identical": same}, f, indent=1)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
