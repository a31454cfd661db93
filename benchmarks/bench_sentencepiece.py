#!/usr/bin/env python
"""Benchmark: the job's SentencePiece kind vs. the usual single-process recipe, same input.

  ours    python -m pipeline.datagen --vocab_type sentencepiece ...: the byte-budget sample,
          SentencePiece's trainer on one worker per side, encoding in parallel, sharded
          shuffled TFRecords, books; one subprocess (its process tree is measured).
  recipe  what a team does by hand, one step after the other, each a measured subprocess:
            sample  the same byte-budget sample (T2T's `generate_lines_for_vocab`, our
                    `text_lines.sample_lines_for_vocab`) written to one file per side;
            train   a script calling the wheel's `SentencePieceTrainer.train(input=<sample>,
                    model_prefix=...)` per side: the trainer the job runs (same version),
                    with the options the job records (model type, size, coverage, special
                    ids, num_threads=16);
            encode  `spm_encode --output_format=id --extra_options=eos` done with the wheel's
                    `SentencePieceProcessor` from a script: each whole side read in batches,
                    `encode(batch, out_type=int)` (the processor's threads), EOS appended, ids
                    written one line each to a text file (no shards, no shuffle, no TFRecords).

Prints wall time and peak memory (RSS summed over the process tree and of the largest single
process, `benchmarks/process_memory.py`) of each side and step, and whether the two sides'
models are the same: pieces and scores, and every recorded option except the `input` and
`model_prefix` the recipe's trainer writes into its model (the job trains from sentences in
memory, so it records none; they are the only bytes that differ).

  .venv/bin/python benchmarks/bench_sentencepiece.py --lines 20000      # quick
  .venv/bin/python benchmarks/bench_sentencepiece.py --work_dir /tmp/bench_spm --json_out /tmp/bench_spm.json
"""

import argparse
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

from bench_datagen import DEFAULT_DATA_DIR, SOURCE_NAME, TARGET_NAME
from bench_runs import (DEFAULT_RUNNER_ARGS, REPO_ROOT, child_env, prepare_input, public, tail,
                        run_measured)

SIDES = (("source", "en"), ("target", "zh"))
SAMPLE_SCRIPT = """
import os, sys
from transforms.formats.text_lines import iter_raw_lines, sample_lines_for_vocab
path, budget, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
with open(path, 'rb') as f, open(out, 'w', encoding='utf-8') as o:
    for line in sample_lines_for_vocab(iter_raw_lines(f), os.path.getsize(path), budget, path):
        o.write(line + '\\n')
"""
TRAIN_SCRIPT = """
import json, sys
import sentencepiece as spm
sample, prefix, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
spm.SentencePieceTrainer.train(input=sample, model_prefix=prefix, minloglevel=1, **options)
"""
ENCODE_SCRIPT = """
import itertools, sys
import sentencepiece as spm
model, path, out = sys.argv[1], sys.argv[2], sys.argv[3]
sp = spm.SentencePieceProcessor(model_file=model)
eos = [sp.eos_id()]
with open(path, encoding='utf-8', errors='replace') as f, open(out, 'w') as o:
    while True:
        batch = [line.rstrip('\\n') for line in itertools.islice(f, 20000)]
        if not batch:
            break
        o.writelines(' '.join(map(str, ids + eos)) + '\\n'
                     for ids in sp.encode(batch, out_type=int))
"""


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _same_model(ours, theirs):
    """{"pieces_and_scores": bool, "options": bool} of two model files: the same pieces with
    the same scores, and the same recorded options but for the recipe's `input` and
    `model_prefix` (None when a model is missing)."""
    import sentencepiece
    sys.path.insert(0, REPO_ROOT)
    from transforms.codecs.sentencepiece_model import recorded_options
    if not (ours and theirs and os.path.exists(ours) and os.path.exists(theirs)):
        return None
    a, b = (sentencepiece.SentencePieceProcessor(model_file=p) for p in (ours, theirs))
    options = []
    for path in (ours, theirs):
        with open(path, "rb") as f:
            recorded = recorded_options(f.read())
        options.append({k: v for k, v in recorded.items() if k not in ("input", "model_prefix")})
    return {"pieces_and_scores":
            [(a.id_to_piece(i), a.get_score(i)) for i in range(a.get_piece_size())]
            == [(b.id_to_piece(i), b.get_score(i)) for i in range(b.get_piece_size())],
            "options": options[0] == options[1]}


