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


def run_clean_pairs(work_dir, datasets, cleaning, chunk_lines=100, runner=None):
    """Runs CleanPairs over `datasets` ([(split, source path, target path)], numbered in
    their split in order) with `cleaning` (a CleaningConfig); returns
    ({(split, index): {line number: reject record}}, {(split, index): report})."""
    chunks, known, numbered = [], {}, {}
    for split, source, target in datasets:
        index = numbered[split] = numbered.get(split, -1) + 1
        ds = {"split": split, "index": index, "name": os.path.basename(source),
              "format": "lines", "source": source, "target": target}
        facts = scan(source, chunk_lines), scan(target, chunk_lines)
        chunks += [with_chunk_facts(c, *facts) for c in plan_chunks(ds, source, target, *facts)]
        known["%s/%d" % (split, index)] = (ds, max(f["lines"] for f in facts), source, target)
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
