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
  cluster of a scheduler and 2 workers under nannies (`--dask_threads` each, default 1),
  started as the tests start it (`tests/dask_cluster.py`), once for all of the runs: its first
  run is reported as `cold` (workers that have imported nothing yet), the later ones `warm`;
- `dask_cold`: the same on a cluster started afresh for every run (always cold);
- `prism` (with `--prism PATH`): `--runner PrismRunner --prism_location PATH`;
- `flink`, `spark`: a local Flink 1.20 session cluster (2 TaskManagers) or Spark 3.5
  standalone cluster and Beam's worker pool, started as the tests start them
  (`tests/clusters.py`), with Beam's job server jar (one per job). Skipped with the reason
  when the cluster or the jar cannot be had.

Input: the bundled sample (`sample_data/enzh-mlqe-pe`, 7,000 + 1,000 pairs) by default, or the
first `--lines N` pairs of the bench corpus (`--data_dir`, `train.{en,zh}.xz`). Every runner's
files are checked byte-identical to the first runner's. With `--repeat N` the runners take
turns, round after round (on a loaded machine each gets the same share of the load). Per run
it prints the wall time, each pass's seconds and its overhead against the first runner's same
pass, the CPU seconds (user + system) of the job's process tree plus, for Dask, the cluster's
processes during the run, and peak memory: the largest single process and the sum over those
trees (the sum of each tree's peak, sampled with psutil every 0.2 s). `--dask_profile` adds,
per pass, the tasks the cluster ran, their compute and transfer seconds, the share of the
pass the workers computed, the bytes moved between workers and the costliest stages
(`benchmarks/dask_profile.py`); `--dask_report FILE` writes Dask's performance report.

  .venv/bin/python benchmarks/bench_runners.py --runners direct,direct_mp,portable,flink,spark
  .venv/bin/python benchmarks/bench_runners.py --lines 100000 --runners direct_mp,flink
  .venv/bin/python benchmarks/bench_runners.py --lines 100000 --runners direct_mp,dask,prism \
      --prism ~/go/bin/prism
  .venv/bin/python benchmarks/bench_runners.py --lines 100000 --runners direct_mp,dask,dask_cold \
      --repeat 3 --dask_profile
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
from dask_profile import TaskStream  # noqa: E402  (benchmarks/dask_profile.py)
from dask_cluster import DaskCluster  # noqa: E402
from process_memory import CpuSampler, TreeSampler  # noqa: E402  (benchmarks/process_memory.py)
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
    """Runs the job as a command; returns a dict: wall seconds, its stderr lines, the summary,
    peak MB of the largest process and summed over its tree and the trees of `other_pids`,
    CPU seconds of all of them, and the unix time each pass started and ended."""
    start = time.time()
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.datagen"] + argv
                            + ["--output_dir", out, "--overwrite"], cwd=REPO,
                            env=dict(os.environ, PYTHONPATH=REPO), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    samplers = [TreeSampler(pid, 0.2, 0) for pid in [proc.pid] + list(other_pids)]
    for sampler in samplers:
        sampler.start()
    cpu_sampler = CpuSampler([proc.pid] + list(other_pids))
    cpu_sampler.start()
    lines, starts, ends = [], {}, {}
    for line in proc.stderr:  # stdout (the summary table) is small: the pipe cannot fill
        lines.append(line.rstrip("\n"))
        m = PASS_START.match(lines[-1])
        if m and int(m.group(2)) not in starts:
            starts[int(m.group(2))] = time.time()
        m = PASS_DONE.search(lines[-1])
        if m:
            ends[int(m.group(1))] = time.time()
    proc.communicate()
    wall = time.time() - start
    for sampler in samplers:
        sampler.stop()
    cpu = cpu_sampler.stop()
    if proc.returncode != 0:
        raise RuntimeError("job failed (%d): %s" % (proc.returncode, "\n".join(lines[-20:])))
    with open(os.path.join(out, "p.datagen_summary.json")) as f:
        summary = json.load(f)
    return {"wall": wall, "lines": lines, "summary": summary, "cpu": cpu,
            "largest": max(s.peak_single_bytes for s in samplers) / 2.0 ** 20,
            "total": sum(s.peak_bytes for s in samplers) / 2.0 ** 20,
            "starts": starts, "ends": ends, "start": start}


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
    if name in ("dask", "dask_cold"):
        cluster = DaskCluster(work, workers=2, threads=args.dask_threads).start()
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


def _dask_figures(profile, run, moved_before):
    """Per pass: tasks, compute and transfer seconds, busy share, costliest stages; bytes the
    workers moved during the run."""
    passes = profile.passes(run["start"], run["starts"], run["ends"])
    return {"passes": {str(n): f for n, f in sorted(passes.items())},
            "bytes_moved": profile.bytes_moved() - moved_before}


def _print_profile(figures):
    for number, f in figures["passes"].items():
        print("    pass %s: %d tasks, the first %s s after the pass began; compute %.2f s "
              "(workers busy %s of the pass), transfers %.2f s, stage specs %.0f kB; "
              "costliest: %s" % (number, f["tasks"], f["first_task_after_s"], f["compute_s"],
                                 "%.0f%%" % (100 * f["busy"]) if f["busy"] else "?",
                                 f["transfer_s"], f["spec_bytes"] / 1e3,
                                 ", ".join("%s %.2f s" % x for x in f["stages"])))
    print("    bytes moved between workers: %.1f MB" % (figures["bytes_moved"] / 1e6))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runners", default="direct,direct_mp,portable,flink,spark,dask")
    p.add_argument("--prism", default=None, help="a Prism binary: runs `prism` too")
    p.add_argument("--lines", type=int, default=0, help="first N pairs of the bench corpus "
                   "instead of the sample")
    p.add_argument("--data_dir", default=DEFAULT_DATA_DIR)
    p.add_argument("--repeat", type=int, default=1, help="rounds: each runner runs once a round")
    p.add_argument("--dask_threads", type=int, default=1, help="threads of each Dask worker")
    p.add_argument("--dask_profile", action="store_true", help="per pass: tasks, compute, "
                   "transfers, busy share (the scheduler's task stream)")
    p.add_argument("--dask_report", default=None, help="Dask's performance_report HTML of "
                   "the last Dask run")
    p.add_argument("--json_out", default=None)
    args = p.parse_args(argv)
    work = tempfile.mkdtemp(prefix="bench-runners-")
    job_inputs = inputs(args, work)
    flags = ["--problem", "p"]
    reference, rows, first = None, [], None
    names = args.runners.split(",")
    if args.prism and "prism" not in names:
        names.append("prism")
    services, runs_of = {}, {}  # name -> (flags, stop, setup, pids, profile); runs so far
    skipped = set()
    try:
        for _ in range(args.repeat):
            for name in names:
                if name in skipped:
                    continue
                if name not in services:
                    runner_work = tempfile.mkdtemp(prefix=name + "-", dir=work)
                    try:
                        runner, stop, setup, pids = runner_setup(name, runner_work, args)
                    except clusters.Unavailable as e:
                        print("%-10s skipped: %s" % (name, e), flush=True)
                        rows.append({"runner": name, "skipped": str(e)})
                        skipped.add(name)
                        continue
                    profile = (TaskStream(runner[runner.index("--dask_client_address") + 1])
                               if name.startswith("dask") and (args.dask_profile
                                                               or args.dask_report) else None)
                    services[name] = (runner, stop, setup, pids, profile, runner_work)
                runner, stop, setup, pids, profile, runner_work = services[name]
                state = "" if not name.startswith("dask") else (
                    "cold" if name == "dask_cold" or not runs_of.get(name) else "warm")
                runs_of[name] = runs_of.get(name, 0) + 1
                out = os.path.join(runner_work, "out")
                moved = profile.bytes_moved() if profile else 0

                def one_run():
                    return run_job(job_inputs + flags + runner, out, pids)
                run = (profile.report(args.dask_report, one_run)
                       if profile and args.dask_report else one_run())
                summary = run["summary"]
                files = output_bytes(out)
                if reference is None:
                    reference = files
                same = files == reference
                job_server = [float(m.group(1)) for m in map(JOB_SERVER.search, run["lines"])
                              if m]
                row = {"runner": name, "state": state, "wall": round(run["wall"], 2),
                       "setup": round(setup, 1), "job": summary["seconds"],
                       "cpu": round(run["cpu"], 1), "passes": passes(run["lines"]),
                       "job_server_start": job_server[0] if job_server else None,
                       "stages": summary["stages"], "byte_identical": same,
                       "peak_largest_mb": round(run["largest"], 1),
                       "peak_sum_mb": round(run["total"], 1)}
                if profile:
                    row["dask"] = _dask_figures(profile, run, moved)
                rows.append(row)
                if first is None:
                    first = {n: seconds for n, _, seconds, _ in row["passes"]}
                print("%-10s %-4s wall %6.2f s  job %6.2f s  cpu %6.1f s  %s%s  peak %.0f MB "
                      "largest, %.0f MB sum  bytes %s" % (
                          name, state, run["wall"], summary["seconds"], run["cpu"], "  ".join(
                              _pass_text(*x, first=first) for x in row["passes"]),
                          "  job server start %.1f s" % job_server[0] if job_server else "",
                          run["largest"], run["total"], "identical" if same else "DIFFERENT"),
                      flush=True)
                if profile:
                    _print_profile(row["dask"])
                if name == "dask_cold":  # a fresh cluster for its next run
                    if profile:
                        profile.close()
                    stop()
                    del services[name]
    finally:
        for runner, stop, setup, pids, profile, _ in services.values():
            if profile:
                profile.close()
            stop()
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r.get("byte_identical", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
