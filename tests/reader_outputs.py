"""Small complete outputs written as the job leaves them, for the readers' tests: per problem
its shards (through the record formats' own writers), a summary listing each shard's size
(and, for several language pairs, each pair's shards), then the marker. No job is run: these
are the files a reader is handed, nothing more.
"""

import json
import os

from transforms.formats.example_proto import Int64FeaturesWriter


def write_output(directory, problem, fmt, pairs_by_lang, shards=2, flags=None, vocab=None,
                 **summary_fields):
    """One complete output of `problem` in the record format `fmt` into `directory`.
    `pairs_by_lang`: {language pair: [(inputs, targets) or {feature: ids}, ...]}; a single
    key None writes one pair's shards (`{problem}-train-...`), else each pair's own
    (`{problem}-{pair}-train-...`) and the summary's `language_pairs`. Returns the summary
    written. `summary_fields`: more of the summary's fields (a `fingerprint`)."""
    examples = Int64FeaturesWriter()
    listed, books = [], {}
    for lang_pair, pairs in sorted(pairs_by_lang.items(), key=lambda kv: kv[0] or ""):
        head = problem if lang_pair is None else "%s-%s" % (problem, lang_pair)
        records = [examples.serialize(p if isinstance(p, dict) else
                                      {"inputs": p[0], "targets": p[1]}) for p in pairs]
        names = []
        for shard in range(shards):
            name = "%s-train-%05d-of-%05d%s" % (head, shard, shards, fmt.suffix)
            count, size = fmt.write_shard(os.path.join(directory, name), records[shard::shards])
            listed.append({"name": name, "records": count, "bytes": size})
            names.append(name)
        if lang_pair is not None:
            books[lang_pair] = {"shards": names, "pairs_written": len(pairs), "weight": 1.0}
    train = {"shards": listed, "pairs_written": sum(map(len, pairs_by_lang.values()))}
    if books:
        train["language_pairs"] = books
    summary = {"problem": problem, "status": "complete", "output_dir": str(directory),
               "flags": dict({"vocab_type": "subword"}, **(flags or {})),
               "splits": {"train": train}}
    if vocab is not None:
        summary["vocab"] = vocab
    summary.update(summary_fields)
    with open(os.path.join(directory, "%s.datagen_summary.json" % problem), "w") as f:
        json.dump(summary, f)
    with open(os.path.join(directory, "%s.DATAGEN_COMPLETE" % problem), "w") as f:
        f.write("2026-12-01T00:00:00+00:00\n")
    return summary


def numbered_pairs(first, count):
    """`count` distinct T2T-style pairs: inputs [first + k, 1], targets [first + k, k + 2, 1]."""
    return [([first + k, 1], [first + k, k + 2, 1]) for k in range(count)]
