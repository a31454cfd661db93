"""MaterializeDatasets (`transforms.prepare.materialize`) on TestPipeline: TSV and misaligned
lines into line pairs and rejects, and errors reported as facts, not exceptions."""

import dataclasses
import json
import os

import apache_beam as beam
from hypothesis import settings
from apache_beam.testing.util import assert_that, equal_to

from beam_unit import test_pipeline, write
from pipeline.driver.options import default_config
from transforms.prepare.materialize import MaterializeDatasets


SETTINGS = default_config(encode_chunk_lines=1, source_lang="en", target_lang="zh",
                          source_column=0, target_column=1, on_misaligned="reject",
                          on_invalid_utf8="error", max_line_chars=10).read


def _dataset(fmt, source, target=None, index=0):
    return {"split": "train", "index": index, "name": os.path.basename(source), "format": fmt,
            "source": source, "target": target}


def _read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def _materialized(facts):
    """A fact dict as (written lines, rejects) so a test can compare it."""
    if "error" in facts:
        return facts["split"], facts["index"], "error", facts["error"]
    rejects = [(r["ordinal"], r["where"], r["reason"], r["source"], r["target"])
               for r in map(json.loads, _read_lines(facts["rejects_path"]))]
    return (facts["split"], facts["index"], facts["units"], _read_lines(facts["source_path"]),
            _read_lines(facts["target_path"]), facts["facts"]["source"]["checkpoints"],
            sorted(facts["rejected_by_reason"].items()), rejects)


def test_materialize_tsv_and_misaligned_lines_into_line_pairs_and_rejects(tmp_path):
    tsv = write(tmp_path / "a.tsv",
                "hello\tnihao\n\tempty source\ntoo-few\nlong long long\tx\r\nlast\tone\n")
    src = write(tmp_path / "b.en", "one\ntwo\r\nthree\n")
    tgt = write(tmp_path / "b.zh", "yi\ner\n")
    with test_pipeline() as p:
        facts = (p | beam.Create([_dataset("tsv", tsv), _dataset("lines", src, tgt, index=1)])
                 | MaterializeDatasets(str(tmp_path / "work"), SETTINGS)
                 | beam.Map(_materialized))
        assert_that(facts, equal_to([
            ("train", 0, 5, ["hello", "last"], ["nihao", "one"], [(0, 0), (1, 6)],
             [("empty_source", 1), ("line_too_long", 1), ("too_few_columns", 1)],
             [(2, "line 2", "empty_source", "", "empty source"),
              (3, "line 3", "too_few_columns", "too-few", ""),
              (4, "line 4", "line_too_long", "long long long", "x")]),
            ("train", 1, 3, ["one", "two"], ["yi", "er"], [(0, 0), (1, 4)],
             [("unmatched_source_line", 1)],
             [(3, "line 3", "unmatched_source_line", "three", "")]),
        ]))


def test_materialize_reports_errors_as_facts_not_exceptions(tmp_path):
    tsv = write(tmp_path / "a.tsv", "hello\tnihao\ntoo-few\n")
    bad = write(tmp_path / "bad.tsv", b"ok\tok\n\xff\tx\n")
    settings = dataclasses.replace(SETTINGS, on_misaligned="error")
    with test_pipeline() as p:
        facts = (p | beam.Create([_dataset("tsv", tsv), _dataset("tsv", bad, index=1)])
                 | MaterializeDatasets(str(tmp_path / "work"), settings)
                 | beam.Map(lambda f: (f["index"], f.get("error", "")))
                 | beam.MapTuple(lambda i, e: (i, ("too few columns" in e and "a.tsv" in e,
                                                   "invalid UTF-8" in e and "bad.tsv" in e))))
        assert_that(facts, equal_to([(0, (True, False)), (1, (False, True))]))
