"""The Tensor2Tensor side of bench_datagen.py: T2T 1.15.7's own datagen procedure for
translate_enzh_wmt8k, run stage by stage, each stage in a fresh subprocess of its own.

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

A stage per subprocess, so each stage's peak memory is measured on its own; an extra `import`
stage only imports TensorFlow and T2T, the baseline. The parent (`run_t2t`) runs this file as
`t2t_reproduction.py _t2t_stage STAGE CONFIG RESULT` (bench_datagen.py accepts the same hidden
sub-command). T2T's functions are called as T2T calls them; where T2T's translate and
text_problems modules cannot be imported, `_reproduced_text2text_fns` stands in for the few
functions used, and the stage's `impl` says which ran.
"""

import glob
import json
import os
import shutil
import sys
import time

from bench_runs import child_env, public, run_measured, tail

UNSHUFFLED_SUFFIX = "-unshuffled"   # generator_utils.UNSHUFFLED_SUFFIX
T2T_STAGES = ("vocab_en", "vocab_zh", "encode_write", "shuffle")
STAGE_MODE = "_t2t_stage"           # hidden sub-command: run one T2T stage in this process


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


def stage_main(argv):
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
        "vocab_filenames": {s: vocab_filename(args, s) for s in ("source", "target")},
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
        run = run_measured(cmd, os.path.join(log_dir, stage), cwd=t2t_dir, env=child_env(),
                           interval=args.sample_interval, pss_interval=args.pss_interval)
        rec = public(run)
        if run["returncode"] == 0 and os.path.exists(result_path):
            with open(result_path) as f:
                rec.update(json.load(f))
            rec["ok"] = True
            print(" %8.2fs (process %.2fs), peak %7.1f MB" % (
                rec.get("seconds", 0.0), run["wall_seconds"], run["peak_mb"]))
        else:
            rec["ok"] = False
            out["ok"] = False
            print(" FAILED (rc=%s)\n%s" % (run["returncode"], tail(run["stderr_path"])))
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


def vocab_filename(args, side):
    lang = args.source_lang if side == "source" else args.target_lang
    return "vocab.%s.%d.subwords.%s" % (args.problem, args.vocab_size, lang)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == STAGE_MODE:
        stage_main(sys.argv[2:])
    else:
        sys.exit("usage: t2t_reproduction.py %s STAGE CONFIG_JSON RESULT_JSON "
                 "(run by bench_datagen.py)" % STAGE_MODE)
