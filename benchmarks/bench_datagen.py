#!/usr/bin/env python
"""Benchmark: Tensor2Tensor's reference datagen vs. our Beam pipeline, on the same input.

Runs, one after the other and each in its own fresh subprocess:

  T2T (reference, tensor2tensor 1.15.7, translate_enzh_wmt8k procedure): the stages
    vocab_en, vocab_zh, encode_write and shuffle of `t2t_reproduction.py` (its docstring
    names the T2T functions each runs)

  ours
    python -m pipeline.datagen ... (one subprocess; stage times come from the
    OUT/datagen_summary.json it writes)

and prints wall time and peak memory per stage, the T2T/ours ratios, whether the vocab files
are byte-identical and whether the multisets of (inputs, targets) records are equal.

With --t2t_reference [DIR] the T2T side is not run: its figures come from a stored T2T run
of the whole corpus (DATA_DIR/t2t-reference: t2t-timings.json, the two vocab files, the
sha256 of its shards). Our pipeline runs as usual; the table then shows the stored T2T
seconds (upper bounds: that run had other work beside it) and its whole-run peak RSS, and the
vocab files are compared byte for byte with the stored ones. The records cannot be compared
(the reference keeps no shards); that check is skipped with a note.

Peak memory is sampled with psutil every --sample_interval seconds over the process tree (the
subprocess plus all of its descendants): the RSS summed over the processes, and the RSS of the
largest single process (also taken from the exact kernel high-water mark of wait4's rusage
ru_maxrss, which covers the child and its reaped descendants): peak_mb = max(tree sum, largest
single process). PSS (psutil memory_full_info().pss, summed) is sampled every --pss_interval s.

Needs psutil (benchmarks/process_memory.py samples the tree with it); it is in
requirements-test.txt, not in the job's runtime requirements.

Run with the project's virtualenv (it has tensor2tensor + tensorflow):

  .venv/bin/python benchmarks/bench_datagen.py --lines 100000      # quick (~5 min for T2T)
  .venv/bin/python benchmarks/bench_datagen.py                     # full bench (> 1 h)
  .venv/bin/python benchmarks/bench_datagen.py --t2t_reference --work_dir /tmp/bench_full
                                    # full corpus, ours only, T2T from the stored reference

This file is the command line and the report; the parts are modules of their own:
t2t_reproduction.py (the T2T side, a stage per subprocess), t2t_stored_reference.py (the T2T
side from a stored run), bench_runs.py (measured subprocess runs, the staged input, our run)
and bench_compare.py (vocab and record comparisons, the table, the targets).

See benchmarks/README.md.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

import bench_compare
import t2t_reproduction
from bench_compare import build_table, check_targets, compare_records, compare_vocabs, fmt
from bench_compare import print_table
from bench_runs import DEFAULT_RUNNER_ARGS, REPO_ROOT, prepare_input, run_ours
from t2t_reproduction import run_t2t
from t2t_stored_reference import T2T_REFERENCE_NOTE, load_t2t_reference

DEFAULT_DATA_DIR = "/work/shared/data/bench/enzh-wmt21-24"   # --data_dir
SOURCE_NAME, TARGET_NAME = "train.en.xz", "train.zh.xz"      # default --source/--target in it
T2T_REFERENCE_NAME = "t2t-reference"                         # default --t2t_reference in it
_REFERENCE_IN_DATA_DIR = object()   # --t2t_reference given without a value


def parse_args(argv):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--data_dir", default=DEFAULT_DATA_DIR,
                   help="bench corpus dir: holds the default --source/--target (%s, %s) and "
                        "the default --t2t_reference (%s/)" % (
                            SOURCE_NAME, TARGET_NAME, T2T_REFERENCE_NAME))
    p.add_argument("--source", default=None,
                   help="source-language training file (plain text or .xz); None: "
                        "DATA_DIR/%s" % SOURCE_NAME)
    p.add_argument("--target", default=None,
                   help="target-language training file, line-aligned with --source; "
                        "None: DATA_DIR/%s" % TARGET_NAME)
    p.add_argument("--lines", type=int, default=None,
                   help="use only the first N line pairs (quick run); default: all")
    p.add_argument("--t2t_reference", nargs="?", const=_REFERENCE_IN_DATA_DIR, default=None,
                   metavar="DIR",
                   help="do not run T2T: take its side from the stored T2T run in DIR "
                        "(t2t-timings.json, vocab .src/.tgt files, t2t-shards.sha256); "
                        "without DIR: DATA_DIR/%s. Only ours runs (--only ours is implied); "
                        "whole corpus only (not with --lines)" % T2T_REFERENCE_NAME)
    p.add_argument("--problem", default="translate_enzh_wmt8k")
    p.add_argument("--source_lang", default="en", help="vocab file suffix for the source")
    p.add_argument("--target_lang", default="zh", help="vocab file suffix for the target")
    p.add_argument("--vocab_size", type=int, default=8192)
    p.add_argument("--max_subtoken_length", type=int, default=200)
    p.add_argument("--file_byte_budget", type=float, default=1e8)
    p.add_argument("--num_shards", type=int, default=10, help="train shards")
    p.add_argument("--seed", type=int, default=1, help="passed to our pipeline")
    p.add_argument("--runner_args", default=None,
                   help="replaces our runner flags (default: %r)" % DEFAULT_RUNNER_ARGS)
    p.add_argument("--only", choices=("both", "t2t", "ours"), default="both",
                   help="run only one side")
    p.add_argument("--reuse_t2t", action="store_true",
                   help="with --work_dir: reuse a previous successful T2T run there if "
                        "input and settings match (T2T on the full bench takes > 1 h)")
    p.add_argument("--work_dir", default=None,
                   help="working directory (kept); default: a temp dir, removed at the end "
                        "unless --keep_work_dir")
    p.add_argument("--keep_work_dir", action="store_true")
    p.add_argument("--json_out", default=None, help="write all results as JSON here")
    p.add_argument("--python", default=None,
                   help="interpreter for the subprocesses (default: .venv/bin/python of the "
                        "repo if present, else this interpreter)")
    p.add_argument("--sample_interval", type=float, default=0.1,
                   help="seconds between RSS samples of the process tree")
    p.add_argument("--pss_interval", type=float, default=0.5,
                   help="seconds between PSS samples of the process tree (informational; "
                        "0 disables)")
    args = p.parse_args(argv)
    if args.source is None:
        args.source = os.path.join(args.data_dir, SOURCE_NAME)
    if args.target is None:
        args.target = os.path.join(args.data_dir, TARGET_NAME)
    if args.t2t_reference is _REFERENCE_IN_DATA_DIR:
        args.t2t_reference = os.path.join(args.data_dir, T2T_REFERENCE_NAME)
    if args.t2t_reference is not None:
        if args.lines is not None:
            p.error("--t2t_reference is a run on the whole corpus: it cannot be used with "
                    "--lines")
        if args.only == "t2t":
            p.error("--t2t_reference replaces the T2T run: it cannot be used with --only t2t")
        if args.reuse_t2t:
            p.error("--t2t_reference and --reuse_t2t are alternatives; pass one")
        args.t2t_reference = os.path.abspath(args.t2t_reference)
    if args.python is None:
        venv_py = os.path.join(REPO_ROOT, ".venv", "bin", "python")
        args.python = venv_py if os.path.exists(venv_py) else sys.executable
    if args.reuse_t2t and not args.work_dir:
        p.error("--reuse_t2t needs --work_dir")
    return args


def main(argv):
    args = parse_args(argv)
    reference = None
    if args.t2t_reference:
        try:
            reference = load_t2t_reference(args.t2t_reference, args)
        except ValueError as e:
            print("[bench] --t2t_reference: %s" % e, file=sys.stderr)
            return 2
        print("[t2t-ref] %s: %s" % (args.t2t_reference, T2T_REFERENCE_NOTE))
        for w in reference["warnings"]:
            print("[t2t-ref] WARNING: %s" % w)
        corpus_dir = os.path.dirname(args.t2t_reference)
        for side in ("source", "target"):
            path = os.path.abspath(getattr(args, side))
            if os.path.dirname(os.path.realpath(path)) != os.path.realpath(corpus_dir):
                print("[t2t-ref] WARNING: --%s %s is not in %s, the corpus dir the reference "
                      "sits in; the comparison assumes the same input" % (side, path,
                                                                          corpus_dir))
    if args.work_dir:
        work_dir = os.path.abspath(args.work_dir)
        os.makedirs(work_dir, exist_ok=True)
        keep = True
    else:
        work_dir = tempfile.mkdtemp(prefix="bench_datagen_")
        keep = args.keep_work_dir
    print("[bench] work dir: %s" % work_dir)
    results = {"config": {k: v for k, v in vars(args).items()}, "work_dir": work_dir}
    if reference:
        results["t2t_source"] = "reference"
        results["t2t_reference_note"] = T2T_REFERENCE_NOTE
    try:
        meta = prepare_input(args, os.path.join(work_dir, "input"))
        results["input"] = meta
        fingerprint = {
            "input": {s: {k: meta["files"][s][k] for k in ("name", "lines", "bytes")}
                      for s in ("source", "target")},
            "request": meta["request"],
            "settings": {k: getattr(args, k) for k in (
                "problem", "source_lang", "target_lang", "vocab_size",
                "max_subtoken_length", "file_byte_budget", "num_shards")},
        }
        t2t = ours = None
        if reference:
            t2t = reference  # --only both|ours: only ours runs
            results["t2t"] = t2t
        elif args.only in ("both", "t2t"):
            t2t = run_t2t(args, work_dir, meta, fingerprint)
            results["t2t"] = t2t
        if args.only in ("both", "ours"):
            ours = run_ours(args, work_dir, meta)
            results["ours"] = ours

        print()
        pairs_read = meta["files"]["source"]["lines"]
        if t2t and t2t.get("reference"):
            st = t2t["stages"]
            print("[t2t-ref] STORED T2T REFERENCE (not run here, %s): vocab sizes %s=%s %s=%s "
                  "(from %s / %s sampled lines, %s / %s distinct tokens); whole run %.0fs wall "
                  "(%s), peak %.0f MB (%s); %d shards (sha256 only); times are upper bounds" % (
                      t2t["reference_dir"], args.source_lang, st["vocab_en"]["vocab_size"],
                      args.target_lang, st["vocab_zh"]["vocab_size"],
                      st["vocab_en"]["vocab_lines"], st["vocab_zh"]["vocab_lines"],
                      st["vocab_en"]["distinct_tokens"], st["vocab_zh"]["distinct_tokens"],
                      t2t["wall_seconds"], t2t["wall_seconds_source"], t2t["peak_mb"],
                      t2t["peak_mb_source"], len(t2t["shards_sha256"])))
        elif t2t and t2t.get("ok"):
            st = t2t["stages"]
            written = st["encode_write"]["pairs_written"]
            print("[t2t] pairs read %d, written %d, rejected %d; vocab sizes en=%d zh=%d "
                  "(from %d / %d sampled lines); %s" % (
                      pairs_read, written, pairs_read - written, st["vocab_en"]["vocab_size"],
                      st["vocab_zh"]["vocab_size"], st["vocab_en"]["vocab_lines"],
                      st["vocab_zh"]["vocab_lines"], st["encode_write"].get("impl")))
            print("[t2t] import-only baseline: %.1f MB, %.2fs; encode_write = compile_data "
                  "%.2fs + encode/write %.2fs" % (
                      st["import"]["peak_mb"], st["import"]["wall_seconds"],
                      st["encode_write"]["compile_data_seconds"],
                      st["encode_write"]["encode_write_seconds"]))
            if t2t.get("leftover_files"):
                print("[t2t] leftover files: %s" % t2t["leftover_files"])
        if ours and ours.get("ok"):
            summ = ours["summary"]
            train = (summ.get("splits") or {}).get("train") or {}
            vocab = summ.get("vocab") or {}
            print("[ours] pairs read %s, written %s, rejected %s; vocab sizes %s=%s %s=%s" % (
                train.get("pairs_read"), train.get("pairs_written"),
                train.get("pairs_rejected"), args.source_lang,
                (vocab.get("source") or {}).get("size"), args.target_lang,
                (vocab.get("target") or {}).get("size")))
            print("[ours] stages: %s" % ", ".join(
                "%s=%.2fs" % (n, r["seconds"]) for n, r in ours["stages"].items()))

        if t2t and t2t.get("ok") and ours and ours.get("ok"):
            vocab_cmp = compare_vocabs(args, t2t, ours)
            results["vocab_comparison"] = vocab_cmp
            for side, rec in vocab_cmp.items():
                extra = ""
                if rec["result"] == "DIFFERENT":
                    extra = " (%d vs %d lines; first difference at line %s: %r vs %r)" % (
                        rec["t2t_lines"], rec["ours_lines"], rec.get("first_diff_line"),
                        *(rec.get("first_diff") or ["", ""]))
                elif rec["result"] == "MISSING":
                    extra = " (t2t: %s, ours: %s)" % (rec["t2t_path"], rec["ours_path"])
                print("[compare] vocab %s (%s): %s%s" % (
                    side, os.path.basename(rec["t2t_path"]), rec["result"], extra))
            if t2t.get("reference"):
                rec_cmp = {"skipped": True, "reason": "the stored T2T reference has no shards "
                           "(only their sha256, of unseeded-shuffled files)"}
            else:
                rec_cmp = compare_records(args, work_dir, t2t, ours)
            results["record_comparison"] = rec_cmp
            if rec_cmp.get("skipped"):
                print("[compare] records: skipped -- %s" % rec_cmp["reason"])
            elif "error" in rec_cmp:
                print("[compare] records: comparison failed:\n%s" % rec_cmp["error"])
            else:
                print("[compare] records (inputs, targets) multiset: %s -- t2t %d records "
                      "in %d shards, ours %d records in %d shards; only in t2t: %d, only in "
                      "ours: %d" % (
                          "EQUAL" if rec_cmp["multiset_equal"] else "DIFFERENT",
                          rec_cmp["t2t_records"], len(rec_cmp["t2t_shard_sizes"]),
                          rec_cmp["ours_records"], len(rec_cmp["ours_shard_sizes"]),
                          rec_cmp["only_in_t2t"], rec_cmp["only_in_ours"]))
                print("[compare] separately: inputs %s (%d t2t records without a match), "
                      "targets %s (%d); per-shard contents equal: %s (T2T puts record k in "
                      "shard k %% %d); features t2t=%s ours=%s" % (
                          "EQUAL" if rec_cmp["inputs_multiset_equal"] else "DIFFERENT",
                          rec_cmp["inputs_only_in_t2t"],
                          "EQUAL" if rec_cmp["targets_multiset_equal"] else "DIFFERENT",
                          rec_cmp["targets_only_in_t2t"], rec_cmp["shard_contents_equal"],
                          args.num_shards, sorted(rec_cmp["t2t_features"]),
                          sorted(rec_cmp["ours_features"])))

        print()
        rows = build_table(t2t, ours)
        results["table"] = rows
        print_table(rows)
        if ours and ours.get("ok"):
            print("Ours, peak RSS: sum over processes %.1f MB (up to %d processes), largest "
                  "single process %.1f MB." % (ours["tree_peak_rss_mb"],
                                               ours.get("max_processes", 0),
                                               ours["max_single_process_rss_mb"]))
        pss = []
        if t2t and t2t.get("stages") and not t2t.get("reference"):
            pss += ["t2t:%s %s" % (n, fmt(r.get("tree_peak_pss_mb"), "%.0f"))
                    for n, r in t2t["stages"].items()]
        if ours and "tree_peak_pss_mb" in ours:
            pss.append("ours (whole run, %d processes) %s" % (
                ours.get("max_processes", 0), fmt(ours.get("tree_peak_pss_mb"), "%.0f")))
        if pss and args.pss_interval > 0:
            print("Peak PSS MB (shared library pages split between processes; "
                  "informational): " + ", ".join(pss))
        targets = check_targets(rows)
        results["targets"] = targets
        print()
        for name, t in targets.items():
            status = "n/a" if t["met"] is None else ("PASS" if t["met"] else "FAIL")
            print("[target] %-4s %-42s ratio %s (need >= %.0fx)%s" % (
                status, t["description"], fmt(t["ratio"], "%.2fx"), t["required"],
                " [vs stored T2T reference: %s]" % t["note"].split(": ", 1)[1]
                if t.get("t2t_source") == "reference" else ""))
        ok = all(side is None or side.get("ok") for side in (t2t, ours))
        results["ok"] = ok
    finally:
        if args.json_out:
            with open(args.json_out, "w") as f:
                json.dump(results, f, indent=1, default=str)
            print("[bench] results written to %s" % args.json_out)
        if not keep:
            shutil.rmtree(work_dir, ignore_errors=True)
        else:
            print("[bench] work dir kept: %s" % work_dir)
    return 0 if results.get("ok") else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == t2t_reproduction.STAGE_MODE:
        t2t_reproduction.stage_main(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == bench_compare.COMPARE_MODE:
        bench_compare.compare_main(sys.argv[2:])
    else:
        sys.exit(main(sys.argv[1:]))
