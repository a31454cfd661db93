"""Cleaning benchmark: OpusFilter 3.3.1 alone against this job's cleaning, same input, same run.

OpusFilter runs as its users run it: one `opusfilter` command with a `remove_duplicates`
step and a `filter` step on its output, from its own virtualenv (created on first use as the
parity tests create it, tests/opusfilter_reference.py). Ours runs as
`--mode stage`: the cleaning stage alone (`transforms.clean.clean_pairs.CleanPairs` on the scan's
chunks, a Beam pipeline on the DirectRunner's worker processes), or `--mode job`: the whole
datagen job with `--filters` and `--dedup pairs` and, for the cost of cleaning, the same job
without them. Each command is timed with its whole process tree's peak RSS sampled
(benchmarks/process_memory.py); the kept-pair counts of both sides are printed, and must be
equal. The typical config: length, length ratio, langid, exact dedup of pairs.

`--id_method cld2,fasttext` runs the comparison once per method, language ID then being
OpusFilter's `LanguageIDFilter` with that `id_method` on both sides (fasttext: the model of
`--fasttext_model`, or one trained here on the corpus's first 20,000 pairs, since nothing is
downloaded; cld2 and fasttext need the extras, installed into OpusFilter's venv as the
parity tests do), and prints each method's OpusFilter and ours side by side with CPU seconds
(user + system of the whole process tree, less spoiled by a loaded machine than wall time).

    .venv/bin/python benchmarks/bench_cleaning.py --lines 20000           # a slice
    .venv/bin/python benchmarks/bench_cleaning.py --mode job              # the whole corpus
    .venv/bin/python benchmarks/bench_cleaning.py --lines 100000 --id_method cld2,fasttext

`--dedup normalized|minhash` and `--decontaminate FILES` (docs/cleaning.md) have no OpusFilter
equivalent: with them the OpusFilter run is left out, and `--no_filters` measures the dedup
alone (the langid filter otherwise takes most of the time). Rows report CPU seconds (the
process tree's, reaped) beside wall time: on a shared machine they move less with the load.

    .venv/bin/python benchmarks/bench_cleaning.py --lines 20000 --dedup minhash --no_filters
"""

import argparse
import json
import lzma
import os
import shlex
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, os.path.join(REPO_ROOT, "tests"), REPO_ROOT]

from bench_runs import DEFAULT_RUNNER_ARGS, child_env  # noqa: E402
from process_tree import run_tree  # noqa: E402

DEFAULT_DATA_DIR = "/work/shared/data/bench/enzh-wmt21-24"  # --data_dir

TYPICAL = [
    {"LengthFilter": {"unit": ["word", "char"], "min_length": 1, "max_length": [150, 300]}},
    {"LengthRatioFilter": {"unit": ["word", "char"], "threshold": 4}},
    {"LangidFilter": {"languages": ["en", "zh"]}},
]


def typical(id_method, model_path=None):
    """TYPICAL with its language filter by `id_method` (langid: TYPICAL itself)."""
    if id_method == "langid":
        return TYPICAL
    params = {"languages": ["en", "zh"], "id_method": id_method}
    if id_method == "fasttext":
        params["fasttext_model_path"] = model_path
    return TYPICAL[:2] + [{"LanguageIDFilter": params}]


def train_fasttext(work_dir, source, target, lines=20000):
    """A small supervised fastText language model (`__label__en`, `__label__zh`) on the
    corpus's first `lines` pairs: the bench needs one and downloads nothing."""
    import fasttext
    train = os.path.join(work_dir, "lid.train")
    with open(source, encoding="utf-8") as s, open(target, encoding="utf-8") as t, \
            open(train, "w", encoding="utf-8") as out:
        for _, en, zh in zip(range(lines), s, t):
            out.write("__label__en %s\n__label__zh %s\n" % (en.strip(), zh.strip()))
    model = fasttext.train_supervised(train, dim=16, epoch=3, minn=1, maxn=3, verbose=0)
    path = os.path.join(work_dir, "lid.bin")
    model.save_model(path)
    return path


def run_measured(cmd, log_prefix, cwd=None, env=None):
    """`cmd` measured over its whole tree (`process_tree.run_tree`: the job's worker
    processes are forked from a fork server, which the command's own rusage misses), with
    the keys the rows read: wall_seconds, cpu_seconds, tree_peak_rss_mb,
    max_single_process_rss_mb, peak_mb, tree_peak_pss_mb (None), returncode, stdout_path,
    stderr_path."""
    out_path, err_path = log_prefix + ".stdout", log_prefix + ".stderr"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        run = run_tree(cmd, cwd=cwd, env=env, stdout=out, stderr=err)
    return {"returncode": run["returncode"], "wall_seconds": run["wall_s"],
            "cpu_seconds": run["cpu_s"], "tree_peak_rss_mb": run["peak_sum_mb"],
            "max_single_process_rss_mb": run["peak_largest_mb"],
            "peak_mb": max(run["peak_sum_mb"], run["peak_largest_mb"]),
            "tree_peak_pss_mb": None, "stdout_path": out_path, "stderr_path": err_path}


