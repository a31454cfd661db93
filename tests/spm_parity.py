"""The SentencePiece kind's parity harness: a finished output held against SentencePiece itself.

- model parity: each learnt model is byte-identical to what `SentencePieceTrainer.train`
  makes from the same sampled lines (T2T's byte-budget sample, read here with
  `text_lines.sample_lines_for_vocab`, file by file) with only the options the model records
  in its own `trainer_spec`/`normalizer_spec`;
- id parity: the records are, as a multiset, `SentencePieceProcessor.encode(line)` + the
  model's EOS id of every line pair with no empty side.
"""

import collections
import glob
import json
import os

import sentencepiece

from datagen_helpers import read_examples
from transforms.codecs.sentencepiece_model import recorded_options, option_text
from transforms.codecs.sentencepiece_vocabulary import MODEL_FILE
from transforms.formats.text_lines import iter_raw_lines, sample_lines_for_vocab


def sampled_lines(paths, byte_budget=1e8):
    """The job's vocabulary sample of `paths`, in order (T2T's `generate_lines_for_vocab`)."""
    lines = []
    for path in paths:
        with open(path, "rb") as f:
            lines.extend(sample_lines_for_vocab(iter_raw_lines(f), os.path.getsize(path),
                                                byte_budget, path))
    return lines


def retrained(model_bytes, lines):
    """SentencePiece's trainer on `lines` with only the options `model_bytes` records."""
    out = []
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=type("W", (), {"write": out.append})(),
        minloglevel=2,
        **{k: option_text(v) for k, v in recorded_options(model_bytes).items()})
    return out[0]


def summary(output_dir, problem):
    with open(os.path.join(str(output_dir), "%s.datagen_summary.json" % problem)) as f:
        return json.load(f)


def model_bytes(vocab_path):
    with open(os.path.join(vocab_path, MODEL_FILE), "rb") as f:
        return f.read()


def vocab_models(output_dir, problem):
    """{vocab name: model bytes} of the vocabularies the summary lists."""
    vocab = summary(output_dir, problem)["vocab"]
    return {name: model_bytes(os.path.join(str(output_dir), os.path.basename(v["path"])))
            for name, v in vocab.items() if isinstance(v, dict) and "path" in v}


def expected_records(source, target, source_model, target_model):
    """Counter of (inputs, targets) ids: each side's `encode(line) + [eos]`, pairs with an
    empty (stripped) side dropped."""
    processors = [sentencepiece.SentencePieceProcessor(model_proto=m)
                  for m in (source_model, target_model)]
    records = collections.Counter()
    with open(source, encoding="utf-8") as fs, open(target, encoding="utf-8") as ft:
        for a, b in zip(fs, ft):
            a, b = a.strip(), b.strip()
            if a and b:
                records[tuple(tuple(p.encode(text) + [p.eos_id()])
                              for p, text in ((processors[0], a), (processors[1], b)))] += 1
    return records


def written_records(output_dir, problem, split="train"):
    records = collections.Counter()
    for path in sorted(glob.glob(os.path.join(str(output_dir), "%s-%s-*" % (problem, split)))):
        records.update(read_examples(path))
    return records


def check_output(output_dir, problem, source, target, byte_budget=1e8, learnt=True):
    """Asserts model parity (when `learnt`) and id parity of a finished train output of the
    pair `source`, `target`; returns {vocab name: model bytes}."""
    models = vocab_models(output_dir, problem)
    if learnt:
        sides = ({"shared": [source, target]} if "shared" in models
                 else {"source": [source], "target": [target]})
        for name, paths in sides.items():
            assert retrained(models[name], sampled_lines(paths, byte_budget)) == models[name], \
                "vocab %s: not the trainer's own model" % name
    src = models.get("source", models.get("shared"))
    tgt = models.get("target", models.get("shared"))
    assert written_records(output_dir, problem) == expected_records(source, target, src, tgt)
    return models
