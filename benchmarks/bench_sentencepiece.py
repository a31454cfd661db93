#!/usr/bin/env python
"""Benchmark: the job's SentencePiece kind vs. the usual single-process recipe, same input.

  ours    python -m pipeline.datagen --vocab_type sentencepiece ...: the byte-budget sample,
          SentencePiece's trainer on one worker per side, encoding in parallel, sharded
          shuffled TFRecords, books; one subprocess (its process tree is measured).
  recipe  what a team does by hand, one step after the other, each a measured subprocess:
            sample  the same byte-budget sample (T2T's `generate_lines_for_vocab`, our
                    `text_lines.sample_lines_for_vocab`) written to one file per side;
            train   `spm_train --input=<sample> ...` per side, the same options the job
                    records (model type, size, coverage, special ids, num_threads=16);
            encode  `spm_encode --output_format=id --extra_options=eos` of each whole side
                    into a text file of ids (no shards, no shuffle, no TFRecords).
          `spm_train`/`spm_encode` are the command-line tools of Debian's `sentencepiece`
          package (`apt-get install sentencepiece`; the pip wheel ships none); their version
          is printed and recorded.

Prints wall time and peak memory (RSS of the process tree, `benchmarks/process_memory.py`)
of each side and step, and whether the models of the two sides are byte-identical (they are
not when the CLI's SentencePiece version differs from the wheel's: the trainer_spec it
records differs; the sha256s are printed).

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


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _same_pieces(ours, theirs):
    """Whether two model files hold the same pieces with the same scores (their recorded
    trainer_spec may differ: another SentencePiece version records other defaults)."""
    import sentencepiece
    if not (ours and theirs and os.path.exists(ours) and os.path.exists(theirs)):
        return None
    a, b = (sentencepiece.SentencePieceProcessor(model_file=p) for p in (ours, theirs))
    return ([(a.id_to_piece(i), a.get_score(i)) for i in range(a.get_piece_size())]
            == [(b.id_to_piece(i), b.get_score(i)) for i in range(b.get_piece_size())])


def _measured(cmd, log_prefix, args, what):
    print("[%s] %s" % (what, " ".join(shlex.quote(c) for c in cmd)), flush=True)
    run = public(run_measured(cmd, log_prefix, cwd=REPO_ROOT, env=child_env(),
                               interval=args.sample_interval,
                               pss_interval=args.sample_interval * 5))
    run.pop("_samples", None)
    status = "ok" if run["returncode"] == 0 else "FAILED (%s)\n%s" % (
        run["returncode"], tail(run["stderr_path"]))
    print("[%s] %.1fs, peak %.0f MB: %s" % (what, run["wall_seconds"], run["peak_mb"], status),
          flush=True)
    return run


def _spm_options(args):
    return ["--model_type=%s" % args.model_type, "--vocab_size=%d" % args.vocab_size,
            "--character_coverage=%s" % args.character_coverage, "--num_threads=16",
            "--pad_id=0", "--eos_id=1", "--unk_id=2", "--bos_id=-1"]


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
    run = _measured(cmd, os.path.join(work_dir, "ours", "datagen"), args, "ours")
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
    version = subprocess.run([args.spm_train, "--version"], capture_output=True,
                             text=True).stdout.strip()
    steps = {}
    for side, lang in SIDES:
        src = meta["files"][side]["path"]
        sample = os.path.join(rdir, "sample.%s" % lang)
        prefix = os.path.join(rdir, "spm.%s" % lang)
        steps["sample_" + lang] = _measured(
            [args.python, "-c", SAMPLE_SCRIPT, src, repr(args.file_byte_budget), sample],
            os.path.join(rdir, "sample_" + lang), args, "recipe sample " + lang)
        steps["train_" + lang] = _measured(
            [args.spm_train, "--input=" + sample, "--model_prefix=" + prefix,
             "--minloglevel=1"] + _spm_options(args),
            os.path.join(rdir, "train_" + lang), args, "recipe spm_train " + lang)
        if os.path.exists(prefix + ".model"):
            steps["train_" + lang]["model_sha256"] = _sha256(prefix + ".model")
    for side, lang in SIDES:
        steps["encode_" + lang] = _measured(
            [args.spm_encode, "--model=%s.model" % os.path.join(rdir, "spm." + lang),
             "--output_format=id", "--extra_options=eos",
             "--input=" + meta["files"][side]["path"],
             "--output=" + os.path.join(rdir, "ids." + lang)],
            os.path.join(rdir, "encode_" + lang), args, "recipe spm_encode " + lang)
    return {"version": version, "steps": steps,
            "wall_seconds": sum(s["wall_seconds"] for s in steps.values()),
            "peak_mb": max(s["peak_mb"] for s in steps.values()),
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
    p.add_argument("--spm_train", default=shutil.which("spm_train") or "spm_train")
    p.add_argument("--spm_encode", default=shutil.which("spm_encode") or "spm_encode")
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


def main(argv=None):
    args = parse_args(argv)
    work_dir = args.work_dir or tempfile.mkdtemp(prefix="bench_spm_")
    os.makedirs(work_dir, exist_ok=True)
    meta = prepare_input(args, os.path.join(work_dir, "input"))
    result = {"settings": {k: v for k, v in vars(args).items()}, "input": meta}
    if args.only in ("both", "ours"):
        result["ours"] = run_ours(args, work_dir, meta)
    if args.only in ("both", "recipe"):
        result["recipe"] = run_recipe(args, work_dir, meta)
    print("\n| side | wall s | peak MB |\n|---|---|---|")
    for name in ("ours", "recipe"):
        if name in result:
            print("| %s | %.1f | %.0f |" % (name, result[name]["wall_seconds"],
                                            result[name]["peak_mb"]))
    if "ours" in result and "recipe" in result:
        for _, lang in SIDES:
            ours = (result["ours"]["models"].get(lang) or {}).get("sha256")
            theirs = result["recipe"]["steps"]["train_" + lang].get("model_sha256")
            pieces = _same_pieces((result["ours"]["models"].get(lang) or {}).get("path"),
                                  os.path.join(work_dir, "recipe", "spm.%s.model" % lang))
            result.setdefault("models", {})[lang] = {"bytes_identical": ours == theirs,
                                                     "pieces_and_scores_identical": pieces}
            print("model %s: bytes %s, pieces and scores %s (recipe's spm_train: %s)" % (
                lang, "missing" if not (ours and theirs) else
                "identical" if ours == theirs else "differ", pieces, result["recipe"]["version"]))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(result, f, indent=1, default=str)
    if not args.work_dir:
        shutil.rmtree(work_dir)
    ok = all(result[n].get("ok", result[n].get("returncode") == 0)
             for n in ("ours", "recipe") if n in result)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
