"""The files of a complete datagen output as a trainer's readers find them: which problem a
directory holds, its summary, its shards checked against the summary (one listing), and the
completion check of shard files a pattern names.

The readers run in a trainer's process, whose console is the trainer's. A local output is
found here with `os` and `glob` alone: no Beam (its import loads the whole SDK, seconds, and
logs a line) and no TensorFlow, so `pipeline.tools.batches` imports neither for a local
output. A path with a scheme (gs://, s3://) goes through Beam's FileSystems, as everywhere in
the project, imported then without its start-up line (`console.quiet_import`).

A directory may hold several problems (docs/formats.md, "Outputs"): each function that takes a
directory takes the problem too, and the error that asks for it names the caller's argument
(`how`: `inspect`'s `--problem`, the readers' `problem=`).
"""

import glob
import json
import os
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Set, Tuple

from pipeline.output.complete_check import shard_mismatches
from pipeline.output.layout import COMPLETE_NAME, SUMMARY_NAME, marked_problem
from pipeline.runtime import console
from transforms.shards.record_formats import PAIR_SEPARATOR, parse_shard_name, problem_of_head
from transforms.storage import paths
from transforms.errors import JobError

READER_HOW = "pass problem=<name>"  # what the readers' errors ask for


class IncompleteOutputError(JobError, ValueError):
    """Shards of a datagen output that is not complete (no completion marker: a run still
    going, failed, or killed while committing), or not all of a split's shards; or no such
    output, or a directory of several problems where none was named."""


def beam_file_systems() -> Any:
    """Beam's FileSystems, for a path with a scheme, imported without its start-up line."""
    return console.quiet_import("apache_beam.io.filesystems").FileSystems


def glob_literal(directory: str) -> str:
    """`directory` as a glob that matches only itself (`out[1]`, `runs*`)."""
    if paths.is_local(directory):
        return glob.escape(directory)
    from transforms.storage import file_io
    return file_io.glob_literal(directory)


def match(pattern: str) -> List[str]:
    """The files a glob pattern matches, sorted."""
    if paths.is_local(pattern):
        return sorted(p for p in glob.glob(pattern) if os.path.isfile(p))
    return sorted(m.path for m in beam_file_systems().match([pattern])[0].metadata_list)


def exists(path: str) -> bool:
    return os.path.exists(path) if paths.is_local(path) else beam_file_systems().exists(path)


def read_json(path: str) -> Any:
    if paths.is_local(path):
        with open(path, "rb") as f:
            return json.loads(f.read().decode("utf-8"))
    from transforms.storage import file_io
    return file_io.read_json(path)


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def find_problem(output_dir: str, problem: Optional[str], how: str = READER_HOW) -> str:
    """The problem to read: `problem`, checked to be complete, or the only complete one;
    IncompleteOutputError (one line) otherwise, asking for the problem as `how` says."""
    if problem is None:
        suffix = COMPLETE_NAME % ""
        names = [_basename(p)[:-len(suffix)]
                 for p in match(paths.join(glob_literal(output_dir), COMPLETE_NAME % "*"))]
        if len(names) > 1:
            raise IncompleteOutputError("%s holds %d problems (%s): %s" % (
                output_dir, len(names), ", ".join(names), how))
        if not names:
            if paths.is_local(output_dir) and not os.path.isdir(output_dir):
                raise IncompleteOutputError("%s: no such directory" % output_dir)
            raise IncompleteOutputError("%s: no complete datagen output (no %s file)%s" % (
                output_dir, COMPLETE_NAME % "*", _unfinished(output_dir, "*")))
        return names[0]
    if not exists(paths.join(output_dir, COMPLETE_NAME % problem)):
        raise IncompleteOutputError("%s: no complete output of problem %s (no %s)%s" % (
            output_dir, problem, COMPLETE_NAME % problem, _unfinished(output_dir, problem)))
    return problem


def read_summary(output_dir: str, problem: str, stores: Any = None) -> Dict[str, Any]:
    """The summary of `problem`'s output in `output_dir`, whose marker was found.
    IncompleteOutputError (one line) when it is missing or not a summary: a copy cut short
    leaves exactly that (`p.DATAGEN_COMPLETE` sorts before `p.datagen_summary.json`), and
    without the summary nothing says which shards the output holds. `stores`: the
    object-store clients of a path with a scheme (`transforms.storage.file_io`)."""
    path = paths.join(output_dir, SUMMARY_NAME % problem)
    try:
        if paths.is_local(path):
            summary = read_json(path)
        else:
            from transforms.storage import file_io
            summary = file_io.read_json(path, stores)
    except (OSError, ValueError) as e:  # missing (Beam's is an OSError); not UTF-8 or JSON
        why = "missing" if not exists(path) else "unreadable: %s" % " ".join(str(e).split())
        summary = None
    else:
        why = "not a summary"
    if not isinstance(summary, dict) or not isinstance(summary.get("splits"), dict):
        raise IncompleteOutputError(
            "incomplete output: %s is %s, though %s is there (a copy cut short?): copy the "
            "output again, or rerun the job" % (path, why, COMPLETE_NAME % problem))
    return summary


def _unfinished(output_dir: str, problem: str) -> str:
    """What a summary without a marker says (a run still going, failed or interrupted)."""
    states = []
    for path in match(paths.join(glob_literal(output_dir), SUMMARY_NAME % problem)):
        try:
            summary = read_json(path)
            states.append("%s: %s" % (summary.get("problem"), summary.get("status")))
        except (OSError, ValueError):
            states.append("%s: unreadable" % _basename(path))
    return "; summary says %s" % ", ".join(states) if states else ""


