"""Issue 49's resume target: after a `kill -9` of the whole tree at about 80% of the encode
pass, the rerun's encode pass takes at most 35% of an uninterrupted one, byte-identical.

Steps, on the bench corpus (decompressed once into `<work_dir>/input/`, so that it is cut into
chunks of `--encode_chunk_lines`):

1. `vocab`: one run learns the vocabularies (not measured); its vocab files and sidecars are
   copied into each later output directory, so every later run reuses them and its encode
   pass is the whole difference.
2. `whole`: an uninterrupted run; its summary's `stages.encode` seconds, CPU (user + sys of
   the tree) and peak RSS (`process_tree.run_tree`), and the encode pass's own CPU: the
   tree's cumulative CPU (sampled per process every 0.1 s) between the driver's `pass N of
   M: encode` and `pass N done` lines, timestamped as they come. CPU is what a loaded
   machine spoils least.
3. `killed`: a run whose process group gets SIGKILL once its manifests hold `--kill_at` of
   the lines (an event on disk, not a time; a manifest per group of chunks, its lines in
   its name).
4. `rerun`: the same command again, measured as `whole`; its summary says the chunks reused.
   The shards must equal `whole`'s (sha256 of each).

`--scale K` takes the corpus K times as long with numbered lines, as `bench_scale.py` makes
them (copy c of every line prefixed `c `, so no line repeats), in `<work_dir>/input-xK/`.

    .venv/bin/python benchmarks/bench_resume.py --work_dir /tmp/bench_resume
    .venv/bin/python benchmarks/bench_resume.py --lines 100000 --work_dir /tmp/bench_resume_100k
    .venv/bin/python benchmarks/bench_resume.py --scale 10 --work_dir /tmp/bench_resume_10x
"""

import argparse
import glob
import hashlib
import json
import lzma
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from process_tree import run_tree  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = "/work/shared/data/bench/enzh-wmt21-24"


def stage_input(work_dir, lines):
    """[source, target] plain text of the bench corpus (the first `lines`, 0: all)."""
    os.makedirs(os.path.join(work_dir, "input"), exist_ok=True)
    paths = []
    for lang in ("en", "zh"):
        path = os.path.join(work_dir, "input", "train." + lang)
        if not os.path.exists(path):
            with lzma.open(os.path.join(DATA, "train.%s.xz" % lang), "rb") as f, \
                    open(path + ".tmp", "wb") as out:
                for i, line in enumerate(f):
                    if lines and i >= lines:
                        break
                    out.write(line)
            os.rename(path + ".tmp", path)
        paths.append(path)
    return paths


def command(inputs, out, args):
    return [sys.executable, "-m", "pipeline.datagen", "--train_source", inputs[0],
            "--train_target", inputs[1], "--output_dir", out, "--problem", "bench",
            "--vocab_size", "8192", "--num_train_shards", "10",
            "--encode_chunk_lines", str(args.chunk_lines), "--runner", "DirectRunner",
            "--direct_running_mode", "multi_processing", "--direct_num_workers", "2",
            "--in_process_below_mb", "0"]


def with_vocab(vocab_out, out):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for path in glob.glob(os.path.join(vocab_out, "vocab.*")) + glob.glob(
            os.path.join(vocab_out, ".vocab.*")):
        shutil.copy(path, out)


def summary_of(out):
    with open(os.path.join(out, "bench.datagen_summary.json")) as f:
        return json.load(f)


def shard_hashes(out):
    return {os.path.basename(p): hashlib.sha256(open(p, "rb").read()).hexdigest()
            for p in sorted(glob.glob(os.path.join(out, "bench-train-*")))}


class EncodeWindow(threading.Thread):
    """Copies the job's stderr to `log`, noting when the encode pass starts and ends."""

    def __init__(self, pipe, log):
        super().__init__(daemon=True)
        self.pipe, self.log, self.start_t, self.end_t = pipe, log, None, None

    def run(self):
        number = None
        with open(self.log, "w") as out:
            for line in iter(self.pipe.readline, ""):
                out.write(line)
                started = re.match(r"\S+ pass (\d+) of \d+: encode ", line)
                if started:
                    number, self.start_t = started.group(1), time.time()
                elif number and re.match(r"\S+ pass %s done" % number, line):
                    self.end_t = time.time()


def tree_cpu_at(timeline, moment):
    """CPU seconds of every sampled process of the tree up to `moment` (its last sample
    before it; a process gone before then counts all it was seen to use)."""
    total = 0.0
    for samples in timeline.samples.values():
        before = [cpu for t, cpu, _ in samples if t <= moment]
        total += before[-1] if before else 0.0
    return total


