"""The full-bench subword job at 1x, 10x, 50x its size on one machine: does anything grow
faster than the pairs (issue 49's "Done when")?

Why: a job that is linear at 0.76M pairs may still hold something per pair in one process
(a list in the driver, an open file per fragment, a temporary copy of the output). Run at
several sizes, each such thing shows as a ratio to 1x's figure.

The input is the bench corpus (`--source`/`--target`, xz or plain) made k times as long, with
no line repeated: copy c (0 .. k-1) of every line gets the token `c` and a space in front, on
both sides, so pairs stay aligned and no cache (the job's dedup-free encoders, the vocab
sample's counts, any per-line memo) sees the same line twice. 1x is numbered too (every line
starts `0 `), so every scale pays the same extra: one number token per side, i.e. a word
token `c` in the en line, and a run of digits before the zh text (an alphanumeric token to
the subword tokenizer in both). The vocab is learnt from a byte-budget sample (`1e8`), so at
10x it sees 10 numbers where 1x sees one; the words are the same words k times (as any real
corpus repeats its words, not its lines).

Each scale runs the bench's job command (bench_subword.py's `JOB_FLAGS`, DirectRunner,
`--direct_num_workers 2`) once, measured by `process_tree.run_tree` (CPU: user + sys of every
process of the tree, reaped as a child subreaper; largest process's peak RSS) and by a
sampler here, every `--interval` s, over the live tree: the driver's RSS, the most open file
descriptors of any one process (psutil `num_fds`), and the bytes under the output's
`.datagen-work` plus the job's own temp directory (`TMPDIR` is set to a fresh directory per
run, so other users' /tmp is not counted), each top-level work directory apart, with the pass
the job's log says is running (`temp_disk.py`): the peak is printed with what made it and
when, and `--json_out` has each pass's and each directory's own peak. Checks against 1x: CPU per pair <= 1.15x, largest
peak RSS <= 1.2x; at every scale: temp bytes <= 1.2x the output's bytes, open files <
`MERGE_FAN_IN + --fd_margin`. Prints a table, exits 1 if a check fails.

`--s3` runs the largest scale given with `--output_dir s3://...` on a moto server it starts
(tests/object_store_servers.py), with moto's request recorder on for the whole job, and counts
the objects written (keys under the output prefix, and PUT/multipart requests) and the
requests by method and kind (query such as `?uploads`, `?list-type`, `x-amz-copy-source`).

    .venv/bin/python benchmarks/bench_scale.py --scales 1,10
    .venv/bin/python benchmarks/bench_scale.py --scales 10 --s3
    .venv/bin/python benchmarks/bench_scale.py --scales 1,10,50   # ~1 h at 50x on 2 cores
"""

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, REPO_ROOT, os.path.join(REPO_ROOT, "tests")]

from bench_subword import DATA_DIR, JOB_FLAGS, PROBLEM  # noqa: E402
from process_tree import run_tree  # noqa: E402
import temp_disk  # noqa: E402

from transforms.shards.shard_fragments import MERGE_FAN_IN  # noqa: E402

WORK_NAME = ".datagen-work"
BUCKET = "scale"


def stage_numbered(source, target, scale, work_dir):
    """Plain-text inputs `scale` times the corpus, copy c's lines prefixed `c `; made once.
    Returns (en path, zh path, pairs)."""
    base = os.path.join(work_dir, "input-x%d" % scale)
    out = [os.path.join(base, "train.en"), os.path.join(base, "train.zh")]
    count = os.path.join(base, "pairs")
    if os.path.exists(count):
        with open(count) as f:
            return out[0], out[1], int(f.read())
    os.makedirs(base, exist_ok=True)
    pairs = None
    for path, dest in zip((source, target), out):
        reader = ["xz", "-dc", path] if path.endswith(".xz") else ["cat", path]
        lines = subprocess.run(reader, stdout=subprocess.PIPE, check=True).stdout.splitlines(
            keepends=True)
        if lines and not lines[-1].endswith(b"\n"):
            lines[-1] += b"\n"
        assert pairs in (None, len(lines)), "the two sides differ in lines"
        pairs = len(lines)
        with open(dest + ".tmp", "wb") as f:
            for copy in range(scale):
                tag = b"%d " % copy
                f.write(b"".join(tag + line for line in lines))
        os.replace(dest + ".tmp", dest)
        del lines
    with open(count, "w") as f:
        f.write(str(pairs * scale))
    return out[0], out[1], pairs * scale


