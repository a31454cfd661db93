"""Running the cleaning stage (`transforms.clean.clean_pairs.CleanPairs`) on real files in a test."""

import json
import os

import apache_beam as beam

from beam_unit import test_pipeline
from transforms.clean.clean_pairs import CleanPairs, with_chunk_facts
from transforms.cleaning.dropped_lines import is_dropped
from transforms.encode.encode_pairs import plan_chunks
from transforms.formats.text_lines import scan_stream
from transforms.reporting.json_result import WriteJsonResult


def scan(path, every):
    with open(path, "rb") as f:
        size, lines, checkpoints, _ = scan_stream(f, every)
    return {"bytes": size, "lines": lines, "checkpoints": checkpoints}


def planned_chunks(datasets, chunk_lines):
    """(chunks with their files' facts, {"split/index": (dataset, lines, source, target)}) of
    `datasets` ([(split, source path, target path)], numbered in their split in order)."""
    chunks, known, numbered = [], {}, {}
    for split, source, target in datasets:
        index = numbered[split] = numbered.get(split, -1) + 1
        ds = {"split": split, "index": index, "name": os.path.basename(source),
              "format": "lines", "source": source, "target": target}
        facts = scan(source, chunk_lines), scan(target, chunk_lines)
        chunks += [with_chunk_facts(c, *facts) for c in plan_chunks(ds, source, target, *facts)]
        known["%s/%d" % (split, index)] = (ds, max(f["lines"] for f in facts), source, target)
    return chunks, known


def run_clean_pairs(work_dir, datasets, cleaning, chunk_lines=100, runner=None):
    """Runs CleanPairs over `datasets` ([(split, source path, target path)], numbered in
    their split in order) with `cleaning` (a CleaningConfig); returns
    ({(split, index): {line number: reject record}}, {(split, index): report})."""
    chunks, known = planned_chunks(datasets, chunk_lines)
    result = os.path.join(str(work_dir), "cleaning.json")
    pipeline = test_pipeline() if runner is None else beam.Pipeline(runner=runner)
    with pipeline as p:
        out = (p | beam.Create(chunks, reshuffle=False)
               | CleanPairs(cleaning, "error", known, str(work_dir)))
        _ = {"cleaned": out} | WriteJsonResult(result)
    with open(result, encoding="utf-8") as f:
        reports = json.load(f).get("cleaned", [])
    drops, by_dataset = {}, {}
    for report in reports:
        where = (report["split"], report["index"])
        by_dataset[where] = report
        with open(report["rejects"], encoding="utf-8") as f:
            records = {r["ordinal"]: r for r in map(json.loads, f)}
        with open(report["bitmap"], "rb") as f:
            bitmap = f.read()
        lines = known["%s/%d" % where][1]
        assert sorted(records) == [n for n in range(1, lines + 1) if is_dropped(bitmap, n)]
        drops[where] = records
    return drops, by_dataset


def near_duplicate_drops(work_dir, datasets, options, round_entries, chunk_lines=100):
    """The drops NearDuplicates (`--dedup minhash` with `options`) gives for `datasets` (as
    `planned_chunks` takes them) with band rounds of `round_entries` entries, sorted, and the
    run files' names it left in `work_dir`."""
    from transforms.clean.near_dedup import NearDuplicates
    chunks, _ = planned_chunks(datasets, chunk_lines)
    result = os.path.join(str(work_dir), "near.json")
    with test_pipeline() as p:
        out = (p | beam.Create(chunks, reshuffle=False)
               | NearDuplicates(options, "error", ["train", "dev"], str(work_dir),
                                round_entries)
               | beam.FlatMap(lambda item: [[item[0][0], item[0][1]] + list(drop[:3])
                                            for drop in item[1]]))
        _ = {"drops": out} | WriteJsonResult(result)
    with open(result, encoding="utf-8") as f:
        drops = sorted(json.load(f).get("drops", []))
    return drops, sorted(os.listdir(os.path.join(str(work_dir), "minhash-bands")))


def our_drops(source, target, filters, batched=False):
    """{line number: reason} of the pair as the cleaning stage's DoFn decides it, without
    de-duplication (the filters alone, lines read as the job reads them): pair by pair
    (`accept`) or, `batched`, each filter on all the pairs the ones before it passed
    (`accept_many`, as the stage runs a costly filter)."""
    from transforms.cleaning.config import CleaningConfig
    from transforms.formats.text_lines import decode_line, iter_raw_lines
    config = CleaningConfig(tuple((name, params) for f in filters for name, params in f.items()))
    built = config.build_filters()
    pairs = []
    with open(source, "rb") as s, open(target, "rb") as t:
        for number, (raw_s, raw_t) in enumerate(zip(iter_raw_lines(s), iter_raw_lines(t)), 1):
            pairs.append((decode_line(raw_s, source, number).rstrip(),
                          decode_line(raw_t, target, number).rstrip()))
    drops = {}
    left = list(range(len(pairs)))
    for f in built:
        f.setup()
        verdicts = (f.accept_many([pairs[i] for i in left]) if batched
                    else [f.accept(*pairs[i]) for i in left])
        drops.update((i + 1, f.reason) for i, ok in zip(left, verdicts) if not ok)
        left = [i for i, ok in zip(left, verdicts) if ok]
    return drops