def measured(cmd, log):
    read, write = os.pipe()
    window = EncodeWindow(os.fdopen(read, "r", errors="replace"), log)
    window.start()
    with os.fdopen(write, "w") as err:
        result = run_tree(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
    window.join(60)
    assert result["returncode"] == 0, open(log).read()[-3000:]
    assert window.start_t and window.end_t, "no encode pass lines in %s" % log
    timeline = result["timeline"]
    result["encode_cpu_s"] = (tree_cpu_at(timeline, window.end_t)
                              - tree_cpu_at(timeline, window.start_t))
    return result


def lines_in_manifests(pattern):
    """The lines of the chunks the manifests matching `pattern` hold, from their names
    (`{first chunk}+{lines}.json`: a manifest per group of chunks)."""
    done = 0
    for path in glob.glob(pattern):
        try:
            done += int(os.path.basename(path)[:-len(".json")].rpartition("+")[2])
        except ValueError:
            pass
    return done


def kill_at(cmd, out, fraction, lines, log):
    """Starts `cmd`, SIGKILLs its group once manifests hold `fraction` of the `lines` (an
    event on disk: a manifest is written once its chunks' fragments are); returns the lines
    they held then."""
    want = max(1, int(fraction * lines))
    pattern = os.path.join(out, ".datagen-work", "bench", "encode-*", "chunks", "*.json")
    with open(log, "w") as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
        try:
            while lines_in_manifests(pattern) < want:
                if proc.poll() is not None:
                    raise SystemExit("the job ended before its manifests held %d lines"
                                     % want)
                time.sleep(0.05)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return lines_in_manifests(pattern)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work_dir", default="/tmp/bench_resume")
    parser.add_argument("--lines", type=int, default=0, help="the first N pairs (0: all)")
    parser.add_argument("--chunk_lines", type=int, default=10000)
    parser.add_argument("--kill_at", type=float, default=0.8)
    parser.add_argument("--scale", type=int, default=0,
                        help="the corpus K times, numbered lines as bench_scale.py's (0: as is)")
    args = parser.parse_args()
    if args.scale:
        from bench_scale import stage_numbered
        os.makedirs(args.work_dir, exist_ok=True)
        inputs = list(stage_numbered(os.path.join(DATA, "train.en.xz"),
                                     os.path.join(DATA, "train.zh.xz"), args.scale,
                                     args.work_dir)[:2])
    else:
        inputs = stage_input(args.work_dir, args.lines)
    lines = sum(1 for _ in open(inputs[0], "rb"))
    chunks = -(-lines // args.chunk_lines)
    vocab_out = os.path.join(args.work_dir, "vocab")
    if not glob.glob(os.path.join(vocab_out, "vocab.*")):
        measured(command(inputs, vocab_out, args), os.path.join(args.work_dir, "vocab.log"))
    rows = {}
    whole = os.path.join(args.work_dir, "whole")
    with_vocab(vocab_out, whole)
    rows["whole"] = measured(command(inputs, whole, args),
                             os.path.join(args.work_dir, "whole.log"))
    killed = os.path.join(args.work_dir, "killed")
    with_vocab(vocab_out, killed)
    at_kill = kill_at(command(inputs, killed, args), killed, args.kill_at, lines,
                      os.path.join(args.work_dir, "killed.log"))
    rows["rerun"] = measured(command(inputs, killed, args),
                             os.path.join(args.work_dir, "rerun.log"))
    same = shard_hashes(whole) == shard_hashes(killed) and len(shard_hashes(whole)) == 10
    encode = {name: summary_of(whole if name == "whole" else killed)["stages"]["encode"][
        "seconds"] for name in rows}
    print("bench_resume: %d pairs, %d chunks of %d lines; killed (SIGKILL to the group) at "
          "manifests of %d lines (%.0f%%); load %s" % (lines, chunks, args.chunk_lines, at_kill,
                                     100.0 * at_kill / lines,
                                     os.getloadavg()))
    print("%-6s %10s %12s %10s %10s %12s" % ("run", "encode_s", "encode_cpu_s", "wall_s",
                                              "cpu_s", "peak_rss_mb"))
    for name, r in rows.items():
        print("%-6s %10.1f %12.1f %10.1f %10.1f %12.0f" % (
            name, encode[name], r["encode_cpu_s"], r["wall_s"], r["cpu_s"], r["peak_sum_mb"]))
    print("resume: %s" % summary_of(killed)["resume"])
    print("rerun encode / whole encode: %.2f wall, %.2f CPU (target <= 0.35); shards "
          "identical: %s" % (encode["rerun"] / encode["whole"],
                             rows["rerun"]["encode_cpu_s"] / rows["whole"]["encode_cpu_s"],
                             same))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