def _measured(cmd, log_prefix, args, what, code_dir=REPO_ROOT):
    shown = ["<script>" if "\n" in c else shlex.quote(c) for c in cmd]
    print("[%s] %s" % (what, " ".join(shown)), flush=True)
    env = child_env()
    env["PYTHONPATH"] = os.pathsep.join([code_dir] + env["PYTHONPATH"].split(os.pathsep)[1:])
    run = public(run_measured(cmd, log_prefix, cwd=code_dir, env=env,
                               interval=args.sample_interval,
                               pss_interval=args.sample_interval * 5))
    run.pop("_samples", None)
    status = "ok" if run["returncode"] == 0 else "FAILED (%s)\n%s" % (
        run["returncode"], tail(run["stderr_path"]))
    print("[%s] %.1fs, peak %.0f MB (largest process %.0f MB): %s" % (
        what, run["wall_seconds"], run["peak_mb"], run["max_single_process_rss_mb"], status),
        flush=True)
    return run


def _spm_options(args):
    """The trainer options the job passes (and records) for these flags."""
    return {"model_type": args.model_type, "vocab_size": args.vocab_size,
            "character_coverage": args.character_coverage, "num_threads": 16,
            "pad_id": 0, "eos_id": 1, "unk_id": 2, "bos_id": -1}


def run_ours(args, work_dir, meta):
    out_dir = os.path.join(work_dir, "ours", "out")
    shutil.rmtree(os.path.join(work_dir, "ours"), ignore_errors=True)
    os.makedirs(out_dir)
    cmd = [args.python, "-m", "pipeline.datagen",
           "--train_source", meta["files"]["source"]["path"],
           "--train_target", meta["files"]["target"]["path"],
           "--output_dir", out_dir, "--problem", args.problem,
           "--vocab_type", "sentencepiece", "--spm_model_type", args.model_type,
           "--vocab_size", str(args.vocab_size),
           "--spm_character_coverage", str(args.character_coverage),
           "--file_byte_budget", repr(args.file_byte_budget),
           "--num_train_shards", str(args.num_shards)] + shlex.split(args.runner_args)
    run = _measured(cmd, os.path.join(work_dir, "ours", "datagen"), args, "ours",
                    code_dir=args.code_dir)
    models = {}
    for _, lang in SIDES:  # vocab.{problem}.{size}.spm.{lang}/sentencepiece.model
        path = os.path.join(out_dir, "vocab.%s.%d.spm.%s" % (args.problem, args.vocab_size,
                                                             lang), "sentencepiece.model")
        models[lang] = path if os.path.exists(path) else None
    run["models"] = {lang: path and {"path": path, "sha256": _sha256(path)}
                     for lang, path in models.items()}
    summary = os.path.join(out_dir, "%s.datagen_summary.json" % args.problem)
    if os.path.exists(summary):
        with open(summary) as f:
            run["summary"] = json.load(f)
    return run


def run_recipe(args, work_dir, meta):
    rdir = os.path.join(work_dir, "recipe")
    shutil.rmtree(rdir, ignore_errors=True)
    os.makedirs(rdir)
    version = subprocess.run([args.python, "-c", "import sentencepiece; "
                              "print(sentencepiece.__version__)"],
                             capture_output=True, text=True).stdout.strip()
    steps = {}
    for side, lang in SIDES:  # one side after the other, as a user's script runs them
        src = meta["files"][side]["path"]
        sample = os.path.join(rdir, "sample.%s" % lang)
        prefix = os.path.join(rdir, "spm.%s" % lang)
        steps["sample_" + lang] = _measured(
            [args.python, "-c", SAMPLE_SCRIPT, src, repr(args.file_byte_budget), sample],
            os.path.join(rdir, "sample_" + lang), args, "recipe sample " + lang)
        steps["train_" + lang] = _measured(
            [args.python, "-c", TRAIN_SCRIPT, sample, prefix, json.dumps(_spm_options(args))],
            os.path.join(rdir, "train_" + lang), args, "recipe train " + lang)
        if os.path.exists(prefix + ".model"):
            steps["train_" + lang]["model_sha256"] = _sha256(prefix + ".model")
        steps["encode_" + lang] = _measured(
            [args.python, "-c", ENCODE_SCRIPT, prefix + ".model", src,
             os.path.join(rdir, "ids." + lang)],
            os.path.join(rdir, "encode_" + lang), args, "recipe encode " + lang)
    return {"sentencepiece": version, "steps": steps,
            "wall_seconds": sum(s["wall_seconds"] for s in steps.values()),
            "peak_mb": max(s["peak_mb"] for s in steps.values()),
            "max_single_process_rss_mb": max(s["max_single_process_rss_mb"]
                                             for s in steps.values()),
            "ok": all(s["returncode"] == 0 for s in steps.values())}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--data_dir", default=DEFAULT_DATA_DIR)
    p.add_argument("--source", default=None, help="default: DATA_DIR/" + SOURCE_NAME)
    p.add_argument("--target", default=None, help="default: DATA_DIR/" + TARGET_NAME)
    p.add_argument("--lines", type=int, default=None, help="only the first N pairs")
    p.add_argument("--problem", default="translate_enzh_spm")
    p.add_argument("--model_type", default="unigram", choices=("unigram", "bpe"))
    p.add_argument("--vocab_size", type=int, default=8000)
    p.add_argument("--character_coverage", type=float, default=0.9995)
    p.add_argument("--file_byte_budget", type=float, default=1e8)
    p.add_argument("--num_shards", type=int, default=10)
    p.add_argument("--runner_args", default=DEFAULT_RUNNER_ARGS)
    p.add_argument("--only", choices=("both", "ours", "recipe"), default="both")
    p.add_argument("--code_dir", default=REPO_ROOT,
                   help="the checkout whose job runs as ours (e.g. an older commit's worktree)")
    p.add_argument("--repeat", type=int, default=1,
                   help="run the sides this many times, alternating (ours first)")
    p.add_argument("--work_dir", default=None, help="kept; default: a temp dir, removed")
    p.add_argument("--json_out", default=None)
    p.add_argument("--python", default=os.path.join(REPO_ROOT, ".venv", "bin", "python"))
    p.add_argument("--sample_interval", type=float, default=0.2)
    args = p.parse_args(argv)
    args.source = args.source or os.path.join(args.data_dir, SOURCE_NAME)
    args.target = args.target or os.path.join(args.data_dir, TARGET_NAME)
    if not os.path.exists(args.python):
        args.python = sys.executable
    return args


