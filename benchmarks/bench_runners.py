"""The same job on several runners: wall time, the time of each pass, and what a pass costs
beyond its work.

Runners (`--runners`, comma-separated):
- `direct`: DirectRunner, multi_processing, 2 workers (small inputs run in the job's process,
  `--in_process_below_mb`);
- `direct_mp`: the same with `--in_process_below_mb 0` (the job's 2 worker processes);
- `portable`: PortableRunner against Beam's Python job service with Beam's stock worker pool
  (EXTERNAL): the Job API submission and the external workers Flink and Spark use, without
  a JVM;
- `dask`: `--runner DaskRunner` (the job's patch of Beam's DaskRunner) on a dask.distributed
  cluster of a scheduler and 2 single-threaded workers under nannies, started as the tests
  start it (`tests/dask_cluster.py`);
- `prism` (with `--prism PATH`): `--runner PrismRunner --prism_location PATH`;
- `flink`, `spark`: a local Flink 1.20 session cluster (2 TaskManagers) or Spark 3.5
  standalone cluster and Beam's worker pool, started as the tests start them
  (`tests/clusters.py`), with Beam's job server jar (one per job). Skipped with the reason
  when the cluster or the jar cannot be had.

Input: the bundled sample (`sample_data/enzh-mlqe-pe`, 7,000 + 1,000 pairs) by default, or the
first `--lines N` pairs of the bench corpus (`--data_dir`, `train.{en,zh}.xz`). Every runner's
files are checked byte-identical to the first runner's. Per runner it prints the wall time,
each pass's seconds and its overhead against the first runner's same pass, and peak memory:
the largest single process and the sum over the job's process tree plus, for Dask, the
cluster's processes (the sum of each tree's peak, sampled with psutil every 0.2 s).

  .venv/bin/python benchmarks/bench_runners.py --runners direct,direct_mp,portable,flink,spark
  .venv/bin/python benchmarks/bench_runners.py --lines 100000 --runners direct_mp,flink
  .venv/bin/python benchmarks/bench_runners.py --lines 100000 --runners direct_mp,dask,prism \
      --prism ~/go/bin/prism
"""

import argparse
import json
import lzma
import os
import re
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(REPO, "tests"), REPO]

import clusters  # noqa: E402  (tests/clusters.py)
from dask_cluster import DaskCluster  # noqa: E402
from process_memory import TreeSampler  # noqa: E402  (benchmarks/process_memory.py)
from datagen_helpers import output_bytes  # noqa: E402

SAMPLE = os.path.join(REPO, "sample_data", "enzh-mlqe-pe")
DEFAULT_DATA_DIR = "/work/shared/data/bench/enzh-wmt21-24"
PASS_DONE = re.compile(r"pass (\d+) done in ([\d.]+) s(?: \(submitted after ([\d.]+) s\))?")
PASS_START = re.compile(r"^(\d\d:\d\d:\d\d) pass (\d+)(?: of ~?\d+)?: (.*)$")
JOB_SERVER = re.compile(r"job server started in ([\d.]+) s")


def inputs(args, work):
    if not args.lines:
        return ["--train_source", os.path.join(SAMPLE, "train.en"),
                "--train_target", os.path.join(SAMPLE, "train.zh"),
                "--dev_source", os.path.join(SAMPLE, "dev.en"),
                "--dev_target", os.path.join(SAMPLE, "dev.zh")]
    paths = []
    for lang in ("en", "zh"):
        path = os.path.join(work, "train.%d.%s" % (args.lines, lang))
        with lzma.open(os.path.join(args.data_dir, "train.%s.xz" % lang), "rb") as src, \
                open(path, "wb") as dst:
            for i, line in enumerate(src):
                if i == args.lines:
                    break
                dst.write(line)
        paths.append(path)
    return ["--train_source", paths[0], "--train_target", paths[1]]


def run_job(argv, out, other_pids=()):
    """Runs the job as a command; returns (wall seconds, its stderr lines, summary, peak MB
    of the largest process, peak MB summed over its tree and the trees of `other_pids`)."""
    start = time.time()
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.datagen"] + argv
                            + ["--output_dir", out, "--overwrite"], cwd=REPO,
                            env=dict(os.environ, PYTHONPATH=REPO), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    samplers = [TreeSampler(pid, 0.2, 0) for pid in [proc.pid] + list(other_pids)]
    for sampler in samplers:
        sampler.start()
    _, stderr = proc.communicate()
    wall = time.time() - start
    for sampler in samplers:
        sampler.stop()
    if proc.returncode != 0:
        raise RuntimeError("job failed (%d): %s" % (proc.returncode, stderr[-2000:]))
    largest = max(s.peak_single_bytes for s in samplers) / 2.0 ** 20
    total = sum(s.peak_bytes for s in samplers) / 2.0 ** 20
    with open(os.path.join(out, "p.datagen_summary.json")) as f:
        return wall, stderr.splitlines(), json.load(f), largest, total


class PythonJobService:
    """Beam's Python job service and worker pool: the portable runner's flags."""

    def __init__(self, work):
        self.procs = clusters.Processes(work)
        self.pool = clusters.WorkerPool(work)
        self.port = clusters.free_port()

    def start(self):
        proc = self.procs.start("job-service", [
            sys.executable, "-m", "apache_beam.runners.portability.local_job_service_main",
            "--port", str(self.port)])
        self.pool.start()
        import socket

        def answers():
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        clusters.wait_for(answers, "Beam's job service", [proc])
        return ["--runner", "PortableRunner", "--job_endpoint", "localhost:%d" % self.port,
                "--environment_type", "EXTERNAL", "--environment_config", self.pool.address]

    def stop(self):
        self.pool.stop()
        self.procs.stop()


