"""Committing a run's output: the shards and rejects files move from the work directory into
place, replacing any previous output (the length report of the previous run goes with its
shards), then the length report and the summary are written, and the completion marker last.

The order is the contract readers and reruns rely on: the old marker goes first, so a crash
while files are being replaced never looks complete; the new marker goes last, after the
summary, so its presence means every file of this run is there. Beam's FileSystems do the
moves, so this works on object stores too (where a "directory" is only a name prefix).
"""

import logging
import os
import shutil
import tempfile
from typing import Any, Dict, Iterable, List, Optional, Sequence

from apache_beam.io.filesystems import FileSystems

from pipeline.output.card import CARD_MARK, card_pairs, render_card
from pipeline.output.card_samples import SampleDecoder
from pipeline.output.layout import REJECTS_NAME, WORK_NAME, OutputLayout
from pipeline.output.length_report import render_length_report
from pipeline.output.own_outputs import old_shards
from pipeline.runtime.interrupts import process_alive
from transforms.contracts.config import CorpusConfig
from transforms.contracts.elements import RejectsReport, ShardReport
from transforms.shards.format_base import scratch_pid
from transforms.shards.record_formats import SPLITS
from transforms.storage.object_stores import ObjectStores
from transforms.storage import file_io

LOG = logging.getLogger("datagen")


def promote_outputs(layout: OutputLayout, shards: Iterable[ShardReport],
                    rejects: Iterable[RejectsReport], stores: Optional[ObjectStores] = None,
                    pairs: Iterable[str] = (), shards_dir: Optional[str] = None,
                    previous_langs: Sequence[str] = ()) -> None:
    """Replaces every previous shard and rejects file with this run's (`shards`, `rejects`:
    what the encode pass reported; `pairs`: the language pairs whose own shards are the
    job's, this run's and the previous output's; `shards_dir`: where the pass wrote the
    shards, the work directory's `shards` unless given; `previous_langs`: the languages
    the previous output's text shards end with); removes the completion marker first, and
    the previous length report (it describes the old shards; `mark_complete` writes the new
    one)."""
    file_io.delete_tree(layout.complete_path, stores)
    file_io.delete_tree(layout.lengths_report_path, stores)
    old: list[str] = []
    for split in SPLITS:
        previous, others = old_shards(layout, split, stores, pairs,  # a user's notes stay
                                      [layout.shards.langs, previous_langs])
        old.extend(previous)
        if others:
            LOG.warning("left alone in --output_dir (not shards of this job, but a reader's "
                        "%s-%s* glob sees them): %s", layout.problem, split,
                        ", ".join(sorted(p.rsplit("/", 1)[-1] for p in others)))
    file_io.delete_files(old, stores)
    for split in SPLITS:
        file_io.delete_tree(layout.rejects_path(split), stores)
    shards_dir = shards_dir or layout.work("shards")
    names = [name for s in shards for name in layout.shards.files(s["name"])]
    file_io.move_files([FileSystems.join(shards_dir, name) for name in names],
                       [layout.path(name) for name in names], stores)
    written_rejects = [r for r in rejects if r["rejected"]]
    if written_rejects:
        try:
            FileSystems.mkdirs(layout.path(REJECTS_NAME))
        except OSError:  # an earlier run's (emptied above: a local directory stays)
            if not FileSystems.exists(layout.path(REJECTS_NAME)):
                raise
        file_io.move_files(
            [FileSystems.join(layout.work("rejects"), r["name"]) for r in written_rejects],
            [layout.rejects_path(r["split"]) for r in written_rejects], stores)


def mark_complete(layout: OutputLayout, summary: Dict[str, Any],
                  stores: Optional[ObjectStores] = None,
                  corpora: Sequence[CorpusConfig] = ()) -> None:
    """Writes the length report, the dataset card and the summary, then the completion
    marker (its finish time): last of all. Each is written whole
    (`file_io.write_bytes_atomically`; `stores`: the job's ObjectStores); `corpora`: the
    run's, whose licences and sources the card names."""
    file_io.write_bytes_atomically(layout.lengths_report_path,
                                   render_length_report(summary).encode("utf-8"), stores)
    write_card(layout, summary, corpora, stores)
    file_io.write_json(layout.summary_path, summary, stores)
    file_io.write_bytes_atomically(layout.complete_path,
                                   (summary["finished_at"] + "\n").encode(), stores)


def write_card(layout: OutputLayout, summary: Dict[str, Any], corpora: Sequence[CorpusConfig],
               stores: Optional[ObjectStores] = None) -> bool:
    """Writes the dataset card (`pipeline.output.card`) with its samples drawn from the
    committed shards; a README.md that is not this problem's card is left alone (False)."""
    path = layout.card_path
    if file_io.exists(path):
        mark = CARD_MARK % layout.problem
        if mark not in file_io.read_bytes(path, stores).decode("utf-8", "replace"):
            LOG.warning("%s is not this problem's dataset card: left alone, no card written",
                        path)
            return False
    decoder = SampleDecoder(layout.output_dir, summary, stores)
    samples = {pair["name"]: {
        split: decoder.draw(f["shard_records"], "%s\0%s\0%s" % (summary["seed"], pair["name"],
                                                                  split))
        for split, f in pair["splits"].items() if f["shard_records"]}
        for pair in card_pairs(summary, corpora)}
    file_io.write_bytes_atomically(
        path, render_card(summary, corpora, samples).encode("utf-8"), stores)
    return True


def remove_work_dir(layout: OutputLayout, stores: Optional[ObjectStores] = None) -> None:
    """Deletes this problem's work directories (this run's and any a killed run left), and
    the shared parent if it is then empty. Another problem's run sharing --output_dir may be
    working in that parent right now: on a local disk it goes by `os.rmdir`, which removes
    only an empty directory, at once (a listing would not do: Beam's local file system lists
    no directories, so a parent holding only another run's directory looks empty)."""
    file_io.delete_tree(layout.problem_work_dir, stores)
    parent = layout.path(WORK_NAME)
    if not file_io.is_local(parent):  # an object store has no directories to remove
        return
    try:
        os.rmdir(parent)
    except OSError:  # not empty (another problem's run), or gone already
        pass


def remove_orphan_scratch(directory: Optional[str] = None) -> List[str]:
    """Removes the scratch directories of shard writers (`transforms.shards.record_formats`
    SCRATCH_PREFIX, in the system's temporary directory, or `directory`) whose process is
    gone: worker processes killed with an interrupted pass, or by a kill -9 of the job, could
    not remove their own. A directory of a live process (another job's worker writing) is
    left alone. Returns the paths removed."""
    directory = directory or tempfile.gettempdir()
    removed: List[str] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        pid = scratch_pid(name)
        if pid is not None and not process_alive(pid):
            path = os.path.join(directory, name)
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
