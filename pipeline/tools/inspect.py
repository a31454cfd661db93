"""`python -m pipeline.tools.inspect OUTPUT_DIR`: a few records of a finished output, decoded back
to text, and the summary's key figures.

    python -m pipeline.tools.inspect OUTPUT_DIR [--problem P] [--split train|dev]
                               [--num_records N] [--seed S] [--json] [--verify_checksums]

Why it exists: a model trained on the shards sees only ids; the quickest check that a run
paired and encoded the right text is to decode some records with the directory's own
vocabularies and read them. So this reads the output the way a trainer would, from the
files alone:

- the output must be complete (`{problem}.DATAGEN_COMPLETE`); the summary
  (`{problem}.datagen_summary.json`) says which vocab type, vocab files and shards it holds.
  Vocab files are looked up by name in OUTPUT_DIR (not at the absolute path the summary
  recorded), so a copied or downloaded output directory works;
- records are read with the project's own TFRecord framing reader (checksums checked) and
  parsed with its protobuf-only Example schema: no Beam pipeline and no TensorFlow (~3.5 s
  to import). Files go through Beam's FileSystems, as everywhere in the project, so gs://
  works; importing it loads the `apache_beam` package (~1.5 s) but runs nothing;
- decoding is the run's kind's `Vocabulary` (`transforms.codecs.kinds`, read by
  `transforms.storage.vocab_files`): its EOS ids (stripped before decoding), its `decode`. No kind
  name is compared here;
- without `--seed`, the first N records in shard order; with it, N records picked by
  reservoir sampling over every shard of the split with `random.Random(seed)`: the same
  seed gives the same records, and only N records are held in memory;
- a packed record (--packed_length) is shown as its pairs, each decoded on its own (split
  at its segmentation feature), with its other features in `--json`.

- the output is checked against its summary first: every shard there at its recorded size
  (one listing), and with `--verify_checksums` each shard's crc32c and record count (every
  shard read once); an object store is asked first with short timeouts, so an unreachable
  one is one line within about 30 s, not Beam's minutes of retries.

Problems (no complete output, a shard missing or not as recorded, a store out of reach, an unknown split, a missing vocab file or shard, a corrupt
record, several problems and no `--problem`) are one line on stderr and exit status 2, as
`pipeline.datagen` reports bad input.
"""

import argparse
import itertools
import json
import random
import sys

from typing import (Any, Dict, Iterable, Iterator, List, NoReturn, Optional, Sequence, Tuple,
                    TypeVar, Union)

if __name__ == "__main__":  # the console set-up, before Beam's import logs "apitools ..."
    from pipeline.runtime import console
    console.set_up()

from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from pipeline.output.complete_check import shard_mismatches
from pipeline.output.layout import summary_languages
from pipeline.runtime import flags
from pipeline.tools import output_files
from transforms.contracts.flag_ranges import bounded
from pipeline.runtime.errors import DatagenError, one_line
from transforms.storage.vocab_files import VocabularyFiles
from transforms.codecs.vocabulary import Vocabulary
from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores, StoreSettings
from transforms.formats.example_proto import PAIR_FEATURE, Int64FeaturesWriter
from transforms.formats.packed_examples import unpack
from transforms.formats.tfrecord_framing import CorruptRecordError
from transforms.shards.format_base import DEFAULT_LANGS
from transforms.shards.record_formats import format_of
from transforms.codecs.kinds import CodecKind, codec_kind

