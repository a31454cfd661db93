"""`--output_format text` and `text.gz`: the pairs as line-aligned text, a shard being two
files named with the pair's languages, `{shard}.{src}` and `{shard}.{tgt}` (`.en`, `.zh`;
`.en.gz`, `.zh.gz`), as OpusFilter, Marian and fairseq-preprocess (`--trainpref
{shard} --source-lang en --target-lang zh`) expect them.

The languages are a language pair's own (its shards are `{problem}~{src}-{tgt}-...`, so the
name says them), or for a one-pair output the run's `(source, target)` languages
(`ShardNames.langs`, which the summary records as `languages`): --source_lang and
--target_lang, else the train files' extensions, else `src` and `tgt`. A pair with the same
language on both sides (`en-en`) is named `src` and `tgt` too: its two files would have one
name. The format object is bound to a pair of languages (`for_langs`); the registry's are
bound to `src` and `tgt`, the names of outputs written before languages named them.
"""

import contextlib
import gzip
import itertools
import os
import tempfile
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional, Sequence, Tuple

from transforms.formats.example_proto import Int64FeaturesWriter
from transforms.shards.format_base import (COPY_BYTES, DEFAULT_LANGS, FEATURES,
                                           SCRATCH_PREFIX, RecordFormat, file_io_module,
                                           local_copy, summed)

if TYPE_CHECKING:
    from transforms.storage.object_stores import ObjectStores


def text_langs(langs: Sequence[str]) -> Tuple[str, str]:
    """The languages a text shard's two files end with: `langs`, or `src` and `tgt` when
    they are missing or the same (two files cannot have one name)."""
    if len(langs) != 2 or not langs[0] or not langs[1] or langs[0] == langs[1]:
        return DEFAULT_LANGS
    return langs[0], langs[1]


class TextFormat(RecordFormat):
    """`text`: each line a side's text and "\\n" (what Marian, OpenNMT-py, Sockeye and
    OpusFilter read). A record is an Example with the two sides as bytes features `inputs`
    and `targets` (`text_record`), so fragments, merging and the shuffle stay the formats'.
    `text.gz`: the same files gzipped, with no name and mtime 0 in the header, so a rerun
    writes the same bytes. The shard's size and crc32c are of its two files in order.
    `langs` None: a name whose other file is unknown (`files` refuses)."""
    name = "text"
    extension = ""  # after the language: ".gz" for text.gz
    compressed = False

    def __init__(self, langs: Optional[Sequence[str]] = DEFAULT_LANGS) -> None:
        self.langs = None if langs is None else text_langs(langs)
        src, tgt = self.langs or ("", "")
        self.suffix = "." + src + self.extension if src else ""
        self.other_suffixes = ("." + tgt + self.extension,) if tgt else ()

    def for_langs(self, langs: Optional[Sequence[str]]) -> RecordFormat:
        wanted = None if langs is None else text_langs(langs)
        return self if wanted == self.langs else type(self)(wanted)

    def files(self, name: str) -> Tuple[str, ...]:
        if self.langs is None:
            raise ValueError("%s: a text shard whose output's languages are unknown: read it "
                             "through its output directory (the summary names them)" % name)
        other = self.other_suffixes[0]
        if name.endswith(other) and not name.endswith(self.suffix):  # the target's file
            return name[:len(name) - len(other)] + self.suffix, name
        return super().files(name)

    def _sink(self, path: str) -> Any:
        raw = open(path, "wb")
        if not self.compressed:
            return raw
        return _ClosingGzip(gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0), raw)

    def write_shard(self, path: str, records: Iterable[bytes],
                    stores: Optional["ObjectStores"] = None,
                    checksum: Optional[Any] = None,
                    features: Sequence[str] = FEATURES) -> Tuple[int, int]:
        parse = Int64FeaturesWriter().parse_all
        count = size = 0
        with tempfile.TemporaryDirectory(prefix="%s%d-" % (SCRATCH_PREFIX, os.getpid())) as tmp:
            local = [os.path.join(tmp, "source"), os.path.join(tmp, "target")]
            with contextlib.closing(self._sink(local[0])) as source, \
                    contextlib.closing(self._sink(local[1])) as target:
                for record in records:
                    sides = parse(bytes(record))
                    source.write(sides["inputs"] + b"\n")
                    target.write(sides["targets"] + b"\n")
                    count += 1
            for written, final in zip(local, self.files(path)):
                with open(written, "rb") as f:
                    size += file_io_module().write_chunks(final, summed(
                        iter(lambda: f.read(COPY_BYTES), b""), checksum), stores)[1]
        return count, size

    def read_shard(self, path: str, stores: Optional["ObjectStores"] = None) -> Iterator[bytes]:
        examples = Int64FeaturesWriter()
        with contextlib.ExitStack() as stack:
            sides = []
            for name in self.files(path):
                local = stack.enter_context(local_copy(name, stores))
                f = stack.enter_context(gzip.open(local, "rb") if self.compressed
                                        else open(local, "rb"))
                sides.append(f)
            for source, target in itertools.zip_longest(*sides):
                if source is None or target is None:
                    raise ValueError("%s: its two files have different line counts" % path)
                yield text_record(source.rstrip(b"\n"), target.rstrip(b"\n"), examples)


class GzipTextFormat(TextFormat):
    name, extension = "text.gz", ".gz"
    compressed = True


class _ClosingGzip:
    """A GzipFile that closes the file under it too (GzipFile leaves a `fileobj` open)."""

    def __init__(self, gz: Any, raw: Any) -> None:
        self._gz, self._raw = gz, raw

    def write(self, data: bytes) -> int:
        return int(self._gz.write(data))

    def close(self) -> None:
        self._gz.close()
        self._raw.close()


def text_record(source: bytes, target: bytes,
                examples: Optional[Int64FeaturesWriter] = None) -> bytes:
    """The record of a text pair: an Example with bytes features `inputs` and `targets`
    (`examples`: a writer to reuse; making one builds its message class)."""
    return (examples or Int64FeaturesWriter()).serialize({"inputs": source, "targets": target})
