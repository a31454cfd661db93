"""Helpers for PTransform unit tests: an in-process TestPipeline and tiny input files."""

import gzip

from apache_beam.testing.test_pipeline import TestPipeline


def test_pipeline():
    """A TestPipeline on FnApiRunner: in-process and quick to start.

    The default DirectRunner first hands a pipeline to the Prism runner (a separate process,
    downloaded on first use), which costs seconds per pipeline on inputs of a few lines.
    """
    return TestPipeline(runner="FnApiRunner")


test_pipeline.__test__ = False  # a factory, not a test


def write(path, data):
    """Writes bytes (or UTF-8 text) to `path`, gzip-compressed when it ends in `.gz`."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(data)
    return str(path)


# A tiny subword vocabulary for encode tests: enough for the lines `chunked_pair` writes.
TINY_SUBTOKENS = ["<pad>", "<EOS>", "hello_", "world_", "你好_", "世界_", "_"] + list(
    "helowrd你好世界!")


def chunked_pair(directory, source, target, split_at=3):
    """Writes the tiny vocabulary and a line-aligned pair (`source`, `target`: lists of
    lines) under `directory`; returns (vocab path, the encode chunks of the pair: lines
    before `split_at` and from it, with the seek points a scan would find)."""
    from transforms.codecs.subword import vocab_file_text
    from transforms.encode.encode_pairs import plan_chunks
    vocab = write(directory / "vocab.txt", vocab_file_text(TINY_SUBTOKENS))
    src = write(directory / "s.en", "\n".join(source) + "\n")
    tgt = write(directory / "s.zh", "\n".join(target) + "\n")
    ds = {"split": "train", "name": "s.en", "index": 0, "source": src, "target": tgt}
    facts = [{"lines": len(lines), "checkpoints": [
        (0, 0), (split_at, len("\n".join(lines[:split_at]).encode("utf-8")) + 1)]}
        for lines in (source, target)]
    return vocab, plan_chunks(ds, src, tgt, *facts)


ENCODE_SEED = 7  # the seed of `encode_tiny_pairs`, for the shuffle keys a test expects


def encode_tiny_pairs(vocab, work_dir, shards):
    """EncodePairs (the default config, seed ENCODE_SEED) with the tiny vocabulary `vocab`
    (from `chunked_pair`) on both sides and `shards` ({split: shard count}); its fragments
    go to `work_dir`/fragments, made here. Apply it to the chunks."""
    import os
    from pipeline.driver.options import default_config
    from transforms.codecs.subword_vocabulary import SubwordVocabulary
    from transforms.codecs.vocabulary import VocabularyLoader
    from transforms.encode.encode_pairs import EncodePairs
    fragments = os.path.join(str(work_dir), "fragments")
    os.makedirs(fragments)
    return EncodePairs(VocabularyLoader(SubwordVocabulary), vocab, vocab, ENCODE_SEED, shards,
                       fragments, default_config())
