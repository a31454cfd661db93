"""Comparing bench_datagen.py's two sides: the vocab files byte for byte, the multisets of
(inputs, targets) records (in a subprocess, which imports TensorFlow to read the TFRecords:
`bench_compare.py _compare_records SPEC RESULT`), the table of seconds and peaks with the
T2T/ours ratios, and the targets.
"""

import collections
import glob
import hashlib
import json
import os
import subprocess
import sys
import time

from bench_runs import child_env
from t2t_reproduction import T2T_STAGES, UNSHUFFLED_SUFFIX, vocab_filename

COMPARE_MODE = "_compare_records"   # hidden sub-command: compare TFRecord multisets

TARGETS = {
    # name: (description, comparison row key, metric, minimum T2T/ours ratio)
    "vocab_time": ("vocab build >= 10x faster than T2T", "vocab", "seconds", 10.0),
    "vocab_memory": ("vocab build peak memory <= 1/4 of T2T", "vocab", "peak_mb", 4.0),
    "encode_time": ("encode+write >= 5x faster than T2T", "encode", "seconds", 5.0),
}


def compare_main(argv):
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


def compare_vocabs(args, t2t, ours):
    out = {}
    summary_vocab = (ours.get("summary") or {}).get("vocab") or {}
    for side in ("source", "target"):
        # a stored reference names its files .src/.tgt (see load_t2t_reference)
        t2t_path = (t2t.get("vocab_paths") or {}).get(side) or os.path.join(
            t2t["data_dir"], vocab_filename(args, side))
        our_path = os.path.join(ours["out_dir"], vocab_filename(args, side))
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
                           result_path], env=child_env(), capture_output=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.decode("utf-8", "replace")[-3000:]}
    with open(result_path) as f:
        res = json.load(f)
    res["seconds"] = time.perf_counter() - t0
    res["ours_shards"] = [os.path.basename(p) for p in our_paths]
    return res


def fmt(x, spec="%.2f"):
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
            w, r["stage"], fmt(r.get("t2t_seconds")), fmt(r.get("ours_seconds")),
            fmt(r.get("time_ratio"), "%.2fx"), fmt(r.get("t2t_peak_mb"), "%.1f"),
            fmt(r.get("ours_peak_mb"), "%.1f"), fmt(r.get("peak_ratio"), "%.2fx"),
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


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == COMPARE_MODE:
        compare_main(sys.argv[2:])
    else:
        sys.exit("usage: bench_compare.py %s SPEC_JSON RESULT_JSON (run by bench_datagen.py)"
                 % COMPARE_MODE)
