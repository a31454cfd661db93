"""pipeline/output/commit: the scratch of shard writers whose process is gone (worker
processes killed with an interrupted pass, or a kill -9 of the job) is removed by the driver
at the start and the end of every run; a live process's is left alone (issue 42, item 11)."""

import os
import subprocess
import sys

from pipeline.output.commit import remove_orphan_scratch
from transforms.shards.format_base import SCRATCH_PREFIX


def test_the_scratch_of_gone_processes_is_removed_and_a_live_ones_kept(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(gone.stdout)
    dead = tmp_path / ("%s%d-abc" % (SCRATCH_PREFIX, dead_pid))
    live = tmp_path / ("%s%d-def" % (SCRATCH_PREFIX, os.getpid()))
    other = tmp_path / "datagen-sdist-xyz"
    for d in (dead, live, other):
        d.mkdir()
        (d / "shard.parquet").write_bytes(b"x" * 100)
    assert remove_orphan_scratch(str(tmp_path)) == [str(dead)]
    assert sorted(os.listdir(tmp_path)) == sorted([live.name, other.name])