def stage_tsv(en, zh):
    """One TSV file of the staged sides (`--tsv`): the job then converts it into line pairs
    in its work directory first (the prepare pass's `materialized/`), as for TMX and archive
    members. A tab inside a line makes that pair a counted rejection."""
    out = os.path.join(os.path.dirname(en), "train.tsv")
    if not os.path.exists(out):
        with open(out + ".tmp", "wb") as f:
            subprocess.run(["paste", en, zh], stdout=f, check=True)
        os.replace(out + ".tmp", out)
    return out


def dir_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


class ScaleSampler(threading.Thread):
    """Every `interval` s: the driver's RSS, the most fds of any one process of the tree,
    the bytes under the temp directories, by directory and by pass (`temp_disk`: `out_dir`
    None for an output on a store, whose work files are not on this disk)."""

    def __init__(self, tmp_dir, out_dir, log_path, interval):
        super().__init__(daemon=True)
        self.tmp_dir, self.out_dir, self.interval = tmp_dir, out_dir, interval
        self.driver_rss = self.fds = 0
        self.fds_who = None
        self.largest = (0, None, None)  # (RSS, which process, during which pass)
        self.passes = temp_disk.PassTracker(log_path)
        self.disk = temp_disk.DiskPeaks()
        self._halt = threading.Event()

    def run(self):
        me = psutil.Process()
        while True:
            try:
                procs = me.children(recursive=True)
            except psutil.Error:
                procs = []
            where = self.passes.poll()
            for proc in procs:
                try:
                    with proc.oneshot():
                        fds = proc.num_fds()
                        rss = proc.memory_info().rss
                        cmd = " ".join(proc.cmdline())
                        driver = proc.ppid() == me.pid and "pipeline.datagen" in cmd
                except psutil.Error:
                    continue
                if rss > self.largest[0]:
                    self.largest = (rss, "driver" if driver else cmd[-60:], where)
                if fds > self.fds:
                    self.fds, self.fds_who = fds, proc.pid
                if driver:
                    self.driver_rss = max(self.driver_rss, rss)
            self.disk.add(temp_disk.breakdown(self.out_dir, self.tmp_dir) if self.out_dir
                          else {"tmp": dir_bytes(self.tmp_dir)}, where)
            if self._halt.wait(self.interval):
                return

    def stop(self):
        self._halt.set()
        self.join()


def request_kind(method, url, headers):
    """A request's kind: method plus what in its query or headers says which S3 call it is."""
    query = urllib.parse.urlparse(url).query
    keys = sorted(urllib.parse.parse_qs(query, keep_blank_values=True))
    lower = {k.lower() for k in headers}
    extra = []
    if "x-amz-copy-source" in lower:
        extra.append("copy")
    names = [k for k in keys if k in ("uploads", "uploadId", "list-type", "delete", "prefix",
                                      "partNumber")]
    if "list-type" in names or ("prefix" in names and method == "GET"):
        names = ["list"]
    if WORK_NAME in urllib.parse.unquote(urllib.parse.urlparse(url).path):
        extra.append("work")  # a key under .datagen-work: fragments, parts, markers
    return " ".join([method] + extra + names)


def recorder(server, action):
    """Turns moto's request recorder on or off (as `MotoServer.record` does)."""
    request = urllib.request.Request("%s/moto-api/recorder/%s" % (server.endpoint, action),
                                     data=b"", method="POST")
    urllib.request.urlopen(request, timeout=60).read()


def recorded(path):
    """[(method, URL, headers)] from moto's recording. Its threaded server sometimes writes two
    entries on one line (`MotoServer.record`'s json.loads per line then fails), so each line
    is decoded object by object; bodies are dropped as they are read."""
    decoder, found = json.JSONDecoder(), []
    with open(path) as f:
        for line in f:
            line, i = line.strip(), 0
            while i < len(line):
                entry, i = decoder.raw_decode(line, i)
                found.append((entry["method"], entry["url"], entry["headers"]))
                while i < len(line) and line[i].isspace():
                    i += 1
    return found


