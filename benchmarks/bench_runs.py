"""Measured runs for bench_datagen.py: a command in a fresh subprocess with its wall time,
CPU time and the peak memory of its process tree; the staged input; our pipeline's run.

Both sides of the benchmark (the T2T reproduction's stage subprocesses, t2t_reproduction.py,
and `python -m pipeline.datagen`) run through `run_measured`, so their figures are taken the
same way: peak RSS sampled with psutil over the subprocess and all of its descendants
(process_memory.TreeSampler), combined with the kernel's high-water mark of the largest
single process (wait4's ru_maxrss).
"""

import collections
import json
import lzma
import os
import shlex
import shutil
import subprocess
import time

import psutil  # requirements-test.txt; not a runtime dependency of the job

from process_memory import TreeSampler

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
DEFAULT_RUNNER_ARGS = ("--runner DirectRunner --direct_running_mode multi_processing "
                       "--direct_num_workers 2")


def run_measured(cmd, log_prefix, cwd=None, env=None, interval=0.1, pss_interval=0.5):
    """Runs cmd in a fresh subprocess; returns wall time, peak RSS and exit status.

    stdout/stderr go to log_prefix + ".stdout" / ".stderr".
    """
    out_path, err_path = log_prefix + ".stdout", log_prefix + ".stderr"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.perf_counter()
        start_unix = time.time()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=cwd, env=env)
        sampler = TreeSampler(proc.pid, interval, pss_interval)
        sampler.start()
        try:
            _, status, rusage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            proc.wait()
            sampler.stop()
            raise
        wall = time.perf_counter() - t0
        sampler.stop()
    proc.returncode = os.waitstatus_to_exitcode(status)
    # Linux: ru_maxrss is in KiB and, for wait4, is the max over the child and its
    # reaped descendants (largest single process, not a sum). Descendants that were not
    # reaped by their parent are only in the psutil samples.
    rusage_single_mb = rusage.ru_maxrss / 1024.0
    sampled_single_mb = sampler.peak_single_bytes / 2.0 ** 20
    max_single_mb = max(rusage_single_mb, sampled_single_mb)
    tree_peak_mb = sampler.peak_bytes / 2.0 ** 20
    return {
        "cmd": cmd,
        "returncode": proc.returncode,
        "wall_seconds": wall,
        "start_unix": start_unix,
        "cpu_seconds": rusage.ru_utime + rusage.ru_stime,
        "peak_mb": max(tree_peak_mb, max_single_mb),
        "tree_peak_rss_mb": tree_peak_mb,
        "tree_peak_pss_mb": sampler.peak_pss_bytes / 2.0 ** 20 or None,
        "max_single_process_rss_mb": max_single_mb,
        "max_single_process_rss_mb_rusage": rusage_single_mb,
        "max_single_process_rss_mb_sampled": sampled_single_mb,
        "max_single_process_sampled": sampler.peak_single_process,
        "max_processes": sampler.max_procs,
        "memory_sampler": "psutil %s" % psutil.__version__,
        "stdout_path": out_path,
        "stderr_path": err_path,
        "_samples": sampler.samples,
    }


def tail(path, n=25):
    try:
        with open(path, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-n:])