def prepare_input(args, work_dir):
    """(source, target): the corpus (or its first --lines pairs) as plain files, which both
    sides read (a compressed file cannot be split: the job would read it with one worker)."""
    paths = [os.path.join(args.data_dir, "train.%s.xz" % side) for side in ("en", "zh")]
    out = []
    for path in paths:
        plain = os.path.join(work_dir, os.path.basename(path)[:-3])
        with lzma.open(path, "rb") as f, open(plain, "wb") as g:
            if args.lines:
                for _, line in zip(range(args.lines), f):
                    g.write(line)
            else:
                shutil.copyfileobj(f, g, 1 << 22)
        out.append(plain)
    return out


def count_lines(path):
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rb") as f:
        return sum(1 for _ in f)


def run_opusfilter(args, work_dir, source, target, filters=TYPICAL, name="opusfilter"):
    from opusfilter_reference import FASTTEXT_NUMPY2, install_opusfilter, opusfilter_python
    opus_dir = os.path.join(work_dir, name)
    os.makedirs(opus_dir)
    import yaml
    config = os.path.join(opus_dir, "config.yaml")
    dedup = [os.path.join(opus_dir, "dedup.%s" % s) for s in ("en", "zh")]
    clean = [os.path.join(opus_dir, "clean.%s" % s) for s in ("en", "zh")]
    with open(config, "w") as f:
        yaml.safe_dump({"common": {"output_directory": opus_dir}, "steps": [
            {"type": "remove_duplicates", "parameters": {"inputs": [source, target],
                                                         "outputs": dedup}},
            {"type": "filter", "parameters": {"inputs": dedup, "outputs": clean,
                                              "filters": filters}}]}, f)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)
    load = os.getloadavg()[0]
    command = [install_opusfilter(), config]
    if filters is not TYPICAL:  # fastText's one-line predict made to run on NumPy 2
        command = [opusfilter_python(), "-c", FASTTEXT_NUMPY2] + command
    run = run_measured(command, os.path.join(opus_dir, "log"), env=env)
    run["load_before"] = load
    assert run["returncode"] == 0, open(run["stderr_path"]).read()[-2000:]
    return run, count_lines(dedup[0]), count_lines(clean[0])


def _stage_main(argv):
    """--_stage config.json: the cleaning stage alone; prints {"dropped": n, "reasons"}.

    The pipeline runs as the job runs its cleaning pass (`PassEngine`: DirectRunner's passes
    on the job's worker pool, its fork server started before Beam's import), so the stage's
    start-up is what a user's job pays, not Beam's stock DirectRunner's."""
    spec = json.load(open(argv[0]))
    from pipeline.runtime import local_worker_pool
    local_worker_pool.start_early(shlex.split(spec["runner_args"]))
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from transforms.clean.clean_pairs import CleanPairs, with_chunk_facts
    from transforms.cleaning.config import parse_cleaning_config
    from transforms.encode.encode_pairs import plan_chunks
    from transforms.formats.text_lines import scan_stream
    from transforms.storage import file_io
    from transforms.reporting.json_result import WriteJsonResult
    from pipeline.runtime.pass_engine import PassEngine
    import yaml
    cleaning = parse_cleaning_config(
        yaml.safe_dump({"filters": [] if spec["no_filters"] else spec.get("filters", TYPICAL)}),
        "typical", spec["dedup"], decontaminate=tuple(spec["decontaminate"]))
    facts = []
    for path in (spec["source"], spec["target"]):
        with file_io.open_text_source(path) as f:
            size, lines, checkpoints, _ = scan_stream(f, 10000)  # the job's --encode_chunk_lines
        if file_io.is_compressed(path):
            checkpoints = checkpoints[:1]
        facts.append({"bytes": size, "lines": lines, "checkpoints": checkpoints})
    ds = {"split": "train", "index": 0, "name": "train", "format": "lines",
          "source": spec["source"], "target": spec["target"]}
    chunks = [with_chunk_facts(c, *facts) for c in plan_chunks(ds, spec["source"],
                                                                spec["target"], *facts)]
    result = os.path.join(spec["work_dir"], "cleaning.json")
    engine = PassEngine(PipelineOptions(shlex.split(spec["runner_args"])))
    runner, options = engine.runner_and_options()
    try:
        with beam.Pipeline(runner=runner, options=options) as p:
            out = (p | beam.Create(chunks, reshuffle=False)
                   | CleanPairs(cleaning, "error", {"train/0": (
                       ds, facts[0]["lines"], spec["source"], spec["target"])},
                                spec["work_dir"]))
            _ = {"cleaned": out} | WriteJsonResult(result)
    finally:
        engine.close()
    reports = json.load(open(result)).get("cleaned", [])
    print(json.dumps({"pairs": facts[0]["lines"], "dropped": sum(r["dropped"] for r in reports),
                      "reasons": [r["reasons"] for r in reports]}))