def _compare(result, work_dir):
    """Whether each side's model of ours is the recipe's (pieces, scores, options)."""
    for _, lang in SIDES:
        ours = (result["ours"]["models"].get(lang) or {}).get("path")
        same = _same_model(ours, os.path.join(work_dir, "recipe", "spm.%s.model" % lang))
        result.setdefault("models", {})[lang] = same
        print("model %s: %s (sentencepiece %s on both sides)" % (
            lang, "missing" if same is None else
            "pieces, scores, options identical" if all(same.values()) else "DIFFER %s" % same,
            result["recipe"]["sentencepiece"]))


def main(argv=None):
    args = parse_args(argv)
    work_dir = args.work_dir or tempfile.mkdtemp(prefix="bench_spm_")
    os.makedirs(work_dir, exist_ok=True)
    meta = prepare_input(args, os.path.join(work_dir, "input"))
    result = {"settings": {k: v for k, v in vars(args).items()}, "input": meta, "runs": []}
    for _ in range(args.repeat):
        run = {}
        uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        print("[load] %s" % uptime, flush=True)
        run["uptime_before"] = uptime
        if args.only in ("both", "ours"):
            run["ours"] = run_ours(args, work_dir, meta)
        if args.only in ("both", "recipe"):
            run["recipe"] = run_recipe(args, work_dir, meta)
        if "ours" in run and "recipe" in run:
            _compare(run, work_dir)
        run["uptime_after"] = subprocess.run(["uptime"], capture_output=True,
                                             text=True).stdout.strip()
        result["runs"].append(run)
    print("\n| run | side | wall s | peak MB (tree) | largest process MB |\n|---|---|---|---|---|")
    for i, run in enumerate(result["runs"]):
        for name in ("ours", "recipe"):
            if name in run:
                print("| %d | %s | %.1f | %.0f | %.0f |" % (
                    i + 1, name, run[name]["wall_seconds"], run[name]["peak_mb"],
                    run[name]["max_single_process_rss_mb"]))
        if "ours" in run and "recipe" in run:
            print("| %d | ours/recipe | %.2f | %.2f | |" % (
                i + 1, run["ours"]["wall_seconds"] / run["recipe"]["wall_seconds"],
                run["ours"]["peak_mb"] / run["recipe"]["peak_mb"]))
    print("load: %s" % " / ".join(r["uptime_before"] for r in result["runs"]))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(result, f, indent=1, default=str)
    if not args.work_dir:
        shutil.rmtree(work_dir)
    ok = all(run[n].get("ok", run[n].get("returncode") == 0)
             for run in result["runs"] for n in ("ours", "recipe") if n in run)
    same = all(all(m.values()) for run in result["runs"]
               for m in run.get("models", {}).values() if m is not None)
    return 0 if ok and same else 1


if __name__ == "__main__":
    sys.exit(main())
