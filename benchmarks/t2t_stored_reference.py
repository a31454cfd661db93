"""The T2T side of bench_datagen.py from a stored run (--t2t_reference), in place of running
the T2T reproduction (t2t_reproduction.py), which takes over an hour on the whole corpus.

DATA_DIR/t2t-reference/ holds what T2T 1.15.7 made from the whole bench corpus with the
translate_enzh_wmt8k settings, in one process: t2t-timings.json, the two vocab files
(vocab.translate_enzh_wmt8k.8192.subwords.src = en, .tgt = zh) and t2t-shards.sha256.
`load_t2t_reference` turns it into the record `run_t2t` returns, marked as a reference: its
times are upper bounds (that run had other work beside it) and its peak is the whole run's.
"""

import collections
import json
import os

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
