"""fairseq's data-bin of a `--output_format fairseq` run, assembled at the commit from the
job's `.fairseq` shards.

fairseq-train reads one `.bin`/`.idx` per split, language pair and side; the job writes a
split as several shards, each a contiguous range of the shuffle's key space, so the shards
read in shard order are the split's pairs in the job's shuffled order (reproducible for a
seed). `{problem}.data-bin/` gets, per language pair `{src}-{tgt}` (the pair's own shards,
or `--source_lang`/`--target_lang`, `src`/`tgt` without them):

    train.{src}-{tgt}.{src}.bin/.idx, train.{src}-{tgt}.{tgt}.bin/.idx   (the train split)
    valid.{src}-{tgt}.{src}.bin/.idx, valid.{src}-{tgt}.{tgt}.bin/.idx   (the dev split)
    dict.{src}.txt, dict.{tgt}.txt

as `fairseq-preprocess --dataset-impl mmap` names and writes them, with the ids mapped as
`transforms.formats.fairseq_bin` says. The shards stay: they are the job's books (counts,
checksums, `inspect`). Each file is written whole (`file_io`'s atomic writes), after the
shards are in place and before the completion marker, so a complete output has all of them.
"""

from typing import Callable, Dict, Iterable, Iterator, List, Optional, Tuple

import numpy as np

from pipeline.output.layout import OutputLayout
from transforms.codecs.vocabulary import Vocabulary
from transforms.contracts.elements import ShardReport
from transforms.formats import fairseq_bin
from transforms.shards.format_base import local_copy
from transforms.shards.record_formats import pair_languages
from transforms.storage import file_io, paths
from transforms.storage.object_stores import ObjectStores

DATA_BIN_SUFFIX = ".data-bin"  # {problem}.data-bin: fairseq-train's DATA directory


def data_bin_dir(layout: OutputLayout) -> str:
    return layout.path(layout.problem + DATA_BIN_SUFFIX)


def _pair_langs(pair: Optional[str], langs: Tuple[str, str]) -> Tuple[str, str]:
    return pair_languages(pair) if pair else langs


def _sides(path: str, stores: Optional[ObjectStores]
           ) -> Iterator[Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The shard's (inputs, input sizes, targets, target sizes), read through a memory map."""
    with local_copy(path, stores) as local:
        data = np.memmap(local, dtype=np.uint8, mode="r")
        try:
            yield fairseq_bin.read_shard(data)
        finally:
            del data


def commit_data_bin(layout: OutputLayout, shards: Iterable[ShardReport],
                    vocab_paths: Tuple[str, str],
                    load_vocab: Optional[Callable[[str], Vocabulary]],
                    langs: Tuple[str, str], stores: Optional[ObjectStores] = None,
                    tags: Optional[Dict[int, str]] = None) -> None:
    """After the commit: a fairseq output's data-bin written (`load_vocab` reads a vocabulary
    file), or, for any other format (`load_vocab` None), a previous fairseq run's removed
    (it would describe shards that are gone)."""
    if load_vocab is None:
        file_io.delete_tree(data_bin_dir(layout), stores)
        return
    source = load_vocab(vocab_paths[0])
    target = source if vocab_paths[1] == vocab_paths[0] else load_vocab(vocab_paths[1])
    write_data_bin(layout, shards, (source, target), langs, stores, tags)


def write_data_bin(layout: OutputLayout, shards: Iterable[ShardReport],
                   vocabs: Tuple[Vocabulary, Vocabulary], langs: Tuple[str, str],
                   stores: Optional[ObjectStores] = None,
                   tags: Optional[Dict[int, str]] = None) -> Dict[str, int]:
    """Writes `{problem}.data-bin/` from the committed shards (`shards`: the encode pass's
    reports); `vocabs`: (source, target) vocabularies, the same object when shared;
    `langs`: the run's (source, target) languages; `tags`: {id: language tag} of the source
    vocabulary (the summary's `lang_tags`). Returns {file name: sentences}."""
    out = data_bin_dir(layout)
    file_io.delete_tree(out, stores)  # a previous run's
    shared = vocabs[0] is vocabs[1]
    ids = [fairseq_bin.FairseqIds(v.vocab_size, v.pad_id(), v.eos_ids()) for v in vocabs]
    if shared:
        ids[1] = ids[0]
    groups: Dict[Tuple[str, str], List[ShardReport]] = {}
    for shard in shards:
        groups.setdefault((shard["split"], shard.get("pair", "")), []).append(shard)
    counts = [np.zeros(v.vocab_size, dtype=np.int64) for v in vocabs]
    written: Dict[str, int] = {}
    dict_langs: Dict[str, int] = {}
    for (split, pair), reports in sorted(groups.items()):
        src, tgt = _pair_langs(pair, langs)
        dict_langs.update({src: 0, tgt: 1})
        prefix = "%s.%s-%s." % (fairseq_bin.SPLIT_NAMES[split], src, tgt)
        for side, lang in ((0, src), (1, tgt)):
            sizes: List[np.ndarray] = []

            def chunks() -> Iterator[bytes]:
                for report in sorted(reports, key=lambda r: r["shard"]):
                    for sides in _sides(layout.path(report["name"]), stores):
                        tokens, lengths = sides[2 * side], sides[2 * side + 1]
                        if split == "train":
                            target = counts[0] if shared else counts[side]
                            target += np.bincount(tokens, minlength=len(target))[:len(target)]
                        mapped = ids[side].map(tokens)
                        if ids[side].append_eos:
                            mapped = np.insert(mapped, np.cumsum(lengths), fairseq_bin.EOS)
                            lengths = lengths + 1
                        sizes.append(lengths)
                        yield mapped.astype(ids[side].dtype).tobytes()

            file_io.write_chunks(paths.join(out, prefix + lang + ".bin"), chunks(),
                                 stores)
            all_sizes = np.concatenate(sizes) if sizes else np.zeros(0, np.int32)
            file_io.write_bytes_atomically(
                paths.join(out, prefix + lang + ".idx"),
                fairseq_bin.index_bytes(all_sizes, ids[side].dtype), stores)
            written[prefix + lang] = len(all_sizes)
    for lang, side in sorted(dict_langs.items()):
        text = fairseq_bin.dict_lines(ids[side], vocabs[side].entry,
                                      counts[0] if shared else counts[side],
                                      tags if shared or side == 0 else None)
        file_io.write_bytes_atomically(paths.join(out, "dict.%s.txt" % lang),
                                       text.encode("utf-8"), stores)
    return written