def runner_setup(name, work, args):
    """(runner flags, stop function, seconds to start the services, pids of the services'
    processes) of runner `name`."""
    start = time.time()
    if name == "dask":
        cluster = DaskCluster(work, workers=2).start()
        return (["--runner", "DaskRunner", "--dask_client_address", cluster.address],
                cluster.stop, time.time() - start, [p.pid for p in cluster.procs.procs])
    if name == "prism":
        if not args.prism:
            raise clusters.Unavailable("no --prism PATH given")
        return (["--runner", "PrismRunner", "--prism_location", args.prism], lambda: None,
                0.0, [])
    if name == "direct":
        return (["--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
                 "--direct_num_workers", "2"], lambda: None, 0.0, [])
    if name == "direct_mp":
        return (["--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
                 "--direct_num_workers", "2", "--in_process_below_mb", "0"], lambda: None, 0.0,
                [])
    if name == "portable":
        service = PythonJobService(work)
        flags = service.start()
        return flags, service.stop, time.time() - start, []
    if name == "flink":
        jar = clusters.job_server_jar(clusters.FLINK_JOB_SERVER)
        cluster = clusters.FlinkCluster(work)
        pool = clusters.WorkerPool(work)
        cluster.start()
        pool.start()
        flags = ["--runner", "FlinkRunner", "--flink_master", cluster.master,
                 "--flink_version", clusters.FLINK_MINOR, "--flink_job_server_jar", jar,
                 "--parallelism", "2"]
    elif name == "spark":
        jar = clusters.job_server_jar(clusters.SPARK_JOB_SERVER)
        cluster = clusters.SparkCluster(work)
        pool = clusters.WorkerPool(work)
        cluster.start()
        pool.start()
        flags = ["--runner", "SparkRunner", "--spark_master_url", cluster.master_url,
                 "--spark_job_server_jar", jar]
    else:
        raise SystemExit("unknown runner %s" % name)

    def stop():
        pool.stop()
        cluster.stop()
    return (flags + ["--environment_type", "EXTERNAL", "--environment_config", pool.address],
            stop, time.time() - start, [])


def passes(lines):
    """[(number, label, seconds, seconds until submitted or None)] of the job's log lines
    (remote runners log when each pass was submitted)."""
    labels, done = {}, {}
    for line in lines:
        m = PASS_START.match(line)
        if m and int(m.group(2)) not in labels:  # not "pass 1: running, 41 s so far"
            labels[int(m.group(2))] = m.group(3).split(":")[0].split(" into ")[0]
        m = PASS_DONE.search(line)
        if m:
            done[int(m.group(1))] = (float(m.group(2)),
                                     float(m.group(3)) if m.group(3) else None)
    return [(n, labels.get(n, "?")) + done[n] for n in sorted(done)]


def _pass_text(number, label, seconds, submitted, first=None):
    """A pass's seconds; `first`: {pass number: seconds} of the first runner, for its
    overhead against it."""
    extra = ""
    if first and number in first:
        extra = " (%+.2f s)" % (seconds - first[number])
    return "pass %d (%s) %.2f s%s%s" % (number, label, seconds, extra, "" if submitted is None
                                         else ", submitted after %.2f s" % submitted)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runners", default="direct,direct_mp,portable,flink,spark,dask")
    p.add_argument("--prism", default=None, help="a Prism binary: runs `prism` too")
    p.add_argument("--lines", type=int, default=0, help="first N pairs of the bench corpus "
                   "instead of the sample")
    p.add_argument("--data_dir", default=DEFAULT_DATA_DIR)
    p.add_argument("--repeat", type=int, default=1, help="runs per runner")
    p.add_argument("--json_out", default=None)
    args = p.parse_args(argv)
    work = tempfile.mkdtemp(prefix="bench-runners-")
    job_inputs = inputs(args, work)
    flags = ["--problem", "p"]
    reference, rows, first = None, [], None
    names = args.runners.split(",")
    if args.prism and "prism" not in names:
        names.append("prism")
    for name in names:
        runner_work = tempfile.mkdtemp(prefix=name + "-", dir=work)
        try:
            runner, stop, setup, pids = runner_setup(name, runner_work, args)
        except clusters.Unavailable as e:
            print("%-10s skipped: %s" % (name, e), flush=True)
            rows.append({"runner": name, "skipped": str(e)})
            continue
        try:
            for i in range(args.repeat):
                out = os.path.join(runner_work, "out")
                wall, lines, summary, largest, total = run_job(job_inputs + flags + runner, out,
                                                               pids)
                files = output_bytes(out)
                if reference is None:
                    reference = files
                same = files == reference
                job_server = [float(m.group(1)) for m in map(JOB_SERVER.search, lines) if m]
                row = {"runner": name, "wall": round(wall, 2), "setup": round(setup, 1),
                       "job": summary["seconds"], "passes": passes(lines),
                       "job_server_start": job_server[0] if job_server else None,
                       "stages": summary["stages"], "byte_identical": same,
                       "peak_largest_mb": round(largest, 1), "peak_sum_mb": round(total, 1)}
                rows.append(row)
                if first is None:
                    first = {n: seconds for n, _, seconds, _ in row["passes"]}
                print("%-10s wall %6.2f s  job %6.2f s  %s%s  peak %.0f MB largest, %.0f MB "
                      "sum  bytes %s" % (
                    name, wall, summary["seconds"], "  ".join(
                        _pass_text(*x, first=first) for x in row["passes"]),
                    "  job server start %.1f s" % job_server[0] if job_server else "",
                    largest, total, "identical" if same else "DIFFERENT"), flush=True)
        finally:
            stop()
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r.get("byte_identical", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
