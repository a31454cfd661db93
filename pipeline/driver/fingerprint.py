"""Fingerprints of what determines an output, so a rerun never passes off a stale output.

A scheduled job reruns the same command every day; if the inputs were replaced or a flag was
edited, "the output is already complete" would silently keep yesterday's data. The summary
therefore records a fingerprint: every flag that changes the bytes written and, for each
input file, its path, size and modification time (Beam's `FileSystems.match` metadata, so
object stores work; no content hash, which would read every input on every rerun). A
complete output whose fingerprint differs is refused (exit 2) unless `--overwrite`.

Vocab files are reused when they exist (as T2T does), e.g. after a crash. A learnt or copied
vocabulary gets a hidden sidecar `.{vocab file name}.fingerprint.json` holding the vocab
fingerprint (the flags and train inputs that determine it); a vocab file whose sidecar
differs is refused. A vocab file without a sidecar was put there by hand and is reused as
T2T would.
"""

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence

from apache_beam.io.filesystems import FileSystems

from pipeline.driver.datasets import is_local_file, split_patterns
from pipeline.driver.kinds import every_plugin, kind_plugin
from pipeline.driver.options import declared_flags, flag_defaults
from pipeline.output.own_outputs import exclude_own
from pipeline.runtime.errors import DatagenError
from transforms.contracts.config import DatagenConfig
from transforms.contracts.settings import INPUT, OPERATIONAL

from transforms.storage import file_io
from transforms.storage.object_stores import ObjectStores

# Each flag's role is declared with it (`transforms.contracts.settings.Flag`): the lists here
# are derived from the declarations (`pipeline.driver.options.declared_flags`).
_FLAGS = tuple(declared_flags())
# Flags that change no byte of the output: where it goes, how the job runs or how it is
# parallelized (the vocab search and the encode chunks give the same result for any value,
# docs/flags.md), and what happens to an existing or empty output.
OPERATIONAL_FLAGS = frozenset(name for name, flag in _FLAGS if flag.role == OPERATIONAL)
# Flags naming existing vocabularies (each kind's `given_flag`), and every flag naming input
# files: compared through the files they name, not their spelling.
GIVEN_VOCAB_FLAGS = tuple(kind.given_flag for kind in every_plugin() if kind.given_flag)
INPUT_FLAGS = tuple(name for name, flag in _FLAGS if flag.role == INPUT)
# Flags that determine a vocabulary (with the train inputs and the given vocab files): the
# general ones and every kind's own. Not --max_line_chars: the pairs it rejects are still
# sampled (docs/vocabularies.md).
VOCAB_FLAGS = tuple(name for name, flag in _FLAGS if flag.vocab and flag.role != INPUT)
VOCAB_INPUT_FLAGS = tuple(name for name, flag in _FLAGS if flag.vocab and flag.role == INPUT)
# Flags added after fingerprints existed (`Flag.new`: cleaning, formats, lengths, many pairs,
# SentencePiece's options) are left out at their defaults, so an output or vocabulary made
# before them keeps its fingerprint (a rerun is still a no-op, a vocabulary reused); changed,
# they are recorded.
LEFT_OUT_AT_DEFAULT = tuple(name for name, flag in _FLAGS if flag.new)
# A corpora file's inputs are fingerprinted as `corpora.{name}.{input flag}` entries.
CORPUS_INPUT = "corpora.%s.%s"


def _left_out_when_off(flags):
    left_out = _left_out_values()
    return {k: v for k, v in flags.items() if k not in left_out or v != left_out[k]}


def _left_out_values() -> Dict[str, Any]:
    """{flag: value} of the flags a fingerprint leaves out at that value: a fingerprint
    without such a flag recorded it at that value."""
    defaults = flag_defaults()
    return {flag: defaults[flag] for flag in LEFT_OUT_AT_DEFAULT}

FileStamps = Dict[str, Dict[str, float]]  # {path: {"size": bytes, "mtime": seconds}}
Fingerprint = Dict[str, Any]  # {"flags": {flag: value}, "inputs": {flag: FileStamps}} (JSON)


def _files_of(pattern, stores=None):
    """{path: {"size", "mtime"}} of the files a pattern names; an `archive!member` counts as
    its archive, a directory (--bpe_vocab) as the files in it. Nothing for no match: the plan
    reports missing inputs, here they only show up as a difference."""
    pattern = file_io.absolute(pattern.strip().split("!", 1)[0])
    if is_local_file(pattern):  # a file's own name, brackets and all: not a glob
        return {pattern: {"size": os.path.getsize(pattern),
                          "mtime": round(os.path.getmtime(pattern), 3)}}
    files = {}
    for query in (pattern, FileSystems.join(pattern, "*")):
        for path, size, mtime in file_io.match_files(query, stores):
            if file_io.is_local(path) and os.path.isdir(path):
                continue  # Beam matches a local directory itself: its files are what count
            files[path] = {"size": size, "mtime": round(mtime or 0, 3)}
        if files:
            break
    return files


