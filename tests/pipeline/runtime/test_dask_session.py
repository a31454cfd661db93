"""What the job's Dask session (pipeline/runtime/dask_session.py) says about a cluster, from
the facts it gathers (the runs against real clusters are in tests/end_to_end/
test_dask_cluster*.py): how a worker's project differs from the driver's, the line naming a
silent worker, and distributed's version table as one line."""

from pipeline.runtime import dask_worker
from pipeline.runtime.console import MAX_LINE
from pipeline.runtime.dask_session import describe_silent, difference, mismatched_versions

MINE = {"python": "3.11", "apache-beam": "2.77.0", "version": "0.1.0", "location": "/a",
        "code": "c0ffee"}


def test_this_interpreters_project_is_identified_by_its_versions_and_files():
    identity = dask_worker.project_identity()
    assert "error" not in identity
    assert identity == dask_worker.project_identity()  # the same files, the same digest
    assert len(identity["code"]) == 64 and identity["version"]
    assert difference(identity, dict(identity)) is None


def test_what_makes_a_worker_differ_from_the_driver():
    assert difference(MINE, dict(MINE)) is None
    assert difference(MINE, {"python": "3.11", "error": "no module named pipeline"}) == (
        "cannot import this project (no module named pipeline)")
    assert difference(MINE, dict(MINE, version="0.0.9")) == (
        "runs t2t-beam-datagen 0.0.9, the driver 0.1.0")
    assert difference(MINE, dict(MINE, version=None, python="3.12")) == (
        "runs Python 3.12, the driver 3.11; runs t2t-beam-datagen (none), the driver 0.1.0")
    assert difference(MINE, dict(MINE, code="beef", location="/b")) == (
        "runs t2t-beam-datagen 0.1.0 from other source files than the driver's (/b)")
    assert difference(MINE, ValueError("bad pickle")) == (
        "could not run the job's check (ValueError: bad pickle)")


def test_a_silent_worker_is_one_console_line():
    worker = {"address": "tcp://10.231.0.12:40211", "name": "worker-1", "silent": 21.4,
              "processing": 3, "status": "running"}
    line = describe_silent(worker, 300.0)
    assert line == ("Dask worker worker-1 (tcp://10.231.0.12:40211): silent 21 s, holds 3 "
                    "tasks, dropped at 300 s")
    assert len("20:18:26 WARNING pass 2: " + line) <= MAX_LINE
    assert describe_silent(dict(worker, processing=1), None).endswith(
        "holds 1 task, never dropped (no worker-ttl)")


def test_distributeds_version_table_is_one_line():
    table = ("Mismatched versions found\n\n"
             "+---------+--------+-----------+---------+\n"
             "| Package | Client | Scheduler | Workers |\n"
             "+---------+--------+-----------+---------+\n"
             "| numpy   | 2.1.0  | 2.0.1     | 2.0.1   |\n"
             "| pandas  | 3.1.1  | None      | None    |\n"
             "+---------+--------+-----------+---------+")
    assert mismatched_versions(table) == (
        "other package versions on the Dask cluster than the driver's: numpy: client 2.1.0, "
        "scheduler 2.0.1, workers 2.0.1; pandas: client 3.1.1, scheduler None, workers None")
