#!/usr/bin/env python
"""Benchmark: the byte_bpe, word and sentencepiece whole jobs against the library a user would
call to learn and encode the same lines (issue 51, item 7), side by side, alternating.

For each kind, in turn, each side a fresh subprocess whose whole process tree is measured
(`process_tree.run_tree`: user + sys CPU of every process it ever started, peak RSS summed over
the live tree and of its largest process, wall):

  ours     python -m pipeline.datagen --vocab_type KIND --vocab_size N (2 workers, DirectRunner
           multi_processing) on the first --lines pairs of the bench corpus: sample, learn both
           vocabularies, encode every pair, shard, shuffle, write TFRecords and the books.
  base     the same command from another checkout (--base DIR, e.g. a `git worktree` of main):
           the "before" of an A/B; its shards and vocabularies are compared with ours.
  library  one Python process: the same lines read, then per side the library's learn + encode:
             byte_bpe       tokenizers' ByteLevelBPETokenizer (GPT-2's byte-level pre-tokenizer
                            and alphabet), train_from_iterator(vocab_size=N, min_frequency=2,
                            special_tokens=[<pad>, <|endoftext|>]), then encode_batch(lines);
             word           tokenizers' WordLevel with a split on " " (tensorflow/nmt's rule),
                            WordLevelTrainer(vocab_size=N, special_tokens=[<unk>, <s>, </s>]),
                            then encode_batch(lines);
             sentencepiece  SentencePieceTrainer.train(sentence_iterator=lines, the job's
                            options: unigram, N, coverage 0.9995, t5 ids, num_threads=16), then
                            SentencePieceProcessor.encode(lines).
           Its threads: RAYON_NUM_THREADS=--lib_threads (default 2, the job's 2 workers);
           SentencePiece's encode uses --lib_threads too. CPU is CPU: threads do not hide it.

The sides alternate (base, ours, library, base, ours, library, ...) --repeat times, so a load
change hits every side; the table reports each side's median CPU, the ratio ours / library,
and ours / base. Load (`os.getloadavg`) is printed before and after every run.

  .venv/bin/python benchmarks/bench_kinds_vs_libraries.py --lines 5000 --kinds word   # smoke
  git worktree add /tmp/base-kinds main
  .venv/bin/python benchmarks/bench_kinds_vs_libraries.py --base /tmp/base-kinds --repeat 2 \\
      --json_out /tmp/kinds.json
"""

import argparse
import hashlib
import json
import lzma
import os
import shutil
import statistics
import sys

from process_tree import run_tree

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
DEFAULT_DATA_DIR = "/work/shared/data/bench/enzh-wmt21-24"
KINDS = ("byte_bpe", "word", "sentencepiece")
RUNNER_ARGS = ["--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
               "--direct_num_workers", "2"]

LIBRARY_SCRIPT = r'''
import io, sys
kind, vocab_size, threads, paths = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
sides = []
for path in paths:
    with open(path, encoding="utf-8") as f:
        sides.append([line.rstrip("\n") for line in f])
tokens = 0
for lines in sides:
    if kind == "byte_bpe":
        from tokenizers import ByteLevelBPETokenizer
        tok = ByteLevelBPETokenizer()
        tok.train_from_iterator(lines, vocab_size=vocab_size, min_frequency=2,
                                special_tokens=["<pad>", "<|endoftext|>"], show_progress=False)
        tokens += sum(len(e.ids) for e in tok.encode_batch(lines))
    elif kind == "word":
        from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers
        tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Split(" ", behavior="removed")
        tok.train_from_iterator(lines, trainers.WordLevelTrainer(
            vocab_size=vocab_size, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False))
        tokens += sum(len(e.ids) for e in tok.encode_batch(lines))
    else:
        import sentencepiece as spm
        model = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter([line.strip() for line in lines]), model_writer=model,
            model_type="unigram", vocab_size=vocab_size, character_coverage=0.9995,
            num_threads=16, pad_id=0, eos_id=1, unk_id=2, bos_id=-1, minloglevel=2)
        sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
        tokens += sum(len(ids) + 1 for ids in sp.encode(lines, out_type=int,
                                                         num_threads=threads))
print("tokens", tokens)
'''


def stage_input(data_dir, lines, work_dir):
    """The first `lines` pairs of the bench corpus as plain files (reused when present)."""
    paths = []
    for name in ("train.en", "train.zh"):
        path = os.path.join(work_dir, "input%d" % lines, name)
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with lzma.open(os.path.join(data_dir, name + ".xz"), "rb") as src, \
                    open(path + ".part", "wb") as out:
                for i, raw in enumerate(src):
                    if i >= lines:
                        break
                    out.write(raw)
            os.replace(path + ".part", path)
        paths.append(path)
    return paths


def output_digest(out_dir):
    """sha256 over the shards and vocabulary files (not the books, which hold timings)."""
    digest = hashlib.sha256()
    for root, _, files in sorted(os.walk(out_dir)):
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(root, name), out_dir)
            if "-train-" in name or rel.startswith("vocab."):
                digest.update(rel.encode())
                with open(os.path.join(root, name), "rb") as f:
                    digest.update(hashlib.sha256(f.read()).digest())
    return digest.hexdigest()


