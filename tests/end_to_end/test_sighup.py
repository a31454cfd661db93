"""SIGHUP (a closed terminal or ssh session) ends the job as SIGTERM does
(`pipeline.runtime.interrupts`): one line "interrupted (SIGHUP)", exit 129, the summary says
interrupted, the lock is released, no worker process is left, and a rerun completes.
A real job subprocess with two worker processes; SIGHUP goes to its whole process group, as
the kernel sends it to a terminal's foreground group when the terminal closes."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import psutil
import pytest

from datagen_helpers import DIRECT_MP2
from pipeline import datagen
from repo_paths import REPO_ROOT as ROOT

pytestmark = pytest.mark.slow

SAMPLE = os.path.join(ROOT, "sample_data", "enzh-mlqe-pe")


def test_sighup_to_the_process_group_is_handled_like_sigterm(tmp_path):
    paths = []
    for lang in ("en", "zh"):
        with open(os.path.join(SAMPLE, "train." + lang), "rb") as f:
            data = b"".join(f.readline() for _ in range(300))
        (tmp_path / ("train." + lang)).write_bytes(data)
        paths.append(str(tmp_path / ("train." + lang)))
    out = tmp_path / "out"
    argv = ["--train_source", paths[0], "--train_target", paths[1], "--output_dir", str(out),
            "--problem", "p", "--num_train_shards", "2"] + DIRECT_MP2
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.datagen"] + argv, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        for line in proc.stderr:
            if re.search(r" pass 1( of ~?\d+)?: ", line):
                break
        deadline = time.time() + 120
        family = []
        while time.time() < deadline and proc.poll() is None:
            family = psutil.Process(proc.pid).children(recursive=True)
            if [c for c in family if c.ppid() != proc.pid]:  # the workers are up
                break
            time.sleep(0.1)
        assert proc.poll() is None, "the job ended before it could be stopped"
        os.killpg(proc.pid, signal.SIGHUP)
        err = proc.stderr.read()
        status = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert status == 128 + signal.SIGHUP, err
    assert "Traceback" not in err, err
    assert err.strip().splitlines()[-1].endswith("ERROR interrupted (SIGHUP)"), err
    time.sleep(0.5)
    assert [p.pid for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] \
        == []
    with open(out / "p.datagen_summary.json") as f:
        assert json.load(f)["status"] == "interrupted"
    assert not os.path.exists(out / "p.datagen.lock")
    assert datagen.main(argv) == 0
