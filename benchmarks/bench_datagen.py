#!/usr/bin/env python
"""Benchmark: Tensor2Tensor's reference datagen vs. our Beam pipeline, on the same input.

Runs, one after the other and each in its own fresh subprocess:

  T2T (reference, tensor2tensor 1.15.7, translate_enzh_wmt8k procedure)
    vocab_en      generator_utils.get_or_generate_vocab(...) for the source file, i.e.
                  generate_lines_for_vocab(tmp_dir, [[path, [name]]], file_byte_budget) ->
                  SubwordTextEncoder.build_from_generator(lines, vocab_size,
                  max_subtoken_length=...) -> store_to_file (get_or_generate_vocab_inner)
    vocab_zh      the same for the target file
    encode_write  translate.compile_data (read both files, strip, drop pairs with an empty
                  side) -> text2text_txt_iterator -> text2text_generate_encoded (two vocabs,
                  EOS=1) -> generator_utils.generate_files into
                  {problem}-unshuffled-train-0000i-of-0000N (round-robin)
    shuffle       generator_utils.shuffle_dataset(paths): per-shard in-memory shuffle,
                  writes {problem}-train-0000i-of-0000N and removes the unshuffled files
    (these are the steps of TranslateEnzhWmt32k.generate_encoded_samples +
    Text2TextProblem.generate_data for the TRAIN split)

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

See benchmarks/README.md.
"""

import argparse
import collections
import glob
import hashlib
import json
import lzma
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import psutil  # requirements-test.txt; not a runtime dependency of the job

from process_memory import TreeSampler

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
DEFAULT_DATA_DIR = "/work/shared/data/bench/enzh-wmt21-24"   # --data_dir
SOURCE_NAME, TARGET_NAME = "train.en.xz", "train.zh.xz"      # default --source/--target in it
T2T_REFERENCE_NAME = "t2t-reference"                         # default --t2t_reference in it
_REFERENCE_IN_DATA_DIR = object()   # --t2t_reference given without a value
DEFAULT_RUNNER_ARGS = ("--runner DirectRunner --direct_running_mode multi_processing "
                       "--direct_num_workers 2")
UNSHUFFLED_SUFFIX = "-unshuffled"   # generator_utils.UNSHUFFLED_SUFFIX
EOS_ID = 1                          # text_encoder.EOS_ID
T2T_STAGES = ("vocab_en", "vocab_zh", "encode_write", "shuffle")
STAGE_MODE = "_t2t_stage"           # hidden sub-command: run one T2T stage in this process
COMPARE_MODE = "_compare_records"   # hidden sub-command: compare TFRecord multisets

TARGETS = {
    # name: (description, comparison row key, metric, minimum T2T/ours ratio)
    "vocab_time": ("vocab build >= 10x faster than T2T", "vocab", "seconds", 10.0),
    "vocab_memory": ("vocab build peak memory <= 1/4 of T2T", "vocab", "peak_mb", 4.0),
    "encode_time": ("encode+write >= 5x faster than T2T", "encode", "seconds", 5.0),
}

# The stored T2T reference run (--t2t_reference). Its t2t-timings.json carries per-side
# sampled_lines / distinct_tokens / vocab_size / count_s / build_s ("src" = source = en,
# "tgt" = target = zh) and encode_write_s / shuffle_s, but not the whole run's wall time and
# peak RSS. Those two are stated in /work/shared/data/README.md (t2t-reference/: "the whole
# run took 4,158 s wall and 5.47 GB peak RSS", one process, with other work running beside
# it) and are used only if the json does not carry them (keys "wall_s" / "peak_rss_mb").
T2T_REFERENCE_WALL_SECONDS = 4158.0
T2T_REFERENCE_PEAK_MB = 5470.0
# Settings of that run (same README: translate_enzh_wmt8k, file byte budget 1e8, target
# 8192, max_subtoken_length 200, 10 shards); used unless the json has a "settings" object.
T2T_REFERENCE_SETTINGS = {"problem": "translate_enzh_wmt8k", "vocab_size": 8192,
                          "max_subtoken_length": 200, "file_byte_budget": 1e8,
                          "num_shards": 10}
T2T_REFERENCE_TIMINGS = "t2t-timings.json"
T2T_REFERENCE_SHARDS = "t2t-shards.sha256"
T2T_REFERENCE_SIDES = {"source": "src", "target": "tgt"}  # vocab file suffix / json key
T2T_REFERENCE_NOTE = ("T2T figures are from a stored reference run (not run here); its "
                      "times are upper bounds (that run had other work beside it) and its "
                      "peak is the whole run's (one process)")


