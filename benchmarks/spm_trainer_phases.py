#!/usr/bin/env python
"""Profile: where SentencePiece's trainer spends its time and memory, phase by phase.

Runs the wheel's `SentencePieceTrainer` (the job's trainer) on one sample file in a child
process with its log on, and stamps every log line with the wall time, the child's CPU time
and its RSS (psutil, sampled every `--interval` s). A phase is the span between two log lines
that start a step (`PHASES`: loading, normalizing, the seed pieces, EM, saving);
for each it prints wall seconds, CPU seconds (CPU/wall: how many cores the phase keeps busy)
and the peak RSS. It shows which phases run on one thread and where the peak is, which is what decides whether two sides trained at once finish sooner and how much memory
they add.

  .venv/bin/python benchmarks/spm_trainer_phases.py SAMPLE_FILE --vocab_size 8000
"""

import argparse
import json
import subprocess
import sys
import threading
import time

import psutil

TRAIN = """
import json, sys
import sentencepiece as spm
spm.SentencePieceTrainer.train(input=sys.argv[1], model_prefix=sys.argv[2], minloglevel=0,
                               **json.loads(sys.argv[3]))
"""
# log lines that start a phase (substring -> phase name)
PHASES = (("Loading corpus", "load"), ("Normalizing sentences", "normalize"),
          ("Extracting seed sentencepieces", "seed pieces (suffix array)"),
          ("Tokenizing input sentences", "split into words"),
          ("EM sub_iter=", "EM + prune"), ("Saving model", "save"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("sample")
    p.add_argument("--model_prefix", default="/tmp/spm_trainer_phases")
    p.add_argument("--model_type", default="unigram")
    p.add_argument("--vocab_size", type=int, default=8000)
    p.add_argument("--character_coverage", type=float, default=0.9995)
    p.add_argument("--interval", type=float, default=0.1)
    args = p.parse_args(argv)
    options = {"model_type": args.model_type, "vocab_size": args.vocab_size,
               "character_coverage": args.character_coverage, "num_threads": 16,
               "pad_id": 0, "eos_id": 1, "unk_id": 2, "bos_id": -1}
    t0 = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", TRAIN, args.sample, args.model_prefix,
                              json.dumps(options)], stderr=subprocess.PIPE, text=True)
    proc = psutil.Process(child.pid)
    state = {"rss": 0, "cpu": 0.0, "done": False}

    def sample():
        while not state["done"]:
            try:
                state["rss"] = max(state["rss"], proc.memory_info().rss)
                times = proc.cpu_times()
                state["cpu"] = times.user + times.system
            except psutil.Error:
                return
            time.sleep(args.interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    marks = [("start", 0.0, 0.0)]
    peaks = []
    for line in child.stderr:
        for key, name in PHASES:
            if key in line and (not marks or marks[-1][0] != name):
                peaks.append(state["rss"])
                state["rss"] = 0
                marks.append((name, time.perf_counter() - t0, state["cpu"]))
    child.wait()
    state["done"] = True
    sampler.join()
    peaks.append(state["rss"])
    marks.append(("end", time.perf_counter() - t0, state["cpu"]))
    print("| phase | wall s | CPU s | CPU/wall | peak RSS MB |\n|---|---|---|---|---|")
    for (name, t, cpu), (_, t_next, cpu_next), peak in zip(marks, marks[1:], peaks):
        wall = t_next - t
        print("| %s | %.1f | %.1f | %.2f | %.0f |" % (name, wall, cpu_next - cpu,
                                                     (cpu_next - cpu) / wall if wall else 0,
                                                     peak / 2.0 ** 20))
    print("total %.1f s wall, exit %d" % (marks[-1][1], child.returncode))
    return child.returncode


if __name__ == "__main__":
    sys.exit(main())