def run_scale(args, scale, inputs, pairs, s3):
    """One measured run of the job at `scale`; returns its row (a dict)."""
    run_dir = os.path.join(args.work_dir, "run-x%d%s%s" % (scale, "-s3" if s3 else "",
                                                          "-tsv" if args.tsv else ""))
    shutil.rmtree(run_dir, ignore_errors=True)
    tmp = os.path.join(run_dir, "tmp")
    os.makedirs(tmp)
    out = os.path.join(run_dir, "out")
    env = dict(os.environ, TMPDIR=tmp, PYTHONPATH=args.code_dir)
    extra, server = [], None
    if s3:
        from object_store_servers import MotoServer
        server = MotoServer(run_dir)
        server.client().create_bucket(Bucket=BUCKET)
        out = "s3://%s/out" % BUCKET
        extra = server.beam_flags()
    given = (["--train_tsv", stage_tsv(*inputs), "--source_lang", "en", "--target_lang", "zh"]
             if args.tsv else
             ["--train_source", inputs[0], "--train_target", inputs[1]])
    cmd = [args.python, "-m", "pipeline.datagen"] + given + ["--output_dir", out] + JOB_FLAGS + [
           "--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
           "--direct_num_workers", str(args.workers)] + extra
    try:
        row = _measured(args, scale, pairs, s3, cmd, env, tmp, run_dir, server)
    finally:
        if server is not None:
            server.stop()
    if not args.keep:
        shutil.rmtree(run_dir, ignore_errors=True)
    return row


def _measured(args, scale, pairs, s3, cmd, env, tmp, run_dir, server):
    """run_scale's measured run and its figures (the server still up, for its listing)."""
    out = cmd[cmd.index("--output_dir") + 1]
    log_path = os.path.join(run_dir, "job.log")
    sampler = ScaleSampler(tmp, None if s3 else out, log_path, args.interval)
    requests = []
    load_before = os.getloadavg()[0]
    with open(log_path, "wb") as log:
        sampler.start()
        try:
            if s3:
                recorder(server, "reset-recording")
                recorder(server, "start-recording")
                try:
                    result = run_tree(cmd, cwd=args.code_dir, env=env, interval=args.interval,
                                      stdout=log, stderr=subprocess.STDOUT)
                finally:
                    recorder(server, "stop-recording")
                requests = recorded(server.recording)
            else:
                result = run_tree(cmd, cwd=args.code_dir, env=env, interval=args.interval,
                                  stdout=log, stderr=subprocess.STDOUT)
        finally:
            sampler.stop()
    row = {"scale": scale, "pairs": pairs, "s3": s3, "returncode": result["returncode"],
           "wall_s": result["wall_s"], "cpu_s": result["cpu_s"],
           "cpu_us_per_pair": result["cpu_s"] / pairs * 1e6,
           "peak_largest_mb": result["peak_largest_mb"], "peak_sum_mb": result["peak_sum_mb"],
           "driver_peak_mb": sampler.driver_rss / 2.0 ** 20, "max_fds": sampler.fds,
           "largest_sampled": [sampler.largest[0] / 2.0 ** 20] + list(sampler.largest[1:]),
           **sampler.disk.report(), "load_before": load_before,
           "load_after": os.getloadavg()[0], "command": cmd}
    if s3:
        client = server.client()
        sizes = []
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET,
                                                                    Prefix="out/"):
            sizes += [obj["Size"] for obj in page.get("Contents", [])]
        kinds = collections.Counter(request_kind(*r) for r in requests)
        row.update({"output_bytes": sum(sizes), "objects_final": len(sizes),
                    "requests": len(requests), "request_kinds": dict(kinds),
                    # a PUT of a whole object or a copy, or a completed multipart upload
                    "objects_written": sum(n for k, n in kinds.items() if (
                        k.startswith("PUT") and "partNumber" not in k) or (
                        k.startswith("POST") and k.endswith("uploadId")))})
    else:
        row["output_bytes"] = dir_bytes(out)  # .datagen-work is gone once the job ends
        row["work_left"] = os.path.exists(os.path.join(out, WORK_NAME))
    summary = os.path.join(out, "%s.datagen_summary.json" % PROBLEM)
    if not s3 and os.path.exists(summary):
        with open(summary) as f:
            row["summary"] = json.load(f)
    return row


