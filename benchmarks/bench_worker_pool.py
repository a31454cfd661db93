"""The job's local worker pool against Beam's own worker processes, runs interleaved.

DirectRunner's multi_processing passes take their workers from the job's pool
(`--local_worker_pool auto`, the default: `pipeline/runtime/local_worker_pool.py`) or from
processes Beam starts anew for every pass (`--local_worker_pool off`). This runs the same job
in both modes in turn (A B A B ...: on a shared machine a slow minute then hits both), prints
each run's wall time, the job's stage seconds and the peak RSS of the process tree, the
medians and their ratio, and checks that every run wrote the same bytes.

  # the bundled sample (run_local.sh's job), with worker processes (--in_process_below_mb 0)
  .venv/bin/python benchmarks/bench_worker_pool.py --input sample --repeat 3
  # the whole bench corpus (759,976 pairs; staged once into --work_dir/input)
  .venv/bin/python benchmarks/bench_worker_pool.py --input bench --repeat 3 --work_dir /tmp/bench_pool
  # its first 100,000 pairs
  .venv/bin/python benchmarks/bench_worker_pool.py --input bench --lines 100000 --repeat 3

Peak memory and wall time are measured as `bench_datagen.py` measures them (`run_measured`).
"""

import argparse
import glob
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile

import bench_datagen
import bench_runs

REPO = bench_runs.REPO_ROOT
SAMPLE = os.path.join(REPO, "sample_data", "enzh-mlqe-pe")
MODES = ("auto", "off")
RUNNER = ["--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
          "--direct_num_workers", "2"]


def output_digest(out_dir: str) -> str:
    """sha256 over every output file but the summary and the marker (they hold times)."""
    digest = hashlib.sha256()
    for path in sorted(glob.glob(os.path.join(out_dir, "*"))):
        if os.path.isfile(path) and not path.endswith((".datagen_summary.json",
                                                       ".DATAGEN_COMPLETE")):
            digest.update(os.path.basename(path).encode() + b"\0")
            with open(path, "rb") as f:
                digest.update(f.read())
    return digest.hexdigest()[:16]


def job_command(args: argparse.Namespace, inputs: "list[tuple[str, str]]", out_dir: str,
                mode: str) -> "list[str]":
    cmd = [args.python, "-m", "pipeline.datagen", "--output_dir", out_dir,
           "--problem", "translate_enzh_wmt8k", "--vocab_size", "8192"]
    for flag, path in inputs:
        cmd += [flag, path]
    return cmd + RUNNER + ["--in_process_below_mb", str(args.in_process_below_mb),
                           "--local_worker_pool", mode] + args.extra


def run_once(args: argparse.Namespace, inputs: "list[tuple[str, str]]", work_dir: str,
             mode: str, number: int) -> dict:
    out_dir = os.path.join(work_dir, "out-" + mode)
    shutil.rmtree(out_dir, ignore_errors=True)
    log = os.path.join(work_dir, "logs", "%s-%d" % (mode, number))
    run = bench_runs.run_measured(job_command(args, inputs, out_dir, mode), log, cwd=REPO,
                                  env=bench_runs.child_env(),
                                  interval=args.sample_interval, pss_interval=0)
    record = {"mode": mode, "run": number, "wall_s": round(run["wall_seconds"], 2),
              "peak_mb": round(run["peak_mb"], 1), "ok": run["returncode"] == 0}
    if record["ok"]:
        with open(os.path.join(out_dir, "translate_enzh_wmt8k.datagen_summary.json")) as f:
            summary = json.load(f)
        record["stages"] = {name: stage.get("seconds") for name, stage
                            in summary.get("stages", {}).items()}
        record["output"] = output_digest(out_dir)
    else:
        record["error"] = bench_runs.tail(run["stderr_path"], 10)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print("%-4s run %d: %6.2f s wall, peak %7.1f MB, load %.1f, %s" % (
        mode, number, record["wall_s"], record["peak_mb"], load,
        " ".join("%s %.1f s" % kv for kv in sorted(record.get("stages", {}).items())
                 if kv[1] is not None) or "FAILED\n" + record["error"]), flush=True)
    return record


def main(argv: "list[str] | None" = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--input", choices=("sample", "bench"), default="sample",
                   help="sample: sample_data/enzh-mlqe-pe (train + dev); bench: the bench "
                        "corpus of --data_dir (train.en.xz, train.zh.xz)")
    p.add_argument("--data_dir", default=bench_datagen.DEFAULT_DATA_DIR)
    p.add_argument("--lines", type=int, default=None, help="bench: the first N pairs only")
    p.add_argument("--repeat", type=int, default=3, help="runs of each mode")
    p.add_argument("--in_process_below_mb", type=float, default=0,
                   help="passed to the job; 0 (always worker processes) by default, as the "
                        "sample is below the job's default of 16")
    p.add_argument("--work_dir", default=None, help="kept; default: a temp dir, removed")
    p.add_argument("--json_out", default=None)
    p.add_argument("--python", default=None, help="default: the repo's .venv/bin/python, "
                                                  "else this interpreter")
    p.add_argument("--sample_interval", type=float, default=0.1)
    p.add_argument("extra", nargs="*", help="more flags for the job (after --)")
    args = p.parse_args(argv)
    venv = os.path.join(REPO, ".venv", "bin", "python")
    args.python = args.python or (venv if os.path.exists(venv) else sys.executable)
    work_dir = args.work_dir or tempfile.mkdtemp(prefix="bench-pool-")
    os.makedirs(os.path.join(work_dir, "logs"), exist_ok=True)
    if args.input == "sample":
        inputs = [("--train_source", os.path.join(SAMPLE, "train.en")),
                  ("--train_target", os.path.join(SAMPLE, "train.zh")),
                  ("--dev_source", os.path.join(SAMPLE, "dev.en")),
                  ("--dev_target", os.path.join(SAMPLE, "dev.zh"))]
    else:
        args.source = os.path.join(args.data_dir, bench_datagen.SOURCE_NAME)
        args.target = os.path.join(args.data_dir, bench_datagen.TARGET_NAME)
        files = bench_runs.prepare_input(args, os.path.join(work_dir, "input"))["files"]
        inputs = [("--train_source", files["source"]["path"]),
                  ("--train_target", files["target"]["path"])]
    records = []
    try:
        for number in range(1, args.repeat + 1):
            for mode in MODES:
                records.append(run_once(args, inputs, work_dir, mode, number))
    finally:
        if not args.work_dir:
            shutil.rmtree(work_dir, ignore_errors=True)
    ok = [r for r in records if r["ok"]]
    medians = {}
    for mode in MODES:
        walls = [r["wall_s"] for r in ok if r["mode"] == mode]
        if walls:
            medians[mode] = statistics.median(walls)
            print("%-4s median %.2f s wall (%s)" % (mode, medians[mode],
                                                    ", ".join("%.2f" % w for w in walls)))
    if len(medians) == 2:
        print("off / auto: %.2f (the pool saves %.0f%% of the job's wall time)" % (
            medians["off"] / medians["auto"], 100 * (1 - medians["auto"] / medians["off"])))
    outputs = {r["output"] for r in ok}
    identical = len(outputs) == 1 and len(ok) == len(records)
    print("outputs: %s" % ("IDENTICAL in every run (%s)" % outputs.pop() if identical
                           else "DIFFERENT or failed: %s" % sorted(outputs)))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"input": args.input, "lines": args.lines, "runs": records,
                       "median_wall_s": medians, "identical": identical}, f, indent=1)
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
