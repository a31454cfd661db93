"""What the worker processes' fork server imports before it forks (`local_worker_pool`),
read from the command line before Beam's import: what every pass needs, then the modules of
the job's own vocabulary kind only (`CodecKind.worker_modules`, by `--vocab_type`).

A subword job's workers run numba's compiled loops (the token index, the encoders), which
`pipeline.runtime.worker_warmup` loads in the server once; the other kinds' workers never
call them. Loading numba and those loops cost the server ~1.4 s of CPU and ~135 MB for
nothing in a byte_bpe, word or sentencepiece job (a word job at 100k pairs is ~12 s of CPU in
all; issue 51 item 7, benchmarks/bench_kinds_vs_libraries.py). A command line that does not
say the kind plainly (no argv, a value the real parse will refuse) preloads every kind's.
"""

import argparse
from typing import Optional, Sequence, Tuple

SDK_WORKER = "apache_beam.runners.worker.sdk_worker"
# Every worker, whatever the kind: Beam's harness and the project's transforms.
# `worker_start` first: the console set-up, before Beam's import logs "apitools not found ..."
# (the fork server is a fresh interpreter).
COMMON = ("pipeline.runtime.worker_start", "apache_beam", SDK_WORKER,
          "pipeline.runtime.local_worker_pool", "transforms.vocab.token_counts",
          "transforms.encode.encode_pairs", "transforms.codecs.kinds",
          "transforms.vocab.learners")


def preload(argv: Optional[Sequence[str]] = None) -> Tuple[str, ...]:
    """The modules the fork server imports for a job run with `argv` (None: any job)."""
    from transforms.codecs.kinds import CODEC_KINDS, CodecKind
    from transforms.contracts.config import VocabConfig
    from transforms.contracts.settings import flag_fields
    kinds: Tuple[CodecKind, ...] = CODEC_KINDS
    if argv is not None:  # the kind's flag and its default, as VocabConfig declares them
        flag, default = next((flag, declared.default) for name, flag, declared
                             in flag_fields(VocabConfig) if name == "vocab_type")
        parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False,
                                         exit_on_error=False)
        parser.add_argument("--" + flag)
        try:
            name = getattr(parser.parse_known_args(list(argv))[0], flag) or default
        except argparse.ArgumentError:
            name = None
        kinds = tuple(kind for kind in CODEC_KINDS if kind.name == name) or CODEC_KINDS
    return COMMON + tuple(module for kind in kinds for module in kind.worker_modules)