# --------------------------------------------------------------------------------------
# Process-tree measurement
# --------------------------------------------------------------------------------------

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


def _tail(path, n=25):
    try:
        with open(path, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-n:])


# --------------------------------------------------------------------------------------
# T2T stages (executed inside a fresh subprocess: `bench_datagen.py _t2t_stage ...`)
# --------------------------------------------------------------------------------------

def _t2t_import():
    """Imports tensorflow.compat.v1 and T2T's generator_utils/text_encoder on TF2.

    generator_utils evaluates tf.estimator.ModeKeys.TRAIN as a default argument at import
    time (its only use of tf.estimator); TF >= 2.16 has no tf.estimator, so a stand-in
    namespace is installed first (same approach as tests/t2t_reference.py).
    """
    import types
    import tensorflow.compat.v1 as tf
    if not hasattr(tf, "estimator"):
        tf.estimator = types.SimpleNamespace(ModeKeys=types.SimpleNamespace(
            TRAIN="train", EVAL="eval", PREDICT="infer"))
    from tensor2tensor.data_generators import generator_utils, text_encoder
    return tf, generator_utils, text_encoder


def _t2t_import_translate():
    """Tries to import T2T's translate + text_problems modules (for compile_data and the
    text2text iterators/encoder). They transitively import packages that are not installed
    here (tensorflow_addons, tf_slim, tensorflow_probability, scipy) but that none of the
    functions used here touch; those missing third-party modules are stubbed with empty
    modules. Returns (translate, text_problems, stubbed names) or None if that fails."""
    import types
    stubbed = []
    for _ in range(30):
        try:
            from tensor2tensor.data_generators import text_problems, translate
            return translate, text_problems, stubbed
        except ModuleNotFoundError as e:
            name = e.name or ""
            top = name.split(".")[0]
            if (not name or name in sys.modules or top in ("tensor2tensor", "tensorflow")):
                return None
            sys.modules[name] = types.ModuleType(name)
            stubbed.append(name)
        except Exception:  # pylint: disable=broad-except
            return None
    return None


def _reproduced_text2text_fns(tf, text_encoder):
    """Verbatim reproductions of translate.compile_data (plain-text branch),
    text_problems.txt_line_iterator / text2text_txt_iterator / text2text_generate_encoded,
    used only if the real modules cannot be imported."""

    def txt_line_iterator(txt_path):
        with tf.gfile.Open(txt_path) as f:
            for line in f:
                yield line.strip()

    def text2text_txt_iterator(source_txt_path, target_txt_path):
        for inputs, targets in zip(txt_line_iterator(source_txt_path),
                                   txt_line_iterator(target_txt_path)):
            yield {"inputs": inputs, "targets": targets}

    def text2text_generate_encoded(sample_generator, vocab, targets_vocab=None,
                                   has_inputs=True, inputs_prefix="", targets_prefix=""):
        targets_vocab = targets_vocab or vocab
        for sample in sample_generator:
            if has_inputs:
                sample["inputs"] = vocab.encode(inputs_prefix + sample["inputs"])
                sample["inputs"].append(text_encoder.EOS_ID)
            sample["targets"] = targets_vocab.encode(targets_prefix + sample["targets"])
            sample["targets"].append(text_encoder.EOS_ID)
            yield sample

    def compile_data(tmp_dir, datasets, filename, datatypes_to_clean=None):
        del datatypes_to_clean
        filename = os.path.join(tmp_dir, filename)
        lang1_fname, lang2_fname = filename + ".lang1", filename + ".lang2"
        if tf.gfile.Exists(lang1_fname) and tf.gfile.Exists(lang2_fname):
            return filename
        with tf.gfile.GFile(lang1_fname, mode="w") as lang1_resfile:
            with tf.gfile.GFile(lang2_fname, mode="w") as lang2_resfile:
                for dataset in datasets:
                    lang1_filename, lang2_filename = dataset[1]
                    lang1_filepath = os.path.join(tmp_dir, lang1_filename)
                    lang2_filepath = os.path.join(tmp_dir, lang2_filename)
                    for example in text2text_txt_iterator(lang1_filepath, lang2_filepath):
                        line1res, line2res = example["inputs"], example["targets"]
                        if line1res and line2res:
                            lang1_resfile.write(line1res)
                            lang1_resfile.write("\n")
                            lang2_resfile.write(line2res)
                            lang2_resfile.write("\n")
        return filename

    return compile_data, text2text_txt_iterator, text2text_generate_encoded