def fingerprint_values(config: DatagenConfig) -> Dict[str, Any]:
    """{flag: value} of the run as fingerprints record it: the flags, but a corpora file
    (`--corpora`) as what it defines (each corpus's name, languages, weight, columns and
    formats) and each corpus's inputs as `CORPUS_INPUT` entries, so editing the file, or a
    file it names, changes the fingerprint as editing a flag would."""
    values = config.flags()
    if not values.get("corpora"):
        return values
    values["corpora"] = [{"name": c.name, "source_lang": c.source_lang,
                          "target_lang": c.target_lang, "weight": c.weight,
                          "source_column": c.source_column, "target_column": c.target_column,
                          "train_format": c.inputs.train_format,
                          "dev_format": c.inputs.dev_format} for c in config.corpora]
    for entry, corpus in zip(values["corpora"], config.corpora):
        if corpus.filters:  # recorded when given (older fingerprints stay as they were)
            entry["filters"] = corpus.filters
            values[CORPUS_INPUT % (corpus.name, "filters")] = corpus.filters
    for corpus in config.corpora:
        for flag in INPUT_FLAGS:
            value = getattr(corpus.inputs, flag, None)
            if value:
                values[CORPUS_INPUT % (corpus.name, flag)] = value
    return values


def input_keys(flag_values: Mapping[str, Any], flags: Sequence[str]) -> List[str]:
    """`flags`, then the corpora file's input entries of those flags in `flag_values`."""
    corpus_keys = sorted(key for key in flag_values if key.startswith("corpora.")
                         and key.rsplit(".", 1)[1] in flags)
    return list(flags) + corpus_keys


def _inputs(flag_values, flags, listed=None, stores=None):
    """{flag: {path: {size, mtime}}} of the input flags given (and of a corpora file's
    inputs: `input_keys`). `listed`: {pattern: files} already listed in this run (each
    pattern is listed once: a listing is a request on an object store)."""
    listed = {} if listed is None else listed
    inputs = {}
    for flag in input_keys(flag_values, flags):
        files = {}
        patterns = ((flag_values.get(flag) or "").split(",") if flag in GIVEN_VOCAB_FLAGS
                    else split_patterns(flag_values.get(flag)))
        for pattern in patterns:
            if pattern.strip():
                if pattern not in listed:
                    listed[pattern] = _files_of(pattern, stores)
                files.update(listed[pattern])
        if flag_values.get(flag):
            inputs[flag] = files
    return inputs


def _with_layout(fingerprint: Fingerprint, flag_values: Mapping[str, Any]) -> Fingerprint:
    """`fingerprint` with the run's kind's `learnt_layout` (`transforms.codecs.kinds`) when it
    learns its vocabularies (none given) and the kind declares one: a vocabulary or output
    learnt with an earlier layout (recorded without it) then differs, and is refused, never
    reused. Other kinds' fingerprints stay as they were."""
    try:
        plugin = kind_plugin(flag_values.get("vocab_type") or "")
    except ValueError:
        return fingerprint
    given = plugin.given_flag and flag_values.get(plugin.given_flag)
    if plugin.codec.learnt_layout and not given:
        fingerprint["layout"] = plugin.codec.learnt_layout
    return fingerprint


def output_fingerprint(flag_values: Mapping[str, Any],
                       listed: Optional[Dict[str, FileStamps]] = None,
                       stores: Optional[ObjectStores] = None) -> Fingerprint:
    """What determines the whole output: output-affecting flags and every input file
    (`listed`: as `_inputs`)."""
    return _with_layout({"flags": _left_out_when_off(
        {k: v for k, v in sorted(flag_values.items())
         if k not in OPERATIONAL_FLAGS and k not in INPUT_FLAGS
         and not k.startswith("corpora.")}),
        "inputs": _inputs(flag_values, INPUT_FLAGS, listed, stores)}, flag_values)


def vocab_fingerprint(flag_values: Mapping[str, Any],
                      listed: Optional[Dict[str, FileStamps]] = None,
                      stores: Optional[ObjectStores] = None) -> Fingerprint:
    """What determines a vocabulary: the vocab flags and the train (and given vocab) files
    (`listed`: as `_inputs`)."""
    return _with_layout({"flags": _left_out_when_off({k: flag_values.get(k) for k in VOCAB_FLAGS}),
                         "inputs": _inputs(flag_values, VOCAB_INPUT_FLAGS, listed, stores)},
                        flag_values)


