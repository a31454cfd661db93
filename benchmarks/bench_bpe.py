#!/usr/bin/env python
"""Benchmark: our pure-Python GPT-2 byte-level BPE (transforms/codecs/byte_bpe.py) against
transformers' pure-Python GPT2Tokenizer, tiktoken and Hugging Face tokenizers.

1. Encoding (one core). The GPT-2 vocabulary from tests/data/gpt2 (local files, nothing is
   downloaded) encodes the first --lines lines (default 20,000) of each bench file, one
   `encode(line)` call per line, each tokenizer freshly built (empty caches) before each timed
   run. Throughput is UTF-8 input MB (1e6 bytes) per second, best of --repeats runs
   (transformers: one run, it is slow). Every tokenizer's ids are checked to equal ours.

   - ours:         ByteBPE.from_openai_files(encoder.json, vocab.bpe).encode(line)
   - transformers: GPT2Tokenizer(encoder.json, vocab.bpe).encode(line)  (pure Python; needs
                   `pip install "transformers<5"`, v5 dropped the Python tokenizers; the column
                   is left out when it is not installed)
   - tiktoken:     tiktoken.Encoding built from the same files (Rust)
   - tokenizers:   ByteLevelBPETokenizer(encoder.json, vocab.bpe) (Rust), RAYON_NUM_THREADS=1

2. Learning (vocab --vocab_size 8192, --min_frequency 2, special token <|endoftext|>), per
   language, on the first --train_lines lines (default 0 = the whole file), each side in its own
   fresh subprocess whose peak RSS (over its process tree) is sampled with psutil every
   --sample_interval s (benchmarks/process_memory.py):

   - ours:       pretokenize + count the lines (Counter), then learn_byte_bpe(counts, ...)
   - tokenizers: ByteLevelBPETokenizer().train_from_iterator(lines, ...) with
                 RAYON_NUM_THREADS=--hf_threads (default 1: one core, like ours)

   Both processes hold the same list of lines; "base MB" is the RSS right after reading them.
   The files both write are compared (vocab.json, merges.txt). --baseline DIR adds a third
   side, "ours" from another checkout (an A/B of two versions); --train_rounds N runs the
   sides in turn N times and keeps each side's median run (its peak: the largest).

The bench files are DATA_DIR/train.en.xz and DATA_DIR/train.zh.xz (--data_dir), or --files.

Usage (from the repository root, with the project venv):

  .venv/bin/python benchmarks/bench_bpe.py                          # defaults (~3 min)
  .venv/bin/python benchmarks/bench_bpe.py --lines 5000 --train_lines 50000   # quick
  .venv/bin/python benchmarks/bench_bpe.py --skip_train --json_out /tmp/bpe.json
"""

import argparse
import collections
import json
import lzma
import os
import subprocess
import sys
import tempfile
import time

import psutil  # requirements-test.txt; not a runtime dependency of the job

from process_memory import TreeSampler

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

DEFAULT_DATA_DIR = "/work/shared/data/bench/enzh-wmt21-24"   # --data_dir
DATA_FILES = ("train.en.xz", "train.zh.xz")
GPT2_DIR = os.path.join(REPO_ROOT, "tests", "data", "gpt2")
ENCODER_JSON = os.path.join(GPT2_DIR, "encoder.json")
VOCAB_BPE = os.path.join(GPT2_DIR, "vocab.bpe")
ENDOFTEXT = "<|endoftext|>"
TRAIN_MODE = "_train"  # hidden sub-command: one training run in this process


def read_lines(path, limit=0):
    """Lines of a plain or .xz UTF-8 file, split on '\\n' only, without the '\\n'."""
    opener = lzma.open if path.endswith(".xz") else open
    lines = []
    with opener(path, "rb") as f:
        for raw in f:
            lines.append(raw.decode("utf-8").rstrip("\n"))
            if limit and len(lines) >= limit:
                break
    return lines


def rss_mb():
    """This process's current RSS in MB."""
    return psutil.Process().memory_info().rss / 2.0 ** 20


# --------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------