def run_side(side, kind, args, inputs, work_dir, code_dir=REPO_ROOT):
    log = os.path.join(work_dir, "%s.%s" % (side, kind))
    env = dict(os.environ, PYTHONPATH=code_dir, TF_CPP_MIN_LOG_LEVEL="1",
               RAYON_NUM_THREADS=str(args.lib_threads))
    out_dir = os.path.join(work_dir, "out", side, kind)
    if side == "library":
        cmd = [args.python, "-c", LIBRARY_SCRIPT, kind, str(args.vocab_size),
               str(args.lib_threads)] + inputs
    else:
        shutil.rmtree(out_dir, ignore_errors=True)
        cmd = [os.path.join(code_dir, ".venv", "bin", "python") if args.python is None
               else args.python, "-m", "pipeline.datagen", "--train_source", inputs[0],
               "--train_target", inputs[1], "--output_dir", out_dir, "--vocab_type", kind,
               "--vocab_size", str(args.vocab_size)] + RUNNER_ARGS
    if cmd[0] is None:
        cmd[0] = sys.executable
    load = os.getloadavg()[0]
    with open(log + ".stdout", "wb") as out, open(log + ".stderr", "wb") as err:
        run = run_tree(cmd, cwd=code_dir, env=env, stdout=out, stderr=err)
    run.pop("timeline")
    run.update(side=side, kind=kind, load_before=load, load_after=os.getloadavg()[0])
    if run["returncode"] != 0:
        with open(log + ".stderr", "rb") as f:
            sys.exit("%s %s failed (%s):\n%s" % (side, kind, run["returncode"],
                                                 f.read()[-3000:].decode("utf-8", "replace")))
    if side != "library":
        run["outputs_sha256"] = output_digest(out_dir)
    print("  %-8s %-13s cpu %6.1f s (user %6.1f, sys %5.1f)  wall %6.1f s  peak %5.0f MB "
          "(largest %4.0f)  load %.1f -> %.1f" % (
              side, kind, run["cpu_s"], run["user_s"], run["sys_s"], run["wall_s"],
              run["peak_sum_mb"], run["peak_largest_mb"], load, run["load_after"]), flush=True)
    return run


def table(runs, sides):
    rows = ["| kind | " + " | ".join("%s CPU s (wall, peak MB)" % s for s in sides)
            + " | ours / library" + (" | ours / base | outputs as base" if "base" in sides
                                     else "") + " |",
            "|---" * (len(sides) + (3 if "base" in sides else 1)) + "|"]
    for kind in dict.fromkeys(r["kind"] for r in runs):
        med = {}
        cells = []
        for side in sides:
            mine = [r for r in runs if r["kind"] == kind and r["side"] == side]
            med[side] = statistics.median(r["cpu_s"] for r in mine)
            cells.append("%.1f (%.0f s, %.0f)" % (
                med[side], statistics.median(r["wall_s"] for r in mine),
                max(r["peak_sum_mb"] for r in mine)))
        row = "| %s | %s | %.2fx" % (kind, " | ".join(cells), med["ours"] / med["library"])
        if "base" in sides:
            digests = {r.get("outputs_sha256") for r in runs
                       if r["kind"] == kind and r["side"] != "library"}
            row += " | %.2fx | %s" % (med["ours"] / med["base"],
                                      "identical" if len(digests) == 1 else "DIFFERENT")
        rows.append(row + " |")
    return "\n".join(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=100000)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--vocab_size", type=int, default=8192)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--lib_threads", type=int, default=2)
    parser.add_argument("--base", help="another checkout (with its .venv): the 'before' side")
    parser.add_argument("--only", choices=("ours", "library"),
                        help="run one side only (with --base: base and ours)")
    parser.add_argument("--python", help="interpreter for every side (default: each "
                        "checkout's .venv, this one's for the library)")
    parser.add_argument("--data_dir", default=DEFAULT_DATA_DIR)
    parser.add_argument("--work_dir", default="/tmp/bench_kinds_vs_libraries")
    parser.add_argument("--json_out")
    args = parser.parse_args(argv)
    os.makedirs(args.work_dir, exist_ok=True)
    inputs = stage_input(args.data_dir, args.lines, args.work_dir)
    sides = ([] if args.base is None else ["base"]) + (
        ["ours"] if args.only == "ours" else ["library"] if args.only == "library"
        else ["ours", "library"])
    print("load %s, %d pairs, kinds %s, sides %s" % (
        " ".join("%.2f" % x for x in os.getloadavg()), args.lines, args.kinds, sides))
    runs = []
    for _ in range(args.repeat):
        for kind in args.kinds.split(","):
            for side in sides:
                code_dir = args.base if side == "base" else REPO_ROOT
                runs.append(run_side(side, kind, args, inputs, args.work_dir, code_dir))
    if "ours" in sides and "library" in sides:
        print(table(runs, sides))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"args": vars(args), "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