PROG = "python -m pipeline.tools.inspect"
T = TypeVar("T")
SideVocab = Tuple[str, Vocabulary, List[int]]  # (vocab file name, vocabulary, EOS ids)
Report = Dict[str, Any]  # `inspect`'s report (what --json prints)


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are a DatagenError (one line, exit 2) instead of usage text."""

    def error(self, message: str) -> NoReturn:
        raise DatagenError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Decode a few records of a finished datagen output "
                "back to text with its own vocabularies, and show the summary's key figures.")
    p.add_argument("output_dir", help="the job's --output_dir (any Beam FileSystems path)")
    p.add_argument("--problem", help="the problem name; may be left out when OUTPUT_DIR "
                   "holds one complete problem")
    p.add_argument("--split", default="train", help="train or dev (default: train)")
    p.add_argument("--num_records", type=bounded(int, 0), default=5,
                   help="records to show (default 5)")
    p.add_argument("--seed", type=bounded(int), default=None, help="pick the records at random "
                   "with this seed (default: the first N in shard order)")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.add_argument("--verify_checksums", action="store_true", help="also read every shard "
                   "once and compare its crc32c and record count with the summary (by "
                   "default only names and sizes, from one listing)")
    p.epilog = ("Beam's file system options are accepted too, as the job takes them "
                "(--s3_endpoint_url, --s3_access_key_id, --s3_secret_access_key, "
                "--s3_region_name, ... for s3://; gs:// uses the environment's credentials).")
    return p


def file_system_options(argv: List[str]) -> PipelineOptions:
    """Beam's pipeline options of `argv` (the file system flags), handed to FileSystems in
    this process; DatagenError for any other unknown flag."""
    flags.refuse_unknown_flags(argv, "a flag of %s (see --help)" % PROG)
    options = PipelineOptions(argv)
    FileSystems.set_options(options)
    return options


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def find_problem(output_dir: str, problem: Optional[str]) -> str:
    """The problem to inspect: `problem`, checked to be complete, or the only complete one
    (`output_files.find_problem`); DatagenError otherwise."""
    try:
        return output_files.find_problem(output_dir, problem, "pass --problem")
    except output_files.IncompleteOutputError as e:
        raise DatagenError(str(e)) from None


def load_vocabs(output_dir: str,
                summary: Dict[str, Any]) -> Tuple[CodecKind, Dict[str, SideVocab]]:
    """(kind, {"source"|"target": (file name, encoder, eos ids)}) of the output's vocab
    files, found by name in `output_dir`; a shared vocabulary serves both sides."""
    kind = codec_kind(summary["flags"]["vocab_type"])
    files = VocabularyFiles(kind.loader(summary["flags"]))  # built as the run built them
    vocab = summary["vocab"]
    sides = {"source": "shared", "target": "shared"} if "shared" in vocab else {
        "source": "source", "target": "target"}
    loaded: Dict[str, SideVocab] = {}
    for side, name in sides.items():
        if name not in loaded:
            path = FileSystems.join(output_dir, _basename(vocab[name]["path"]))
            missing = files.missing(path)
            if missing:
                raise DatagenError("%s vocabulary %s: %s" % (name, path, missing))
            try:
                encoder = files.load(path)
                eos = encoder.eos_ids()
            except (OSError, ValueError) as e:
                raise DatagenError("%s: not a readable %s vocabulary (%s)" % (
                    path, kind.name, one_line(e))) from None
            loaded[name] = (_basename(path), encoder, eos)
    return kind, {side: loaded[name] for side, name in sides.items()}


def split_records(output_dir: str, shard_names: Iterable[str],
                  langs: Tuple[str, str] = DEFAULT_LANGS) -> Iterator[Tuple[str, int, bytes]]:
    """(shard name, index in the shard, record bytes) of every record, shards in the order
    given (name order: the order a trainer reads them), one record in memory at a time.
    `langs`: a one-pair output's languages, which its text shards' files end with."""
    for name in shard_names:
        path = FileSystems.join(output_dir, name)
        if not file_io.exists(path):
            raise DatagenError("%s: shard missing (the summary lists it)" % path)
        try:  # the shard's format from its name (`transforms.shards.record_formats`)
            for i, data in enumerate(format_of(name, [langs]).read_shard(path)):
                yield name, i, data
        except (CorruptRecordError, ValueError, OSError, RuntimeError) as e:
            raise DatagenError("%s: %s" % (path, one_line(e))) from None


def pick(records: Iterable[T], n: int, seed: Optional[int]) -> List[Tuple[int, T]]:
    """[(position in the split, record)]: the first `n`, or with a seed `n` chosen uniformly
    by reservoir sampling (Algorithm R), in split order. Holds `n` records, not the split."""
    if seed is None or n <= 0:
        return list(itertools.islice(enumerate(records), max(n, 0)))
    rng = random.Random(seed)
    kept: List[Tuple[int, T]] = []
    for i, record in enumerate(records):
        if i < n:
            kept.append((i, record))
        else:
            j = rng.randrange(i + 1)
            if j < n:
                kept[j] = (i, record)
    return sorted(kept, key=lambda item: item[0])


def _decode(side: str, ids: Sequence[int], vocab: SideVocab, where: str,
            tags: Optional[Dict[int, str]] = None) -> str:
    """Text of one side's ids: the kind's EOS ids stripped from the end, then decoded; a
    language tag first (`tags`: {id: tag} of the summary's `lang_tags`) is shown as the tag
    and a space (it is one reserved id, not text)."""
    _, encoder, eos = vocab
    body = ids[:-len(eos)] if eos and ids[-len(eos):] == eos else ids
    head = ""
    if tags and body and body[0] in tags:
        head, body = tags[body[0]] + " ", body[1:]
    try:
        return head + encoder.decode(body)
    except ValueError as e:  # an id outside the vocabulary: not this output's vocab file
        raise DatagenError("%s: %s: %s" % (where, side, one_line(e))) from None


def check_store(output_dir: str, stores: ObjectStores) -> None:
    """DatagenError (one line) within about 30 s when `output_dir` is on an object store
    that cannot be reached (Beam's file systems would retry it for minutes)."""
    try:
        file_io.check_reachable(output_dir, stores)
    except OSError as e:
        raise DatagenError("cannot reach %s: %s" % (output_dir, one_line(e))) from None


def check_shards(output_dir: str, summary: Dict[str, Any], stores: Optional[ObjectStores],
                 full: bool) -> None:
    """DatagenError naming the first shard that is not as the summary records it (missing,
    another size; with `full` another crc32c or record count), and how many more."""
    problems = shard_mismatches(output_dir, summary, stores, full)
    if problems:
        more = " (and %d more shards)" % (len(problems) - 1) if len(problems) > 1 else ""
        raise DatagenError("incomplete output: %s%s" % (problems[0][1], more))


def inspect(output_dir: str, problem: Optional[str] = None, split: str = "train",
            num_records: int = 5, seed: Optional[int] = None,
            stores: Optional[ObjectStores] = None, verify_checksums: bool = False) -> Report:
    """The report of an output directory as a dict (what `--json` prints). `stores`: the
    object store clients of the file system options (the store is asked first, briefly);
    `verify_checksums`: read every shard to compare its crc32c and record count."""
    if num_records < 0:
        raise DatagenError("--num_records must be 0 or more, got %d" % num_records)
    if stores is not None:
        check_store(output_dir, stores)
    problem = find_problem(output_dir, problem)
    try:  # a marker without a readable summary (a copy cut short) is one line
        summary = output_files.read_summary(output_dir, problem)
    except output_files.IncompleteOutputError as e:
        raise DatagenError(str(e)) from None
    splits = summary["splits"]
    if split not in splits:
        raise DatagenError("unknown split %r: problem %s in %s has %s" % (
            split, problem, output_dir, ", ".join(sorted(splits))))
    check_shards(output_dir, summary, stores, verify_checksums)
    kind = codec_kind(summary["flags"]["vocab_type"])
    # a text output has no vocabulary: its records hold the text
    vocabs = load_vocabs(output_dir, summary)[1] if len(summary["vocab"]) > 1 or (
        summary["vocab"] and "passes" not in summary["vocab"]) else {}
    parse = Int64FeaturesWriter().parse_all
    tags = {t["id"]: t["token"] for t in (summary.get("lang_tags") or {}).values()}
    shards = [s["name"] for s in sorted(splits[split]["shards"], key=lambda s: s["name"])]
    records = []
    every = split_records(output_dir, shards, summary_languages(summary))
    for position, (shard, index, data) in pick(every, num_records, seed):
        features = parse(data)
        where = "%s record %d" % (shard, index)
        inputs, targets = features.get("inputs", []), features.get("targets", [])
        record: Report = {"position": position, "shard": shard, "index": index,
                          "inputs_length": len(inputs), "targets_length": len(targets)}
        if PAIR_FEATURE in features:  # several language pairs: the record's
            record[PAIR_FEATURE] = features.pop(PAIR_FEATURE).decode("utf-8", "replace")
        if isinstance(inputs, bytes):  # --output_format text: the record is the text
            record.update({"source": inputs.decode("utf-8", "replace"),
                           "target": targets.decode("utf-8", "replace")})
            record.update(inputs_length=len(record["source"]),
                          targets_length=len(record["target"]), unit="chars")
        elif "inputs_segmentation" in features:  # packed: its pairs, each decoded
            record["pairs"] = [
                {"source": _decode("inputs", a, vocabs["source"], where, tags),
                 "target": _decode("targets", b, vocabs["target"], where),
                 "inputs": a, "targets": b} for a, b in unpack(features)]
            record.update(sorted(features.items()))
        else:
            record.update({"source": _decode("inputs", inputs, vocabs["source"], where, tags),
                           "target": _decode("targets", targets, vocabs["target"], where),
                           "inputs": inputs, "targets": targets})
        records.append(record)
    splits_report = {name: {"pairs_read": s["pairs_read"], "pairs_written": s["pairs_written"],
                            "pairs_rejected": s["pairs_rejected"],
                            "rejected_by_reason": s["rejected_by_reason"],
                            "shards": len(s["shards"])}
                     for name, s in sorted(splits.items())}
    for name, s in splits.items():
        if s.get("packing"):
            splits_report[name]["packing"] = s["packing"]
    return {
        "output_dir": output_dir, "problem": problem, "split": split, "seed": seed,
        "vocab_type": kind.name,
        "eos_appended": bool(vocabs["source"][2]) if vocabs else False,
        "records_in_split": sum(s["records"] for s in splits[split]["shards"]),
        "records": records,
        "summary": {
            "status": summary["status"], "finished_at": summary.get("finished_at"),
            "seed": summary.get("seed"),
            "splits": splits_report,
            "vocab": {name: {"size": v["size"], "file": _basename(v["path"])}
                      for name, v in sorted(summary["vocab"].items()) if name != "passes"}}}


def format_report(report: Report) -> str:
    """The report as text: records first, then the split and vocab tables."""
    chosen = ("picked at random (seed %d)" % report["seed"] if report["seed"] is not None
              else "the first in shard order")
    lines = ["%s %s: %d of %d records, %s; vocab type %s" % (
        report["problem"], report["split"], len(report["records"]),
        report["records_in_split"], chosen, report["vocab_type"]), ""]
    for r in report["records"]:
        packed = "pairs" in r
        unit = r.get("unit", "ids")  # a text output's records: characters
        lines.append("#%d  %s record %d  %s%sinputs %d %s, targets %d %s%s" % (
            r["position"], r["shard"], r["index"],
            "%s: " % r[PAIR_FEATURE] if PAIR_FEATURE in r else "",
            "%d pairs packed: " % len(r["pairs"]) if packed else "",
            r["inputs_length"], unit, r["targets_length"], unit,
            " (EOS included)" if report["eos_appended"] and unit == "ids" else ""))
        for i, pair in enumerate(r["pairs"] if packed else [r], 1):
            lines.append("  %ssource: %s" % ("[%d] " % i if packed else "", pair["source"]))
            lines.append("  %starget: %s" % ("    " if packed else "", pair["target"]))
    s = report["summary"]
    lines += ["", "output %s, finished %s, shuffle seed %s" % (s["status"], s["finished_at"],
                                                             s["seed"]),
              "%-8s %10s %10s %10s %7s" % ("split", "read", "written", "rejected", "shards")]
    for name, x in s["splits"].items():
        lines.append("%-8s %10d %10d %10d %7d" % (name, x["pairs_read"], x["pairs_written"],
                                                  x["pairs_rejected"], x["shards"]))
        if x.get("packing"):
            lines.append("%-8s packed: %d pairs in %d records of %d ids" % (
                "", x["packing"]["pairs"], x["packing"]["records"],
                x["packing"]["packed_length"]))
    lines.append("")
    lines.append("%-8s %10s  %s" % ("vocab", "size", "file"))
    for name, v in s["vocab"].items():
        lines.append("%-8s %10d  %s" % (name, v["size"], v["file"]))
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> Union[int, str, None]:
    """Prints the report; returns the exit status (2 and one line on stderr on error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args, beam_args = _parser().parse_known_args(argv)
        options = file_system_options(beam_args)
        report = inspect(args.output_dir, args.problem, args.split, args.num_records,
                         args.seed, ObjectStores(StoreSettings.from_options(options)),
                         args.verify_checksums)
    except DatagenError as e:
        print("%s: error: %s" % (PROG, one_line(e)), file=sys.stderr)
        return 2
    except SystemExit as e:  # --help
        return e.code
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        print(format_report(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