def build_encoders():
    """name -> factory of a fresh `encode(line) -> list[int]`."""
    from transforms.codecs.byte_bpe import PRETOKENIZE_PATTERN, ByteBPE

    factories = collections.OrderedDict()

    def ours():
        return ByteBPE.from_openai_files(ENCODER_JSON, VOCAB_BPE).encode

    factories["ours"] = ours
    try:
        from transformers import GPT2Tokenizer

        def hf_python():
            tok = GPT2Tokenizer(ENCODER_JSON, VOCAB_BPE, model_max_length=10**9)
            return tok.encode

        factories["transformers"] = hf_python
    except ImportError:
        print("transformers (with GPT2Tokenizer) not installed: column skipped", file=sys.stderr)
    try:
        import tiktoken
        from tiktoken.load import data_gym_to_mergeable_bpe_ranks

        os.environ["DATA_GYM_CACHE_DIR"] = ""  # read the local paths directly, no cache
        ranks = data_gym_to_mergeable_bpe_ranks(VOCAB_BPE, ENCODER_JSON)

        def tik():
            enc = tiktoken.Encoding(
                name="gpt2_local",
                pat_str=PRETOKENIZE_PATTERN,
                mergeable_ranks=ranks,
                special_tokens={ENDOFTEXT: 50256},
            )
            return lambda text: enc.encode(text, allowed_special="all")

        factories["tiktoken"] = tik
    except ImportError:
        print("tiktoken not installed: column skipped", file=sys.stderr)
    try:
        from tokenizers import ByteLevelBPETokenizer

        def hf_rust():
            tok = ByteLevelBPETokenizer(ENCODER_JSON, VOCAB_BPE)
            tok.add_special_tokens([ENDOFTEXT])
            return lambda text: tok.encode(text).ids

        factories["tokenizers"] = hf_rust
    except ImportError:
        print("tokenizers not installed: column skipped", file=sys.stderr)
    return factories


def bench_encode(files, n_lines, repeats):
    factories = build_encoders()
    results = []
    for path in files:
        lines = read_lines(path, n_lines)
        n_bytes = sum(len(line.encode("utf-8")) for line in lines)
        row = {"file": os.path.basename(path), "lines": len(lines), "mb": n_bytes / 1e6}
        reference = None
        for name, factory in factories.items():
            best = None
            runs = 1 if name == "transformers" else repeats
            for _ in range(runs):
                encode = factory()
                start = time.perf_counter()
                ids = [encode(line) for line in lines]
                seconds = time.perf_counter() - start
                best = seconds if best is None else min(best, seconds)
            if reference is None:
                reference = ids
            row[name] = {
                "seconds": best,
                "mb_per_s": n_bytes / 1e6 / best,
                "ids_identical": ids == reference,
                "tokens": sum(map(len, ids)),
            }
            print(
                "  encode %-10s %-13s %7.2f s  %7.2f MB/s  ids identical: %s"
                % (row["file"], name, best, n_bytes / 1e6 / best, ids == reference),
                file=sys.stderr,
            )
        results.append(row)
    return results


# --------------------------------------------------------------------------------------
# Learning
# --------------------------------------------------------------------------------------


def train_in_this_process(side, sample, out_dir, vocab_size, min_frequency):
    lines = read_lines(sample)
    base = rss_mb()
    record = {"side": side, "lines": len(lines), "base_mb": base}
    if side == "ours":
        from transforms.codecs.byte_bpe import pretokenize
        from transforms.codecs.byte_bpe_learner import learn_byte_bpe

        start = time.perf_counter()
        counts = collections.Counter()
        for line in lines:
            counts.update(pretokenize(line))
        record["count_seconds"] = time.perf_counter() - start
        record["distinct_pretokens"] = len(counts)
        start = time.perf_counter()
        bpe = learn_byte_bpe(counts, vocab_size, (ENDOFTEXT,), min_frequency)
        record["learn_seconds"] = time.perf_counter() - start
        record["seconds"] = record["count_seconds"] + record["learn_seconds"]
        bpe.save(out_dir)
        record["vocab_size"] = bpe.vocab_size
        record["merges"] = len(bpe.merges)
    else:
        from tokenizers import ByteLevelBPETokenizer

        start = time.perf_counter()
        tok = ByteLevelBPETokenizer()
        tok.train_from_iterator(
            lines,
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=[ENDOFTEXT],
            show_progress=False,
        )
        record["seconds"] = time.perf_counter() - start
        tok.save_model(out_dir)
        record["vocab_size"] = tok.get_vocab_size()
    print(json.dumps(record))