def child_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [REPO_ROOT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    return env


def public(run):
    return {k: v for k, v in run.items() if not k.startswith("_")}


def prepare_input(args, input_dir):
    """Stages the (first --lines of the) source/target files as plain text in input_dir."""
    os.makedirs(input_dir, exist_ok=True)
    want = {"source": os.path.abspath(args.source), "target": os.path.abspath(args.target),
            "lines": args.lines}
    meta_path = os.path.join(input_dir, "input.json")
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("request") == want and all(
                os.path.exists(meta["files"][s]["path"]) for s in ("source", "target")):
            print("[input] reusing %s" % input_dir)
            return meta

    def plain_name(path):
        base = os.path.basename(path)
        return base[:-3] if base.endswith(".xz") else base

    names = {"source": plain_name(args.source), "target": plain_name(args.target)}
    if names["source"] == names["target"]:
        names = {s: "%s.%s" % (s, n) for s, n in names.items()}
    files = {}
    for side in ("source", "target"):
        src = want[side]
        dst = os.path.join(input_dir, names[side])
        if os.path.lexists(dst):
            os.remove(dst)
        t0 = time.perf_counter()
        if src.endswith(".xz") or args.lines is not None:
            opener = lzma.open if src.endswith(".xz") else open
            n = 0
            with opener(src, "rb") as fin, open(dst, "wb") as fout:
                for line in fin:  # splits on b"\n" only; bytes are copied unchanged
                    if args.lines is not None and n >= args.lines:
                        break
                    fout.write(line)
                    n += 1
        else:
            os.symlink(src, dst)
            n = None
        if n is None:
            with open(dst, "rb") as f:
                n = sum(1 for _ in f)
        files[side] = {"path": dst, "name": names[side], "lines": n,
                       "bytes": os.path.getsize(dst)}
        print("[input] %s: %s -> %s (%d lines, %.1f MB, %.1fs)" % (
            side, src, dst, n, files[side]["bytes"] / 1e6, time.perf_counter() - t0))
    if files["source"]["lines"] != files["target"]["lines"]:
        print("[input] WARNING: source/target line counts differ (%d vs %d)" % (
            files["source"]["lines"], files["target"]["lines"]))
    meta = {"request": want, "files": files}
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
    return meta


def run_ours(args, work_dir, meta):
    ours_dir = os.path.join(work_dir, "ours")
    if os.path.exists(ours_dir):
        shutil.rmtree(ours_dir)
    out_dir, log_dir = os.path.join(ours_dir, "out"), os.path.join(ours_dir, "logs")
    os.makedirs(out_dir)
    os.makedirs(log_dir)
    runner_args = shlex.split(args.runner_args if args.runner_args is not None
                              else DEFAULT_RUNNER_ARGS)
    cmd = [args.python, "-m", "pipeline.datagen",
           "--train_source", meta["files"]["source"]["path"],
           "--train_target", meta["files"]["target"]["path"],
           "--output_dir", out_dir,
           "--problem", args.problem,
           "--vocab_size", str(args.vocab_size),
           "--max_subtoken_length", str(args.max_subtoken_length),
           "--file_byte_budget", repr(args.file_byte_budget),
           "--num_train_shards", str(args.num_shards),
           "--seed", str(args.seed)] + runner_args
    print("[ours] %s" % " ".join(shlex.quote(c) for c in cmd))
    print("[ours] running ...", end="", flush=True)
    run = run_measured(cmd, os.path.join(log_dir, "datagen"), cwd=REPO_ROOT, env=child_env(),
                       interval=args.sample_interval, pss_interval=args.pss_interval)
    rec = public(run)
    rec.update(out_dir=out_dir, ok=False, stages={})
    rec["rss_samples_path"] = os.path.join(log_dir, "rss_samples.tsv")
    with open(rec["rss_samples_path"], "w") as f:
        # rss_mb: summed over the process tree; max_single_rss_mb: its largest process
        f.write("seconds_since_start\trss_mb\tmax_single_rss_mb\n")
        for t, b, single in run["_samples"]:
            f.write("%.2f\t%.1f\t%.1f\n" % (t - run["start_unix"], b / 2.0 ** 20,
                                            single / 2.0 ** 20))
    summary_path = os.path.join(out_dir, "%s.datagen_summary.json" % args.problem)
    if run["returncode"] != 0:
        rec["error"] = "exit status %s" % run["returncode"]
    elif not os.path.exists(summary_path):
        rec["error"] = "no %s" % summary_path
    else:
        try:
            with open(summary_path) as f:
                rec["summary"] = json.load(f)
            rec["stages"] = our_stages(rec["summary"], run["_samples"])
            rec["ok"] = True
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            rec["error"] = "bad summary: %r" % e
    if rec["ok"]:
        print(" %.2fs, peak %.1f MB (sum over processes %.1f MB, up to %d processes; "
              "largest single process %.1f MB)" % (
                  run["wall_seconds"], run["peak_mb"], run["tree_peak_rss_mb"],
                  run["max_processes"], run["max_single_process_rss_mb"]))
    else:
        print(" FAILED: %s (after %.1fs)\n--- stderr tail ---\n%s\n-------------------" % (
            rec["error"], run["wall_seconds"], tail(run["stderr_path"])))
    return rec


def unix_time(value):
    """A unix timestamp from a number or an ISO 8601 string (None if neither)."""
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        import datetime
        try:
            return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def our_stages(summary, samples):
    """Stage name -> {"seconds", optional "peak_mb"} from datagen_summary.json.

    A per-stage peak is taken from the summary ("peak_rss_mb") if it reports one, or else
    from the RSS samples of our process tree if the stage reports its time window as
    "start"/"end" or "started_at"/"finished_at" (unix seconds or ISO 8601).
    """
    stages = collections.OrderedDict()
    for name, info in summary["stages"].items():
        rec = {"seconds": float(info["seconds"])}
        if "peak_rss_mb" in info:
            rec["peak_mb"], rec["peak_source"] = float(info["peak_rss_mb"]), "summary"
        else:
            start = unix_time(info.get("start", info.get("started_at")))
            end = unix_time(info.get("end", info.get("finished_at")))
            if start is not None and end is not None:
                # one sample interval of slack on each side
                window = [b for t, b, _ in samples if start - 0.2 <= t <= end + 0.2]
                if window:
                    rec["peak_mb"] = max(window) / 2.0 ** 20
                    rec["peak_source"] = "sampled"
        stages[name] = rec
    return stages