def _t2t_stage_main(argv):
    stage, config_path, result_path = argv
    with open(config_path) as f:
        cfg = json.load(f)
    t_import = time.perf_counter()
    tf, generator_utils, text_encoder = _t2t_import()
    tf.logging.set_verbosity(tf.logging.INFO)  # as t2t-datagen's main does
    result = {"stage": stage, "import_seconds": time.perf_counter() - t_import}
    tmp_dir, data_dir = cfg["tmp_dir"], cfg["data_dir"]
    problem, num_shards = cfg["problem"], cfg["num_shards"]
    unshuffled = generator_utils.train_data_filenames(
        problem + generator_utils.UNSHUFFLED_SUFFIX, data_dir, num_shards)

    if stage == "import":
        pass

    elif stage in ("vocab_en", "vocab_zh"):
        side = "source" if stage == "vocab_en" else "target"
        name = cfg["t2t_names"][side]
        vocab_filename = cfg["vocab_filenames"][side]
        vocab_path = os.path.join(data_dir, vocab_filename)
        if os.path.exists(vocab_path):
            os.remove(vocab_path)  # otherwise get_or_generate_vocab_inner just loads it
        n_lines = [0]

        def counted(gen):
            for line in gen:
                n_lines[0] += 1
                yield line

        t0 = time.perf_counter()
        # == generator_utils.get_or_generate_vocab(data_dir, tmp_dir, vocab_filename,
        #        vocab_size, [[url, [name]]], file_byte_budget, max_subtoken_length),
        # with a line counter around the generator. "url" is the file in tmp_dir itself,
        # so maybe_download finds it already present and does nothing.
        lines = generator_utils.generate_lines_for_vocab(
            tmp_dir, [[os.path.join(tmp_dir, name), [name]]], cfg["file_byte_budget"])
        vocab = generator_utils.get_or_generate_vocab_inner(
            data_dir, vocab_filename, cfg["vocab_size"], counted(lines),
            cfg["max_subtoken_length"])
        result.update(seconds=time.perf_counter() - t0, vocab_size=vocab.vocab_size,
                      vocab_path=vocab_path, vocab_lines=n_lines[0])

    elif stage == "encode_write":
        imported = _t2t_import_translate()
        if imported:
            translate, text_problems, stubbed = imported
            compile_data = translate.compile_data
            txt_iter = text_problems.text2text_txt_iterator
            gen_encoded = text_problems.text2text_generate_encoded
            result["impl"] = "tensor2tensor (stubbed missing modules: %s)" % (
                ", ".join(stubbed) or "none")
        else:
            compile_data, txt_iter, gen_encoded = _reproduced_text2text_fns(tf, text_encoder)
            result["impl"] = "reproduced (translate/text_problems not importable)"
        t0 = time.perf_counter()
        # TranslateEnzhWmt32k.generate_encoded_samples(TRAIN): get_or_generate_vocab finds
        # the vocab files -> SubwordTextEncoder(path); compile_data; encode iterator.
        source_vocab = text_encoder.SubwordTextEncoder(
            os.path.join(data_dir, cfg["vocab_filenames"]["source"]))
        target_vocab = text_encoder.SubwordTextEncoder(
            os.path.join(data_dir, cfg["vocab_filenames"]["target"]))
        names = cfg["t2t_names"]
        dataset = [os.path.join(tmp_dir, names["source"]), [names["source"], names["target"]]]
        data_path = compile_data(tmp_dir, [dataset],
                                 "wmt_enzh_%sk_tok_train" % cfg["vocab_size"])
        t_compiled = time.perf_counter()
        written = [0]

        def counted(gen):
            for case in gen:
                written[0] += 1
                yield case

        samples = gen_encoded(txt_iter(data_path + ".lang1", data_path + ".lang2"),
                              source_vocab, target_vocab)
        # Text2TextProblem.generate_data, is_generate_per_split=True, TRAIN split only.
        generator_utils.generate_files(counted(samples), unshuffled)
        t1 = time.perf_counter()
        result.update(seconds=t1 - t0, compile_data_seconds=t_compiled - t0,
                      encode_write_seconds=t1 - t_compiled, pairs_written=written[0],
                      paths=unshuffled)

    elif stage == "shuffle":
        t0 = time.perf_counter()
        # Text2TextProblem.generate_data: shuffle_dataset(all_paths, extra_fn=_pack_fn())
        # (_pack_fn() is None: translate_enzh_wmt8k has no packed_length).
        generator_utils.shuffle_dataset(unshuffled, extra_fn=None)
        result.update(seconds=time.perf_counter() - t0,
                      paths=[p.replace(UNSHUFFLED_SUFFIX, "") for p in unshuffled])
    else:
        raise SystemExit("unknown T2T stage %r" % stage)

    with open(result_path, "w") as f:
        json.dump(result, f, indent=1)


