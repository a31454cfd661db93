"""CPU time of the encode DoFn on one chunk, in this process, without a Beam pipeline.

The encode pass's cost per pair (read, strip, encode both sides, build the Example, hash,
frame, write the shard fragments) is what this measures; Beam's own per-pass costs are not
in it. Use it to compare two versions of the code on the same input (run it from each
checkout), e.g. on the first 100k bench pairs with the vocab files a bench run wrote:

    python benchmarks/encode_cpu.py --source W/input/train.en --target W/input/train.zh \\
        --source_vocab W/ours/out/vocab.translate_enzh_wmt8k.8192.subwords.en \\
        --target_vocab W/ours/out/vocab.translate_enzh_wmt8k.8192.subwords.zh

(`W` is a `bench_datagen.py --work_dir`). Prints CPU seconds, microseconds per pair, the CPU
of the encode step alone (`PairEncoder._entries`: a block's lines to their Example entries,
the line cache included) and the SHA-256 of the fragments written, which must not change
between versions. `--repo DIR` runs another checkout's code with this script
(`encode_ab.py` alternates two that way). `--resume`: the DoFn also checksums its fragments
and writes the chunk's manifest, as in a job (`transforms.encode.chunk_manifests`; ignored by
a checkout without them).
"""

import argparse
import hashlib
import inspect
import os
import sys
import tempfile
import time


def _repo_from_argv():
    """The checkout whose code runs: `--repo DIR`, else this script's own."""
    if "--repo" in sys.argv[1:-1]:
        return os.path.abspath(sys.argv[sys.argv.index("--repo") + 1])
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


sys.path.insert(0, _repo_from_argv())

from transforms.encode.encode_pairs import _EncodeChunkFn  # noqa: E402
from transforms.pairs import pair_encoding  # noqa: E402


def _time_encode_step():
    """Wraps `PairEncoder._entries` to add up its CPU seconds; returns the running total."""
    total = [0.0]
    entries = pair_encoding.PairEncoder._entries

    def timed(self, *args, **kwargs):
        start = time.process_time()
        try:
            return entries(self, *args, **kwargs)
        finally:
            total[0] += time.process_time() - start
    pair_encoding.PairEncoder._entries = timed
    return total


def _config(vocab_type):
    try:
        from pipeline.driver.options import default_config
    except ImportError:  # a checkout from before the typed config took a settings dict
        return {"vocab_type": vocab_type}
    return default_config(vocab_type=vocab_type)


def _vocabulary(vocab_type):
    """The DoFn's first argument where it takes one: the kind's VocabularyLoader (now) or
    Vocabulary class (a checkout between); else [] (older: it found the kind itself)."""
    parameters = inspect.signature(_EncodeChunkFn).parameters
    if "loader" in parameters:
        return [_config(vocab_type).vocab.loader]
    if "vocabulary" not in parameters:
        return []
    from transforms.vocab_kinds import vocab_kind  # a checkout from before transforms.codecs.kinds
    return [vocab_kind(vocab_type).vocabulary]


def _line_count(path):
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", required=True, help="source text, one sentence per line")
    parser.add_argument("--target", required=True, help="line-aligned target text")
    parser.add_argument("--source_vocab", required=True)
    parser.add_argument("--target_vocab", required=True)
    parser.add_argument("--vocab_type", default="subword")
    parser.add_argument("--num_shards", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=2, help="runs; the fastest is printed")
    parser.add_argument("--resume", action="store_true",
                        help="write chunk manifests, as a job does")
    parser.add_argument("--repo", help="the checkout whose code runs (default: this one)")
    args = parser.parse_args(argv)
    step = _time_encode_step()

    lines = min(_line_count(args.source), _line_count(args.target))
    chunk = {"ds": {"split": "train", "index": 0, "name": "bench"}, "source": args.source,
             "target": args.target, "first_line": 0, "num_lines": lines,
             "source_offset": 0, "target_offset": 0}
    best = best_step = None
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as fragments, \
                tempfile.TemporaryDirectory() as manifests:
            extra = {}
            if args.resume and "resume" in inspect.signature(_EncodeChunkFn).parameters:
                from transforms.encode.chunk_manifests import Resume
                extra["resume"] = Resume("bench", manifests, "/nowhere", False)
            fn = _EncodeChunkFn(*_vocabulary(args.vocab_type), args.source_vocab,
                                args.target_vocab, 1, {"train": args.num_shards}, fragments,
                                _config(args.vocab_type), **extra)
            fn.setup()  # a new DoFn each run: its line cache starts empty
            step[0] = 0.0
            start = time.process_time()
            # one bundle of one chunk: the fragment group is made at the bundle's start and
            # written at its end (older checkouts' DoFns have no bundle methods)
            getattr(fn, "start_bundle", lambda: None)()
            for _ in fn.process(chunk):
                pass
            getattr(fn, "finish_bundle", lambda: None)()
            seconds = time.process_time() - start
            digest = hashlib.sha256()
            for name in sorted(os.listdir(fragments)):
                with open(os.path.join(fragments, name), "rb") as f:
                    digest.update(name.encode() + b"\0" + f.read())
        best = seconds if best is None else min(best, seconds)
        best_step = step[0] if best_step is None else min(best_step, step[0])
    print("pairs %d  cpu %.2f s  %.1f us/pair  encode step %.2f s  fragments sha256 %s"
          % (lines, best, best / max(lines, 1) * 1e6, best_step, digest.hexdigest()[:16]))


if __name__ == "__main__":
    main()