def run_training(side, sample, out_dir, args):
    """One learning run in a fresh subprocess; side "baseline" is "ours" from the --baseline
    checkout (its own bench_bpe.py and code)."""
    root = os.path.abspath(args.baseline) if side == "baseline" else REPO_ROOT
    cmd = [
        sys.executable, os.path.join(root, "benchmarks", "bench_bpe.py"), TRAIN_MODE,
        "ours" if side == "baseline" else side, sample, out_dir,
        str(args.vocab_size), str(args.min_frequency),
    ]
    env = dict(os.environ, RAYON_NUM_THREADS=str(args.hf_threads), TOKENIZERS_PARALLELISM="true")
    if side == "baseline":
        env["PYTHONPATH"] = root
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env, cwd=root)
    # The peak is sampled from outside: the child's own rusage high-water mark would also
    # count the parent's RSS at fork time, which Linux carries over exec.
    sampler = TreeSampler(proc.pid, args.sample_interval, 0)
    sampler.start()
    try:
        out = proc.stdout.read()
        returncode = proc.wait()
    finally:
        sampler.stop()
    if returncode:
        raise RuntimeError("%s training failed (exit %d)" % (side, returncode))
    record = json.loads(out.decode().strip().splitlines()[-1])
    record["wall_seconds"] = time.perf_counter() - start
    record["load_before"] = load
    record["peak_mb"] = sampler.peak_bytes / 2.0 ** 20
    record["memory_sampler"] = "psutil %s, every %g s" % (psutil.__version__, args.sample_interval)
    return record


def files_equal(dir_a, dir_b, name):
    with open(os.path.join(dir_a, name), "rb") as a, open(os.path.join(dir_b, name), "rb") as b:
        return a.read() == b.read()


def bench_train(files, n_lines, args, work_dir):
    results = []
    for path in files:
        name = os.path.basename(path)
        lines = read_lines(path, n_lines)
        sample = os.path.join(work_dir, name.replace(".xz", "") + ".sample")
        with open(sample, "w", encoding="utf-8", newline="") as f:
            f.write("".join(line + "\n" for line in lines))
        row = {"file": name, "lines": len(lines), "mb": sum(len(x.encode()) for x in lines) / 1e6}
        del lines
        sides = ("baseline", "ours", "tokenizers") if args.baseline else ("ours", "tokenizers")
        runs = {side: [] for side in sides}
        for _ in range(args.train_rounds):  # the sides in turn, so load drifts hit all alike
            for side in sides:
                out_dir = os.path.join(work_dir, "%s.%s" % (name, side))
                os.makedirs(out_dir, exist_ok=True)
                runs[side].append(run_training(side, sample, out_dir, args))
                print("  train  %-10s %-11s %s" % (name, side, runs[side][-1]), file=sys.stderr)
        for side in sides:
            row[side] = median_record(runs[side])
        b = os.path.join(work_dir, "%s.tokenizers" % name)
        row["identical"] = {
            "%s %s" % (side, n): files_equal(os.path.join(work_dir, "%s.%s" % (name, side)), b, n)
            for side in sides[:-1] for n in ("vocab.json", "merges.txt")
        }
        results.append(row)
    return results