# --------------------------------------------------------------------------------------
# TFRecord comparison (executed in a subprocess: needs tensorflow)
# --------------------------------------------------------------------------------------

def _compare_main(argv):
    spec_path, result_path = argv
    with open(spec_path) as f:
        spec = json.load(f)
    import array
    import tensorflow.compat.v1 as tf

    def digest(vals):
        return hashlib.blake2b(array.array("q", vals).tobytes(), digest_size=16).digest()

    def scan(paths):
        total = collections.Counter()
        per_shard, features = {}, collections.Counter()
        per_key = {"inputs": collections.Counter(), "targets": collections.Counter()}
        for path in paths:
            shard = collections.Counter()
            for rec in tf.io.tf_record_iterator(path):
                ex = tf.train.Example.FromString(rec)
                feat = ex.features.feature
                features.update(feat.keys())
                pair = []
                for key in ("inputs", "targets"):
                    d = digest(feat[key].int64_list.value) if key in feat else b""
                    per_key[key][d] += 1
                    pair.append(d)
                shard[pair[0] + pair[1]] += 1
            per_shard[os.path.basename(path)] = shard
            total.update(shard)
        return total, per_shard, features, per_key

    t2t, t2t_shards, t2t_feats, t2t_keys = scan(spec["t2t"])
    ours, our_shards, our_feats, our_keys = scan(spec["ours"])
    only_t2t, only_ours = t2t - ours, ours - t2t
    # Per-shard: T2T assigns record k to shard k % N (round-robin) and shuffles within each
    # shard only, so shard contents (not order) are deterministic.
    t2t_sets = sorted(tuple(sorted(c.items())) for c in t2t_shards.values())
    our_sets = sorted(tuple(sorted(c.items())) for c in our_shards.values())
    out = {
        "t2t_records": sum(t2t.values()), "ours_records": sum(ours.values()),
        "t2t_distinct": len(t2t), "ours_distinct": len(ours),
        "multiset_equal": t2t == ours,
        "only_in_t2t": sum(only_t2t.values()), "only_in_ours": sum(only_ours.values()),
        "t2t_shard_sizes": {k: sum(v.values()) for k, v in t2t_shards.items()},
        "ours_shard_sizes": {k: sum(v.values()) for k, v in our_shards.items()},
        "shard_contents_equal": t2t_sets == our_sets,
        "inputs_multiset_equal": t2t_keys["inputs"] == our_keys["inputs"],
        "targets_multiset_equal": t2t_keys["targets"] == our_keys["targets"],
        "inputs_only_in_t2t": sum((t2t_keys["inputs"] - our_keys["inputs"]).values()),
        "targets_only_in_t2t": sum((t2t_keys["targets"] - our_keys["targets"]).values()),
        "t2t_features": dict(t2t_feats), "ours_features": dict(our_feats),
    }
    with open(result_path, "w") as f:
        json.dump(out, f, indent=1)


# --------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------

def _prepare_input(args, input_dir):
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