def local_split_shards(output_dir: str, split: str, problem: Optional[str],
                       how: str = READER_HOW) -> List[str]:
    """The shard paths of `split` of the complete output in the local directory
    `output_dir`, in name order, as its summary lists them, each there at its recorded size
    (one listing); IncompleteOutputError naming the first that is not, ValueError for a
    split the output does not have."""
    problem = find_problem(output_dir, problem, how)
    summary = read_summary(output_dir, problem)
    if split not in summary["splits"]:
        raise ValueError("%s: problem %s has no split %r" % (output_dir, problem, split))
    with os.scandir(output_dir) as entries:
        listed = {e.name: e.stat().st_size for e in entries if e.is_file()}
    problems = shard_mismatches(output_dir, summary, listed=listed)
    if problems:
        more = " (and %d more shards)" % (len(problems) - 1) if len(problems) > 1 else ""
        raise IncompleteOutputError("incomplete output: %s%s" % (problems[0][1], more))
    return [os.path.join(output_dir, s["name"])
            for s in sorted(summary["splits"][split]["shards"], key=lambda s: s["name"])]


def check_complete(files: Iterable[str]) -> None:
    """Raises IncompleteOutputError when datagen shards among `files` (named
    `{problem}-{split}-NNNNN-of-NNNNN`, and a format's suffix) come from an output without
    its completion marker, or when a split's shards are not all there. Other files are taken
    as they are."""
    groups: Dict[Tuple[str, str, str, int], Set[int]] = {}
    for path in files:
        head, name = paths.split(path)
        parsed = parse_shard_name(name)
        if parsed:
            problem, split, shard, n, _ = parsed
            groups.setdefault((head, problem, split, n), set()).add(shard)
    for (head, problem, split, n), shards in sorted(groups.items()):
        if marked_problem(head, problem, exists) is None:  # (a pair's shards: its problem's)
            raise IncompleteOutputError(
                "%s: the output of problem %s is not complete (no %s: a run is going, failed "
                "or was killed); rerun the job, or read it with require_complete=False" % (
                    head, problem, COMPLETE_NAME % problem))
        if len(shards) != n:
            raise IncompleteOutputError("%s: %d of the %d %s shards of problem %s match" % (
                head, len(shards), n, split, problem))


def problems_of(files: Iterable[str]) -> List[str]:
    """The problems whose shards are among `files`, sorted."""
    return sorted({problem_of_head(parsed[0])
                   for parsed in map(parse_shard_name, map(_basename, files)) if parsed})


class OutputFacts(NamedTuple):
    """What the summary beside record files says about reading them."""
    packed_length: int  # --packed_length (0: none, or no summary)
    pad_id: int         # the id inputs and targets are padded with (mode t2t)


def output_facts(files: Iterable[str], mode: str) -> OutputFacts:
    """Raises ValueError when a summary beside the record files says they were written for
    the other mode (word records have no EOS; subword and byte_bpe records end in one): the
    wrong mode would train on shifted or missing end-of-sequence ids without a word. Returns
    the summary's --packed_length and its vocabularies' pad id (`Vocabulary.pad_id`, as the
    job records it; 0, T2T's, for no summary or one written before pad ids were recorded)."""
    from transforms.codecs.kinds import KIND_NAMES, codec_kind

    suffix = SUMMARY_NAME % ""
    checked = set()
    packed_length = 0
    pad_ids: Set[int] = set()
    for path in files:
        directory, name = paths.split(path)
        if directory in checked:
            continue
        checked.add(directory)
        pattern = paths.join(glob_literal(directory), SUMMARY_NAME % "*")
        for summary_path in match(pattern):
            problem = paths.split(summary_path)[1][:-len(suffix)]
            if not name.startswith((problem + "-", problem + PAIR_SEPARATOR)):  # (a pair's)
                continue
            try:
                summary = read_json(summary_path)
                flags = summary["flags"]
                kind = flags["vocab_type"]
                packed_length = max(packed_length, int(flags.get("packed_length") or 0))
                vocabs = [v for v in (summary.get("vocab") or {}).values() if isinstance(v, dict)]
                pad_ids.update(int(v["pad_id"]) for v in vocabs if "pad_id" in v)
            except (OSError, ValueError, KeyError, TypeError):
                continue  # no readable summary: nothing to check against
            layout = codec_kind(kind).learnt_layout if kind in KIND_NAMES else ""
            if (layout and (summary.get("fingerprint") or {}).get("layout") != layout
                    and not any("given" in v for v in vocabs)):
                raise ValueError(
                    "%s holds --vocab_type %s records learnt with an earlier id layout (not %s: "
                    "their EOS is the id batches are padded with); rerun the job with "
                    "--overwrite (%s)" % (directory, kind, layout, summary_path))
            wanted = (("t2t" if codec_kind(kind).ends_in_eos else "nmt")  # docs/formats.md
                      if kind in KIND_NAMES else None)
            if wanted and wanted != mode:
                raise ValueError(
                    "%s holds records of --vocab_type %s, written for mode=%r, not mode=%r "
                    "(%s)" % (directory, kind, wanted, mode, summary_path))
    if len(pad_ids) > 1:
        raise ValueError("the records' vocabularies pad with different ids (%s): read them "
                         "one output at a time" % ", ".join(map(str, sorted(pad_ids))))
    return OutputFacts(packed_length, pad_ids.pop() if pad_ids else 0)