def differences(old: Fingerprint, new: Fingerprint) -> List[str]:
    """Human-readable list of what differs between two fingerprints (empty: the same)."""
    changes = []
    if old.get("layout") != new.get("layout"):
        changes.append("the vocabulary's id layout %s -> %s" % (
            old.get("layout") or "of an earlier version", new.get("layout") or "none"))
    old_flags, new_flags = old.get("flags", {}), new.get("flags", {})
    left_out = _left_out_values()  # a flag not recorded was at this value (or unknown then)
    for flag in sorted(set(old_flags) | set(new_flags)):
        before, after = (flags.get(flag, left_out.get(flag)) for flags in (old_flags, new_flags))
        if before != after and flag == "corpora" and isinstance(before, list) \
                and isinstance(after, list):
            changes.extend(corpora_changes(before, after))
        elif before != after:
            changes.append("--%s %s -> %s" % (flag, before, after))
    old_inputs, new_inputs = old.get("inputs", {}), new.get("inputs", {})
    for flag in sorted(set(old_inputs) | set(new_inputs)):
        before, after = old_inputs.get(flag, {}), new_inputs.get(flag, {})
        for path in sorted(set(before) | set(after)):
            if path not in after:
                changes.append("--%s %s no longer an input" % (flag, path))
            elif path not in before:
                changes.append("--%s %s is a new input" % (flag, path))
            elif before[path] != after[path]:
                changes.append("%s changed (size/mtime)" % path)
    return changes


def corpora_changes(before: List[Dict[str, Any]], after: List[Dict[str, Any]]) -> List[str]:
    """What changed between two corpora files as fingerprints record them (`fingerprint_values`:
    an entry's name, languages, weight, columns and formats): each entry added or removed,
    and each field changed, old and new (`--corpora: corpora[2] (en-vi): weight 2.0 -> 3.0`),
    not both whole lists. Entries are matched by name (names are unique in a file)."""
    old = {entry.get("name"): entry for entry in before}
    new = {entry.get("name"): (i, entry) for i, entry in enumerate(after)}
    changes = ["--corpora: entry %s removed" % name for name in old if name not in new]
    for name, (i, entry) in new.items():
        if name not in old:
            changes.append("--corpora: corpora[%d] (%s) is new" % (i, name))
            continue
        for field in sorted(set(entry) | set(old[name])):
            if entry.get(field) != old[name].get(field):
                changes.append("--corpora: corpora[%d] (%s): %s %s -> %s" % (
                    i, name, field, old[name].get(field), entry.get(field)))
    order = [entry.get("name") for entry in before if entry.get("name") in new]
    if not changes and order != [entry.get("name") for entry in after]:
        changes.append("--corpora: entries reordered: %s -> %s" % (
            ", ".join(map(str, order)), ", ".join(str(entry.get("name")) for entry in after)))
    return changes


def changed_inputs(recorded: Fingerprint, flag_values: Mapping[str, Any],
                   stores: Optional[ObjectStores] = None) -> Optional[str]:
    """None when every input file recorded at the start (`recorded`: the run's
    output_fingerprint) has the same size and mtime now; else one line naming the first one
    changed or deleted. The job reads its inputs more than once (pass 1 samples them, the
    encode pass reads them again): a change in between would mix two versions."""
    now = _inputs(flag_values, INPUT_FLAGS, None, stores)
    own_dir = file_io.absolute(flag_values.get("output_dir") or "")
    for flag, files in sorted(recorded.get("inputs", {}).items()):
        for path, stamp in sorted(files.items()):
            if own_dir and exclude_own([path], own_dir)[1]:
                continue  # the job's own output, matched by an input pattern: never read
            current = now.get(flag, {}).get(path)
            if current is None:
                return "--%s %s was deleted while the job ran" % (flag, path)
            if current != stamp:
                return ("--%s %s changed while the job ran (size %s -> %s bytes, modified "
                        "since it started): the output would mix two versions of it" % (
                            flag, path, stamp.get("size"), current.get("size")))
    return None


def sidecar_path(vocab_path: str) -> str:
    """Where a vocab file's (or byte_bpe vocab directory's) fingerprint is kept: a hidden
    `.{vocab name}.fingerprint.json` beside it, so a `vocab.*` glob sees only vocabularies."""
    head, name = vocab_path.rstrip("/").rsplit("/", 1)
    return "%s/.%s.fingerprint.json" % (head, name)


def read_sidecar(vocab_path: str, stores: Optional[ObjectStores] = None) -> Optional[Fingerprint]:
    """The recorded vocab fingerprint, or None when the file was not written by this job.
    One that is not a fingerprint (cut short, edited, another file's bytes) raises
    DatagenError naming it: nothing can say what the vocabulary was made from."""
    path = sidecar_path(vocab_path)
    if not file_io.exists(path, stores):
        return None
    try:
        recorded = file_io.read_json(path, stores)
    except ValueError as e:  # not UTF-8, not JSON
        recorded, problem = None, " ".join(str(e).split())
    else:
        problem = "not a fingerprint"
    if (isinstance(recorded, dict) and isinstance(recorded.get("flags", {}), dict)
            and isinstance(recorded.get("inputs", {}), dict)
            and all(isinstance(v, dict) for v in recorded.get("inputs", {}).values())):
        return recorded
    raise DatagenError("%s is corrupt (%s): cannot tell what %s was made from; pass "
                       "--overwrite to relearn it" % (path, problem, vocab_path))


def write_sidecar(vocab_path: str, fingerprint: Fingerprint,
                  stores: Optional[ObjectStores] = None) -> None:
    file_io.write_json(sidecar_path(vocab_path), fingerprint, stores)