def _child_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [REPO_ROOT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    return env


def _public(run):
    return {k: v for k, v in run.items() if not k.startswith("_")}


def run_t2t(args, work_dir, meta, fingerprint):
    t2t_dir = os.path.join(work_dir, "t2t")
    results_path = os.path.join(t2t_dir, "results.json")
    if args.reuse_t2t and os.path.exists(results_path):
        with open(results_path) as f:
            prev = json.load(f)
        if prev.get("fingerprint") == fingerprint and prev.get("ok"):
            print("[t2t] reusing previous T2T results from %s" % results_path)
            prev["reused"] = True
            return prev
        print("[t2t] --reuse_t2t: no matching successful run in %s; running T2T" % t2t_dir)
    if os.path.exists(t2t_dir):
        shutil.rmtree(t2t_dir)
    tmp_dir, data_dir, log_dir = (os.path.join(t2t_dir, d) for d in ("tmp", "data", "logs"))
    for d in (tmp_dir, data_dir, log_dir):
        os.makedirs(d)
    for side in ("source", "target"):  # T2T reads from (and writes compiled data to) tmp_dir
        f = meta["files"][side]
        os.symlink(os.path.realpath(f["path"]), os.path.join(tmp_dir, f["name"]))
    cfg = {
        "tmp_dir": tmp_dir, "data_dir": data_dir, "problem": args.problem,
        "num_shards": args.num_shards, "vocab_size": args.vocab_size,
        "max_subtoken_length": args.max_subtoken_length,
        "file_byte_budget": args.file_byte_budget,
        "t2t_names": {s: meta["files"][s]["name"] for s in ("source", "target")},
        "vocab_filenames": {s: _vocab_filename(args, s) for s in ("source", "target")},
    }
    cfg_path = os.path.join(t2t_dir, "config.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=1)

    out = {"fingerprint": fingerprint, "data_dir": data_dir, "tmp_dir": tmp_dir,
           "stages": {}, "ok": True}
    for stage in ("import",) + T2T_STAGES:
        result_path = os.path.join(t2t_dir, "stage_%s.json" % stage)
        cmd = [args.python, os.path.abspath(__file__), STAGE_MODE, stage, cfg_path, result_path]
        print("[t2t] %-12s running ..." % stage, end="", flush=True)
        run = run_measured(cmd, os.path.join(log_dir, stage), cwd=t2t_dir, env=_child_env(),
                           interval=args.sample_interval, pss_interval=args.pss_interval)
        rec = _public(run)
        if run["returncode"] == 0 and os.path.exists(result_path):
            with open(result_path) as f:
                rec.update(json.load(f))
            rec["ok"] = True
            print(" %8.2fs (process %.2fs), peak %7.1f MB" % (
                rec.get("seconds", 0.0), run["wall_seconds"], run["peak_mb"]))
        else:
            rec["ok"] = False
            out["ok"] = False
            print(" FAILED (rc=%s)\n%s" % (run["returncode"], _tail(run["stderr_path"])))
        out["stages"][stage] = rec
        if not rec["ok"]:
            break
    if out["ok"]:
        out["shards"] = sorted(glob.glob(os.path.join(data_dir, "%s-train-*" % args.problem)))
        out["leftover_files"] = sorted(
            os.path.basename(p) for p in glob.glob(os.path.join(data_dir, "*"))
            if UNSHUFFLED_SUFFIX in p or p.endswith(".incomplete"))
    with open(results_path, "w") as f:
        json.dump(out, f, indent=1)
    return out


def _vocab_filename(args, side):
    lang = args.source_lang if side == "source" else args.target_lang
    return "vocab.%s.%d.subwords.%s" % (args.problem, args.vocab_size, lang)


def load_t2t_reference(ref_dir, args):
    """The T2T result record (as run_t2t returns it) from a stored T2T run in ref_dir.

    ref_dir holds t2t-timings.json, vocab.{problem}.{vocab_size}.subwords.src (source) and
    .tgt (target), and t2t-shards.sha256. Stage "seconds" are the stored in-process times
    (vocab_en/vocab_zh = count_s + build_s of "src"/"tgt", encode_write = encode_write_s,
    shuffle = shuffle_s); stages have no peak of their own ("peak_mb": None): the record's
    "peak_mb" and "wall_seconds" are the whole run's. Raises ValueError if ref_dir does not
    hold a usable reference for the requested settings.
    """
    ref_dir = os.path.abspath(ref_dir)
    timings_path = os.path.join(ref_dir, T2T_REFERENCE_TIMINGS)
    try:
        with open(timings_path) as f:
            timings = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError("no usable T2T reference in %s: %s" % (ref_dir, e))
    settings = dict(timings.get("settings") or T2T_REFERENCE_SETTINGS)
    mismatched = {k: (getattr(args, k), v) for k, v in settings.items()
                  if hasattr(args, k) and getattr(args, k) != v}
    if mismatched:
        raise ValueError("the T2T reference in %s was made with other settings; "
                         "flag: (given, reference): %s" % (ref_dir, mismatched))
    try:
        sides = {side: timings[key] for side, key in T2T_REFERENCE_SIDES.items()}
        vocab_seconds = {side: float(v["count_s"]) + float(v["build_s"])
                         for side, v in sides.items()}
        encode_write_s, shuffle_s = float(timings["encode_write_s"]), float(timings["shuffle_s"])
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError("%s lacks a field or has a bad one: %r" % (timings_path, e))

    vocab_paths, warnings = {}, []
    for side, suffix in T2T_REFERENCE_SIDES.items():
        path = os.path.join(ref_dir, "vocab.%s.%d.subwords.%s" % (
            args.problem, args.vocab_size, suffix))
        if not os.path.exists(path):
            raise ValueError("T2T reference vocab file missing: %s" % path)
        vocab_paths[side] = path
        with open(path, "rb") as f:
            n = f.read().count(b"\n")
        if n != sides[side].get("vocab_size"):
            warnings.append("%s has %d lines, %s says vocab_size %s" % (
                os.path.basename(path), n, T2T_REFERENCE_TIMINGS, sides[side].get("vocab_size")))
    shards = {}
    shards_path = os.path.join(ref_dir, T2T_REFERENCE_SHARDS)
    if os.path.exists(shards_path):
        with open(shards_path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    shards[parts[1].lstrip("*")] = parts[0]

    def whole_run(keys, constant):
        for k in keys:
            if timings.get(k) is not None:
                return float(timings[k]), "%s:%s" % (T2T_REFERENCE_TIMINGS, k)
        return constant, "documented constant (/work/shared/data/README.md)"

    wall, wall_src = whole_run(("wall_s", "total_s"), T2T_REFERENCE_WALL_SECONDS)
    peak, peak_src = whole_run(("peak_rss_mb", "peak_mb"), T2T_REFERENCE_PEAK_MB)

    def vocab_stage(side):
        v = sides[side]
        return {"ok": True, "seconds": vocab_seconds[side], "count_seconds": v["count_s"],
                "build_seconds": v["build_s"], "vocab_size": v.get("vocab_size"),
                "vocab_lines": v.get("sampled_lines"),
                "distinct_tokens": v.get("distinct_tokens"), "vocab_path": vocab_paths[side],
                "peak_mb": None, "from_reference": True}

    stages = collections.OrderedDict([
        ("vocab_en", vocab_stage("source")),
        ("vocab_zh", vocab_stage("target")),
        ("encode_write", {"ok": True, "seconds": encode_write_s, "peak_mb": None,
                          "from_reference": True}),
        ("shuffle", {"ok": True, "seconds": shuffle_s, "peak_mb": None,
                     "from_reference": True}),
    ])
    return {
        "reference": True, "ok": True, "note": T2T_REFERENCE_NOTE,
        "times_are_upper_bounds": True,
        "reference_dir": ref_dir, "data_dir": ref_dir, "vocab_paths": vocab_paths,
        "timings": timings, "settings": settings,
        "wall_seconds": wall, "wall_seconds_source": wall_src,
        "peak_mb": peak, "peak_mb_source": peak_src, "peak_scope": "whole run, one process",
        "stages": stages, "shards": [], "shards_sha256": shards, "warnings": warnings,
    }


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
    run = run_measured(cmd, os.path.join(log_dir, "datagen"), cwd=REPO_ROOT, env=_child_env(),
                       interval=args.sample_interval, pss_interval=args.pss_interval)
    rec = _public(run)
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
            rec["stages"] = _our_stages(rec["summary"], run["_samples"])
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
            rec["error"], run["wall_seconds"], _tail(run["stderr_path"])))
    return rec


def _unix_time(value):
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


def _our_stages(summary, samples):
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
            start = _unix_time(info.get("start", info.get("started_at")))
            end = _unix_time(info.get("end", info.get("finished_at")))
            if start is not None and end is not None:
                # one sample interval of slack on each side
                window = [b for t, b, _ in samples if start - 0.2 <= t <= end + 0.2]
                if window:
                    rec["peak_mb"] = max(window) / 2.0 ** 20
                    rec["peak_source"] = "sampled"
        stages[name] = rec
    return stages


def compare_vocabs(args, t2t, ours):
    out = {}
    summary_vocab = (ours.get("summary") or {}).get("vocab") or {}
    for side in ("source", "target"):
        # a stored reference names its files .src/.tgt (see load_t2t_reference)
        t2t_path = (t2t.get("vocab_paths") or {}).get(side) or os.path.join(
            t2t["data_dir"], _vocab_filename(args, side))
        our_path = os.path.join(ours["out_dir"], _vocab_filename(args, side))
        reported = (summary_vocab.get(side) or {}).get("path")
        if not os.path.exists(our_path) and reported:
            our_path = reported if os.path.isabs(reported) else os.path.join(
                ours["out_dir"], reported)
        rec = {"t2t_path": t2t_path, "ours_path": our_path,
               "ours_reported": summary_vocab.get(side)}
        if not os.path.exists(t2t_path) or not os.path.exists(our_path):
            rec["result"] = "MISSING"
        else:
            with open(t2t_path, "rb") as f:
                a = f.read()
            with open(our_path, "rb") as f:
                b = f.read()
            rec["t2t_lines"], rec["ours_lines"] = a.count(b"\n"), b.count(b"\n")
            rec["result"] = "IDENTICAL" if a == b else "DIFFERENT"
            if a != b:
                la, lb = a.split(b"\n"), b.split(b"\n")
                for i, (x, y) in enumerate(zip(la, lb)):
                    if x != y:
                        rec["first_diff_line"] = i + 1
                        rec["first_diff"] = [x.decode("utf-8", "replace"),
                                             y.decode("utf-8", "replace")]
                        break
                else:
                    rec["first_diff_line"] = min(len(la), len(lb)) + 1
        out[side] = rec
    return out


def compare_records(args, work_dir, t2t, ours):
    our_paths = sorted(
        p for p in glob.glob(os.path.join(ours["out_dir"], "%s-train-*" % args.problem))
        if UNSHUFFLED_SUFFIX not in p and not p.endswith(".incomplete"))
    spec = {"t2t": t2t.get("shards", []), "ours": our_paths}
    spec_path = os.path.join(work_dir, "compare_spec.json")
    result_path = os.path.join(work_dir, "compare_result.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    t0 = time.perf_counter()
    proc = subprocess.run([args.python, os.path.abspath(__file__), COMPARE_MODE, spec_path,
                           result_path], env=_child_env(), capture_output=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.decode("utf-8", "replace")[-3000:]}
    with open(result_path) as f:
        res = json.load(f)
    res["seconds"] = time.perf_counter() - t0
    res["ours_shards"] = [os.path.basename(p) for p in our_paths]
    return res


def _fmt(x, spec="%.2f"):
    return "-" if x is None else spec % x


def _ratio(a, b):
    return a / b if (a is not None and b) else None


def build_table(t2t, ours):
    """Rows: T2T stages, our stages, then the mapped comparisons.

    With a stored T2T reference (t2t["reference"]), T2T rows are labelled "t2t-ref", carry
    "t2t_source": "reference", and the T2T peaks of the mapped and total rows are the whole
    reference run's ("t2t_peak_scope": "whole run"); the total row uses its wall time."""
    rows = []
    ts = t2t.get("stages", {}) if t2t else {}
    ref = bool(t2t and t2t.get("reference"))
    t2t_label = "t2t-ref" if ref else "t2t"
    for name in T2T_STAGES:
        if name in ts and ts[name].get("ok"):
            rows.append({"stage": "%s:%s" % (t2t_label, name),
                         "t2t_seconds": ts[name].get("seconds"),
                         "t2t_peak_mb": ts[name].get("peak_mb")})
    if ours and ours.get("ok"):
        for name, rec in ours["stages"].items():
            rows.append({"stage": "ours:" + name, "ours_seconds": rec["seconds"],
                         "ours_peak_mb": rec.get("peak_mb")})

    def t2t_sum(names, key):
        if not all(n in ts and ts[n].get("ok") for n in names):
            return None
        vals = [ts[n].get(key) for n in names]
        if key != "peak_mb":
            return sum(vals)
        if all(v is not None for v in vals):
            return max(vals)
        return t2t.get("peak_mb")  # no per-stage peaks (stored reference): whole run

    def ours_sum(prefix):
        if not (ours and ours.get("ok")):
            return None, None, None
        sel = [r for n, r in ours["stages"].items() if n.startswith(prefix)]
        if not sel:
            return None, None, None
        secs = sum(r["seconds"] for r in sel)
        peaks = [r.get("peak_mb") for r in sel]
        if all(p is not None for p in peaks):
            return secs, max(peaks), "stage"
        return secs, ours["peak_mb"], "whole run"

    mapped = [("vocab", ("vocab_en", "vocab_zh"), "vocab"),
              ("encode", ("encode_write", "shuffle"), "encode")]
    for label, t2t_names, prefix in mapped:
        o_secs, o_peak, peak_scope = ours_sum(prefix)
        row = {"stage": "%s (%s %s vs ours %s*)" % (
                   label, t2t_label, "+".join(t2t_names), prefix),
               "key": label,
               "t2t_seconds": t2t_sum(t2t_names, "seconds"), "ours_seconds": o_secs,
               "t2t_peak_mb": t2t_sum(t2t_names, "peak_mb"), "ours_peak_mb": o_peak,
               "ours_peak_scope": peak_scope}
        if ref and row["t2t_peak_mb"] is not None:
            row["t2t_peak_scope"] = "whole run"
        rows.append(row)
    # Whole run: sum of T2T stage process wall times (incl. interpreter + TF import per
    # stage, excluding the import-only baseline) vs our single process; for a stored
    # reference, that run's wall time and peak.
    total = {"stage": "total (process wall)", "key": "total"}
    if ref:
        total["t2t_seconds"], total["t2t_peak_mb"] = t2t["wall_seconds"], t2t["peak_mb"]
        total["t2t_peak_scope"] = "whole run"
    elif ts and all(n in ts and ts[n].get("ok") for n in T2T_STAGES):
        total["t2t_seconds"] = sum(ts[n]["wall_seconds"] for n in T2T_STAGES)
        total["t2t_peak_mb"] = max(ts[n]["peak_mb"] for n in T2T_STAGES)
    if ours and "wall_seconds" in ours and ours.get("ok"):
        total["ours_seconds"] = ours["wall_seconds"]
        total["ours_peak_mb"] = ours["peak_mb"]
    rows.append(total)
    for r in rows:
        if ref:
            r["t2t_source"] = "reference"
        r["time_ratio"] = _ratio(r.get("t2t_seconds"), r.get("ours_seconds"))
        r["peak_ratio"] = _ratio(r.get("t2t_peak_mb"), r.get("ours_peak_mb"))
    return rows


def print_table(rows):
    w = max(len(r["stage"]) for r in rows) + 2
    head = ("%-*s %10s %10s %8s %10s %10s %8s" % (
        w, "stage", "t2t s", "ours s", "ratio", "t2t MB", "ours MB", "ratio"))
    print(head)
    print("-" * len(head))
    ref = any(r.get("t2t_source") == "reference" for r in rows)
    for r in rows:
        scopes = [side for side in ("t2t", "ours") if r.get(side + "_peak_scope") == "whole run"]
        peak_note = (" (whole run)" if scopes == ["ours"] else
                     " (whole run: %s)" % ", ".join(scopes) if scopes else "")
        print("%-*s %10s %10s %8s %10s %10s %8s%s" % (
            w, r["stage"], _fmt(r.get("t2t_seconds")), _fmt(r.get("ours_seconds")),
            _fmt(r.get("time_ratio"), "%.2fx"), _fmt(r.get("t2t_peak_mb"), "%.1f"),
            _fmt(r.get("ours_peak_mb"), "%.1f"), _fmt(r.get("peak_ratio"), "%.2fx"),
            peak_note))
    print("ratio = T2T / ours (> 1: ours is faster / uses less memory). Peak MB = peak RSS "
          "of the process tree incl. children.")
    if ref:
        print("t2t-ref = STORED T2T REFERENCE RUN, not run here: its seconds are upper bounds "
              "(that run had other work beside it; the total is its whole wall time), its peak "
              "MB is the whole run's (one process), so ratios on time are upper bounds too.")


def check_targets(rows):
    by_key = {r.get("key"): r for r in rows if r.get("key")}
    out = {}
    for name, (desc, key, metric, minimum) in TARGETS.items():
        row = by_key.get(key, {})
        ratio = row.get("time_ratio" if metric == "seconds" else "peak_ratio")
        out[name] = {"description": desc, "ratio": ratio, "required": minimum,
                     "met": None if ratio is None else ratio >= minimum}
        if row.get("t2t_source") == "reference":
            out[name]["t2t_source"] = "reference"
            out[name]["note"] = ("T2T side from the stored reference run: "
                                 + ("time is an upper bound" if metric == "seconds" else
                                    "peak of the whole T2T run"))
    return out


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
        meta = _prepare_input(args, os.path.join(work_dir, "input"))
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
            pss += ["t2t:%s %s" % (n, _fmt(r.get("tree_peak_pss_mb"), "%.0f"))
                    for n, r in t2t["stages"].items()]
        if ours and "tree_peak_pss_mb" in ours:
            pss.append("ours (whole run, %d processes) %s" % (
                ours.get("max_processes", 0), _fmt(ours.get("tree_peak_pss_mb"), "%.0f")))
        if pss and args.pss_interval > 0:
            print("Peak PSS MB (shared library pages split between processes; "
                  "informational): " + ", ".join(pss))
        targets = check_targets(rows)
        results["targets"] = targets
        print()
        for name, t in targets.items():
            status = "n/a" if t["met"] is None else ("PASS" if t["met"] else "FAIL")
            print("[target] %-4s %-42s ratio %s (need >= %.0fx)%s" % (
                status, t["description"], _fmt(t["ratio"], "%.2fx"), t["required"],
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
    if len(sys.argv) > 1 and sys.argv[1] == STAGE_MODE:
        _t2t_stage_main(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == COMPARE_MODE:
        _compare_main(sys.argv[2:])
    else:
        sys.exit(main(sys.argv[1:]))