def run_stage(args, work_dir, source, target, filters=TYPICAL, name="stage"):
    stage_dir = os.path.join(work_dir, name)
    os.makedirs(stage_dir)
    spec = os.path.join(stage_dir, "spec.json")
    with open(spec, "w") as f:
        json.dump({"source": source, "target": target, "work_dir": stage_dir,
                   "runner_args": args.runner_args, "filters": filters, "dedup": args.dedup,
                   "no_filters": args.no_filters,
                   "decontaminate": [os.path.abspath(t) for t in args.decontaminate]}, f)
    load = os.getloadavg()[0]
    run = run_measured([sys.executable, os.path.abspath(__file__), "--_stage", spec],
                       os.path.join(stage_dir, "log"), cwd=REPO_ROOT, env=child_env())
    run["load_before"] = load
    assert run["returncode"] == 0, open(run["stderr_path"]).read()[-3000:]
    result = json.loads(open(run["stdout_path"]).read().strip().splitlines()[-1])
    return run, result["pairs"] - result["dropped"], result


def run_job(args, work_dir, source, target, cleaning):
    name = "job-clean" if cleaning else "job-plain"
    out = os.path.join(work_dir, name)
    cmd = [sys.executable, "-m", "pipeline.datagen", "--train_source", source,
           "--train_target", target, "--output_dir", out] + shlex.split(args.runner_args)
    if cleaning:
        config = os.path.join(work_dir, "filters.yaml")
        import yaml
        with open(config, "w") as f:
            yaml.safe_dump({"filters": [] if args.no_filters else TYPICAL}, f)
        cmd += ["--filters", config, "--dedup", args.dedup]
        if args.decontaminate:
            cmd += ["--decontaminate", ",".join(args.decontaminate)]
    os.makedirs(out)
    load = os.getloadavg()[0]
    run = run_measured(cmd, os.path.join(work_dir, name), cwd=REPO_ROOT, env=child_env())
    run["load_before"] = load
    assert run["returncode"] == 0, open(run["stderr_path"]).read()[-3000:]
    summary = json.load(open(os.path.join(out, "translate_enzh_wmt8k.datagen_summary.json")))
    return run, summary


