"""The whole job under a low open-file limit: with one-line encode chunks a shard has a fragment
per line, thousands, and its merge reads at most MERGE_FAN_IN of them at once (issue 49, item
2). Before, the merge opened every fragment of its shard and the job ended with `Too many
open files` under `ulimit -n 256`. The shards are byte-identical to a run of the default chunk
size."""

import os
import resource
import subprocess
import sys

import pytest

from datagen_helpers import HANG_SECONDS, MLQE, output_bytes, run_datagen
from repo_paths import REPO_ROOT
from transforms.shards.shard_fragments import RUNS_DIR

pytestmark = pytest.mark.slow  # two whole jobs

OPEN_FILES = 256  # `ulimit -n 256`
FLAGS = ["--problem", "p", "--vocab_size", 300, "--num_train_shards", 1, "--seed", 5,
         "--dev_source", os.path.join(MLQE, "dev.en"),
         "--dev_target", os.path.join(MLQE, "dev.zh")]


def _low_limit():
    resource.setrlimit(resource.RLIMIT_NOFILE,
                       (OPEN_FILES, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def test_the_job_writes_shards_of_thousands_of_fragments_under_ulimit_256(tmp_path):
    train = [os.path.join(MLQE, "train." + lang) for lang in ("en", "zh")]
    small = tmp_path / "one-line-chunks"
    argv = ([sys.executable, "-m", "pipeline.datagen", "--output_dir", str(small),
             "--runner", "FnApiRunner", "--train_source", train[0], "--train_target", train[1],
             "--encode_chunk_lines", "1", "--fragment_group_mb", "0.0001"]  # a file a chunk
            + [str(flag) for flag in FLAGS])
    done = subprocess.run(argv, cwd=REPO_ROOT, preexec_fn=_low_limit, capture_output=True,
                          text=True, timeout=4 * HANG_SECONDS)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Too many open files" not in done.stderr

    default = tmp_path / "default-chunks"
    run_datagen(default, train[0], train[1], *FLAGS)
    made, expected = output_bytes(small), output_bytes(default)
    assert sorted(made) == sorted(expected) and made == expected
    assert len([name for name in made if "-train-" in name]) == 1  # 3,000 fragments merged
    assert not any(RUNS_DIR in name for name in made)