def median_record(records):
    """The run with the median time (the lower middle one), its peak replaced by the largest,
    all times kept."""
    chosen = dict(sorted(records, key=lambda r: r["seconds"])[(len(records) - 1) // 2])
    chosen["peak_mb"] = max(r["peak_mb"] for r in records)
    chosen["all_seconds"] = [r["seconds"] for r in records]
    chosen["all_loads"] = [r["load_before"] for r in records]
    return chosen


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------


def table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    fmt = "  ".join("%%%ds" % w for w in widths)
    out = [fmt % tuple(header)]
    out += [fmt % tuple(r) for r in rows]
    return "\n".join(out)


def report(encode_rows, train_rows, args):
    parts = []
    if encode_rows:
        names = [n for n in ("ours", "transformers", "tiktoken", "tokenizers") if n in encode_rows[0]]
        header = ["file", "lines", "MB"] + ["%s MB/s" % n for n in names]
        header += ["ours/%s" % n for n in names[1:]] + ["ids identical"]
        rows = []
        for r in encode_rows:
            ours = r["ours"]["mb_per_s"]
            row = [r["file"], r["lines"], "%.2f" % r["mb"]]
            row += ["%.2f" % r[n]["mb_per_s"] for n in names]
            row += ["%.2fx" % (ours / r[n]["mb_per_s"]) for n in names[1:]]
            row += ["yes" if all(r[n]["ids_identical"] for n in names) else "NO"]
            rows.append(row)
        parts.append("Encoding, GPT-2 vocab, one core, one encode() per line\n" + table(header, rows))
    if train_rows:
        header = [
            "file", "lines", "MB", "pre-tokens", "ours count s", "ours learn s", "ours total s",
            "tokenizers s", "time ours/tok", "base MB", "ours peak MB", "tok peak MB",
            "RSS ours/tok", "files identical",
        ]
        if args.baseline:
            header[7:7] = ["baseline total s", "baseline peak MB"]
        rows = []
        for r in train_rows:
            o, t = r["ours"], r["tokenizers"]
            rows.append([
                r["file"], r["lines"], "%.1f" % r["mb"], o["distinct_pretokens"],
                "%.1f" % o["count_seconds"], "%.1f" % o["learn_seconds"], "%.1f" % o["seconds"],
                "%.1f" % t["seconds"], "%.2fx" % (o["seconds"] / t["seconds"]),
                "%.0f" % o["base_mb"], "%.0f" % o["peak_mb"], "%.0f" % t["peak_mb"], "%.2fx" % (o["peak_mb"] / t["peak_mb"]),
                "yes" if all(r["identical"].values()) else "no (%s)" % r["identical"],
            ])
            if args.baseline:
                rows[-1][7:7] = ["%.1f" % r["baseline"]["seconds"], "%.0f" % r["baseline"]["peak_mb"]]
        parts.append(
            "Learning, vocab %d, min_frequency %d, tokenizers with RAYON_NUM_THREADS=%d; peak MB\n"
            "is each process tree's peak RSS (psutil, every %g s) and includes the lines it holds\n"
            "(base MB: RSS after reading)\n"
            % (args.vocab_size, args.min_frequency, args.hf_threads, args.sample_interval)
            + table(header, rows)
        )
    return "\n\n".join(parts)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == TRAIN_MODE:
        side, sample, out_dir, vocab_size, min_frequency = argv[1:]
        return train_in_this_process(side, sample, out_dir, int(vocab_size), int(min_frequency))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data_dir", default=DEFAULT_DATA_DIR,
                        help="directory holding %s (default %%(default)s)" % " and ".join(DATA_FILES))
    parser.add_argument("--files", nargs="+", default=None,
                        help="plain or .xz text files (default: the two files in --data_dir)")
    parser.add_argument("--lines", type=int, default=20000, help="lines per file for encoding")
    parser.add_argument("--train_lines", type=int, default=0, help="lines per file for learning (0 = all)")
    parser.add_argument("--repeats", type=int, default=3, help="encoding runs per tokenizer (best kept)")
    parser.add_argument("--vocab_size", type=int, default=8192)
    parser.add_argument("--min_frequency", type=int, default=2)
    parser.add_argument("--hf_threads", type=int, default=1, help="RAYON_NUM_THREADS for tokenizers' trainer")
    parser.add_argument("--skip_encode", action="store_true")
    parser.add_argument("--skip_train", action="store_true")
    parser.add_argument("--work_dir", help="keep samples and learned files here (default: a temp dir)")
    parser.add_argument("--json_out", help="write all measurements to this JSON file")
    parser.add_argument("--baseline", metavar="DIR",
                        help="also learn with the code of this checkout (e.g. a git worktree of "
                             "an older commit), as a third side")
    parser.add_argument("--train_rounds", type=int, default=1,
                        help="learning runs per side, the sides in turn; the median run is kept")
    parser.add_argument("--sample_interval", type=float, default=0.05,
                        help="seconds between memory samples of a learning subprocess")
    args = parser.parse_args(argv)
    if args.files is None:
        args.files = [os.path.join(args.data_dir, name) for name in DATA_FILES]
    missing = [path for path in args.files if not os.path.exists(path)]
    if missing:
        parser.error("no such file: %s (see --data_dir, --files)" % ", ".join(missing))
    os.environ["RAYON_NUM_THREADS"] = "1"  # encoding is measured on one core

    encode_rows = [] if args.skip_encode else bench_encode(args.files, args.lines, args.repeats)
    train_rows = []
    if not args.skip_train:
        if args.work_dir:
            os.makedirs(args.work_dir, exist_ok=True)
            train_rows = bench_train(args.files, args.train_lines, args, args.work_dir)
        else:
            with tempfile.TemporaryDirectory(prefix="bench_bpe_") as work_dir:
                train_rows = bench_train(args.files, args.train_lines, args, work_dir)
    text = report(encode_rows, train_rows, args)
    print(text)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"args": vars(args), "encode": encode_rows, "train": train_rows, "table": text}, f, indent=1)
    ok = all(r["ours"]["ids_identical"] and all(r[n]["ids_identical"] for n in r if isinstance(r[n], dict))
             for r in encode_rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