def checks(rows, fd_bound):
    """[(scale, check, ok, detail)] against the 1x row (the first scale given)."""
    base = rows[0]
    found = []
    for row in rows:
        if row["returncode"] != 0:
            found.append((row["scale"], "job exit 0", False, str(row["returncode"])))
            continue
        cpu = row["cpu_us_per_pair"] / base["cpu_us_per_pair"]
        rss = row["peak_largest_mb"] / base["peak_largest_mb"]
        temp = row["temp_peak_bytes"] / max(1, row["output_bytes"])
        found += [(row["scale"], "CPU/pair <= 1.15x", cpu <= 1.15, "%.3fx" % cpu),
                  (row["scale"], "peak RSS <= 1.2x", rss <= 1.2, "%.3fx" % rss),
                  (row["scale"], "temp <= 1.2x output", temp <= 1.2, "%.3fx" % temp),
                  (row["scale"], "fds < %d" % fd_bound, row["max_fds"] < fd_bound,
                   str(row["max_fds"]))]
    return found


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scales", default="1,10", help="copies of the corpus, comma-separated; "
                   "the first is the reference of the ratios")
    p.add_argument("--s3", action="store_true", help="the largest scale only, output on a "
                   "moto server, its requests counted")
    p.add_argument("--tsv", action="store_true", help="the input as one TSV file, which the "
                   "job converts into line pairs in its work directory first")
    p.add_argument("--source", default=os.path.join(DATA_DIR, "train.en.xz"))
    p.add_argument("--target", default=os.path.join(DATA_DIR, "train.zh.xz"))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--interval", type=float, default=0.5, help="sampling interval, s")
    p.add_argument("--fd_margin", type=int, default=64,
                   help="open files allowed beyond MERGE_FAN_IN (pipes, sockets, libraries)")
    p.add_argument("--work_dir", default="/tmp/bench_scale")
    p.add_argument("--keep", action="store_true", help="keep each run's output and logs")
    p.add_argument("--code_dir", default=REPO_ROOT, help="the job's code (its cwd and "
                   "PYTHONPATH): e.g. an export of another commit, to compare")
    p.add_argument("--python", default=os.path.join(REPO_ROOT, ".venv", "bin", "python"))
    p.add_argument("--json_out", default=None)
    args = p.parse_args(argv)
    scales = [int(s) for s in args.scales.split(",")]
    os.makedirs(args.work_dir, exist_ok=True)
    if args.s3:
        scales = [max(scales)]
    rows = []
    for scale in scales:
        t0 = time.time()
        en, zh, pairs = stage_numbered(args.source, args.target, scale, args.work_dir)
        print("x%d: %d pairs staged (%.0f s)" % (scale, pairs, time.time() - t0), flush=True)
        row = run_scale(args, scale, (en, zh), pairs, args.s3)
        rows.append(row)
        print("x%d: exit %d, wall %.1f s, CPU %.1f s, load %.1f -> %.1f" % (
            scale, row["returncode"], row["wall_s"], row["cpu_s"], row["load_before"],
            row["load_after"]), flush=True)
        temp_disk.print_report(scale, row, row["output_bytes"])
        print("x%d largest process sampled: %.0f MB, %s, during %s" % (
            scale, *row["largest_sampled"]), flush=True)
    fd_bound = MERGE_FAN_IN + args.fd_margin
    print("\n| scale | pairs | wall s | CPU s | CPU µs/pair | largest peak RSS MB | driver "
          "peak MB | tree peak MB | temp peak MB | output MB | most fds |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %dx%s | %d | %.1f | %.1f | %.1f | %.0f | %.0f | %.0f | %.0f | %.0f | %d |" % (
            r["scale"], " s3" if r["s3"] else "", r["pairs"], r["wall_s"], r["cpu_s"],
            r["cpu_us_per_pair"], r["peak_largest_mb"], r["driver_peak_mb"],
            r["peak_sum_mb"], r["temp_peak_bytes"] / 2.0 ** 20, r["output_bytes"] / 2.0 ** 20,
            r["max_fds"]))
    if args.s3:
        r = rows[0]
        print("\nobjects under the prefix at the end: %d; objects written (PUT + multipart "
              "uploads): %d; requests: %d" % (r["objects_final"], r["objects_written"],
                                              r["requests"]))
        for kind, n in sorted(r["request_kinds"].items(), key=lambda kv: -kv[1]):
            print("  %-40s %d" % (kind, n))
    found = checks(rows, fd_bound) if not args.s3 else [
        (r["scale"], "fds < %d" % fd_bound, r["max_fds"] < fd_bound, str(r["max_fds"]))
        for r in rows]
    print()
    for scale, name, ok, detail in found:
        print("%dx  %-22s %-8s %s" % (scale, name, "PASS" if ok else "FAIL", detail))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"rows": rows, "checks": found, "fd_bound": fd_bound}, f, indent=1,
                      default=str)
    return 0 if all(ok for _, _, ok, _ in found) else 1


if __name__ == "__main__":
    sys.exit(main())