def memory(run):
    """The peaks a row reports: the sum over the process tree and the largest process (and
    the 1-minute load average at the run's start and end, times being load-sensitive)."""
    return {"load": [round(run["load_before"], 2), round(os.getloadavg()[0], 2)],
            "peak_mb": run["peak_mb"], "tree_peak_rss_mb": round(run["tree_peak_rss_mb"], 1),
            "largest_process_mb": round(run["max_single_process_rss_mb"], 1),
            "tree_peak_pss_mb": run["tree_peak_pss_mb"] and round(run["tree_peak_pss_mb"], 1)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data_dir", default=DEFAULT_DATA_DIR)
    p.add_argument("--lines", type=int, default=None, help="first N pairs (default: all)")
    p.add_argument("--mode", choices=("stage", "job"), default="stage")
    p.add_argument("--runner_args", default=DEFAULT_RUNNER_ARGS)
    p.add_argument("--work_dir", default=None)
    p.add_argument("--json_out", default=None)
    p.add_argument("--id_method", default=None,
                   help="cld2,fasttext,lingua: compare with LanguageIDFilter by each method")
    p.add_argument("--fasttext_model", default=None, help="a fastText model for fasttext")
    p.add_argument("--dedup", default="pairs", choices=("pairs", "normalized", "minhash"))
    p.add_argument("--decontaminate", default=[], type=lambda v: v.split(","),
                   help="test files, comma-separated")
    p.add_argument("--no_filters", action="store_true", help="dedup (and decontaminate) only")
    p.add_argument("--_stage", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args._stage:
        return _stage_main([args._stage])
    work_dir = args.work_dir or tempfile.mkdtemp(prefix="bench_cleaning_")
    os.makedirs(work_dir, exist_ok=True)
    source, target = prepare_input(args, work_dir)
    if args.id_method:
        return compare_methods(args, work_dir, source, target)
    rows = {}
    compared = args.dedup == "pairs" and not args.decontaminate and not args.no_filters
    if compared:
        opus, deduped, kept = run_opusfilter(args, work_dir, source, target)
        rows["opusfilter"] = dict(memory(opus), wall_seconds=opus["wall_seconds"], kept=kept,
                                  after_dedup=deduped, cpu_seconds=opus.get("cpu_seconds"))
    if args.mode == "stage":
        run, our_kept, result = run_stage(args, work_dir, source, target)
        rows["stage"] = dict(memory(run), wall_seconds=run["wall_seconds"], kept=our_kept,
                             reasons=result["reasons"], cpu_seconds=run["cpu_seconds"])
    else:
        for cleaning in (True, False):
            run, summary = run_job(args, work_dir, source, target, cleaning)
            train = summary["splits"]["train"]
            rows["job-clean" if cleaning else "job-plain"] = dict(
                memory(run), wall_seconds=run["wall_seconds"], kept=train["pairs_written"],
                cpu_seconds=run["cpu_seconds"],
                rejected=train["rejected_by_reason"], stages=summary["stages"])
    print(json.dumps(rows, indent=1, default=str))
    for name, row in rows.items():
        print("%-10s %7.1f s  cpu %7.1f s  tree %6.0f MB  largest process %6.0f MB  kept %d  "
              "load %s" % (name, row["wall_seconds"], row["cpu_seconds"] or 0,
                           row["tree_peak_rss_mb"], row["largest_process_mb"], row["kept"],
                           "->".join(map(str, row["load"]))))
    if "job-clean" in rows:
        print("cleaning adds %+.0f MB over the tree, %+.0f MB to the largest process" % (
            rows["job-clean"]["tree_peak_rss_mb"] - rows["job-plain"]["tree_peak_rss_mb"],
            rows["job-clean"]["largest_process_mb"] - rows["job-plain"]["largest_process_mb"]))
    ours = rows.get("stage", rows.get("job-clean"))
    if compared:
        print("kept pairs: OpusFilter %d, ours %d: %s" % (
            rows["opusfilter"]["kept"], ours["kept"],
            "equal" if rows["opusfilter"]["kept"] == ours["kept"] else "DIFFERENT"))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"lines": args.lines, "mode": args.mode, "dedup": args.dedup,
                       "decontaminate": args.decontaminate, "rows": rows}, f, indent=1,
                      default=str)
    if not args.work_dir:
        shutil.rmtree(work_dir, ignore_errors=True)
    return 0


def compare_methods(args, work_dir, source, target):
    """--id_method: per method, OpusFilter and the cleaning stage with that language ID."""
    from opusfilter_reference import install_lid_extras
    install_lid_extras()
    methods = args.id_method.split(",")
    model = args.fasttext_model
    if "fasttext" in methods and not model:
        model = train_fasttext(work_dir, source, target)
    rows = {}
    for method in methods:
        filters = typical(method, model)
        opus, _, kept = run_opusfilter(args, work_dir, source, target, filters, "opus-" + method)
        run, our_kept, _ = run_stage(args, work_dir, source, target, filters, "ours-" + method)
        rows[method] = {"opusfilter": dict(memory(opus), wall_seconds=opus["wall_seconds"],
                                           cpu_seconds=opus["cpu_seconds"], kept=kept),
                        "ours": dict(memory(run), wall_seconds=run["wall_seconds"],
                                     cpu_seconds=run["cpu_seconds"], kept=our_kept)}
    print(json.dumps(rows, indent=1, default=str))
    print("%-9s %-10s %9s %9s %8s %9s  %s" % ("method", "side", "wall s", "cpu s", "kept",
                                               "largest MB", "load"))
    for method, sides in rows.items():
        for side, row in sides.items():
            print("%-9s %-10s %9.1f %9.1f %8d %9.0f  %s" % (
                method, side, row["wall_seconds"], row["cpu_seconds"], row["kept"],
                row["largest_process_mb"], "->".join(map(str, row["load"]))))
        o, u = sides["opusfilter"], sides["ours"]
        print("%-9s ours %.1fx faster (wall), %.1fx less CPU; kept %s" % (
            method, o["wall_seconds"] / u["wall_seconds"], o["cpu_seconds"] / u["cpu_seconds"],
            "equal" if o["kept"] == u["kept"] else "DIFFERENT"))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"lines": args.lines, "id_method": methods, "rows": rows}, f, indent=1,
                      default=str)
    if not args.work_dir:
        shutil.rmtree(work_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
