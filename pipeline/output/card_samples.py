"""The sample pairs of the dataset card (`pipeline.output.card`): a handful per language pair
and split, drawn across the whole of its shards with the run's seed, decoded back to text
with the output's own vocabulary files.

Why drawn and not the first records: `head` of a corpus misleads (one source's lines come
first; the global shuffle hides that only partly when a split has one dataset), so the
positions are `random.Random(seed).sample` of every record position of the pair's shards,
in the order a trainer reads them (shard names sorted). Only the shards holding a drawn
position are read, each once, up to its last drawn record: the card costs a few shard reads,
never a second pass over the output. The positions depend only on the seed and the record
counts the summary holds, so a rerun's card is byte-identical.
"""

import itertools
import random
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from pipeline.output.layout import summary_languages
from transforms.codecs.kinds import codec_kind
from transforms.codecs.vocabulary import Vocabulary
from transforms.formats.example_proto import PAIR_FEATURE, Int64FeaturesWriter
from transforms.formats.packed_examples import unpack
from transforms.shards.record_formats import format_of
from transforms.storage import paths
from transforms.storage.object_stores import ObjectStores
from transforms.storage.vocab_files import VocabularyFiles

SAMPLES_PER_SPLIT = 4  # sample pairs per language pair and split
Sample = Dict[str, Any]  # {"position", "source", "target"} (and "lang_pair" when mixed)


def draw_positions(counts: Sequence[int], n: int, seed: Any) -> List[Tuple[int, int, int]]:
    """[(position in the whole, shard index, index in that shard)] of `n` record positions
    drawn uniformly from shards holding `counts` records, in reading order."""
    total = sum(counts)
    drawn = sorted(random.Random(seed).sample(range(total), min(n, total)))
    out: List[Tuple[int, int, int]] = []
    start, shard = 0, 0
    for position in drawn:
        while position >= start + counts[shard]:
            start += counts[shard]
            shard += 1
        out.append((position, shard, position - start))
    return out


class SampleDecoder:
    """Decodes records of an output with its vocabulary files (found by base name in the
    output directory, as `pipeline.tools.inspect` finds them): each side's EOS ids
    stripped, a language tag shown as its token."""

    def __init__(self, output_dir: str, summary: Dict[str, Any],
                 stores: Optional[ObjectStores] = None) -> None:
        self._output_dir = output_dir
        self._stores = stores
        self._summary = summary
        self._loaded: Tuple[Vocabulary, ...] = ()  # loaded when a record holds ids
        self._tags = {t["id"]: t["token"] for t in (summary.get("lang_tags") or {}).values()}
        self._parse = Int64FeaturesWriter().parse_all

    def _sides(self) -> Tuple[Vocabulary, ...]:
        """The source and target vocabularies (one object twice when shared)."""
        if not self._loaded:
            summary = self._summary
            kind = codec_kind(summary["flags"]["vocab_type"])
            files = VocabularyFiles(kind.loader(summary["flags"]), self._stores)
            vocab = summary["vocab"]
            names = ("shared", "shared") if "shared" in vocab else ("source", "target")
            loaded: Dict[str, Vocabulary] = {}
            for name in names:
                if name not in loaded:
                    base = vocab[name]["path"].rstrip("/").rsplit("/", 1)[-1]
                    loaded[name] = files.load(paths.join(self._output_dir, base))
            self._loaded = tuple(loaded[name] for name in names)
        return self._loaded

    def _text(self, side: int, ids: Sequence[int]) -> str:
        vocabulary = self._sides()[side]
        eos = vocabulary.eos_ids()
        body = list(ids[:-len(eos)] if eos and list(ids[-len(eos):]) == eos else ids)
        head = ""
        if side == 0 and body and body[0] in self._tags:
            head, body = self._tags[body[0]] + " ", body[1:]
        return head + vocabulary.decode(body)

    def sample(self, record: bytes, position: int) -> Sample:
        """The record's pair as text (a packed record: its first pair)."""
        features = self._parse(record)
        pair = features.pop(PAIR_FEATURE, None)
        if "inputs_segmentation" in features:
            inputs, targets = next(iter(unpack(features)))
        else:
            inputs, targets = features.get("inputs", []), features.get("targets", [])
        if isinstance(inputs, bytes):  # a text output's record holds the text
            out: Sample = {"position": position, "source": inputs.decode("utf-8", "replace"),
                           "target": targets.decode("utf-8", "replace")}
        else:
            out = {"position": position, "source": self._text(0, inputs),
                   "target": self._text(1, targets)}
        if pair is not None:
            out[PAIR_FEATURE] = pair.decode("utf-8", "replace")
        return out

    def draw(self, shards: Sequence[Tuple[str, int]], seed: Any,
             n: int = SAMPLES_PER_SPLIT) -> List[Sample]:
        """`n` samples of the shards [(name, records)], drawn with `seed`."""
        ordered = sorted(shards)
        positions = draw_positions([count for _, count in ordered], n, seed)
        samples: List[Sample] = []
        for shard, group in itertools.groupby(positions, key=lambda p: p[1]):
            wanted = list(group)
            path = paths.join(self._output_dir, ordered[shard][0])
            records = iter(format_of(path, [summary_languages(self._summary)]).read_shard(
                path, self._stores))
            at = 0
            for position, _, index in wanted:
                record = next(itertools.islice(records, index - at, None))
                at = index + 1
                samples.append(self.sample(record, position))
        return samples

