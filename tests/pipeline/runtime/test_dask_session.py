"""What the job's Dask session (pipeline/runtime/dask_session.py) says about a cluster, from
the facts it gathers (the runs against real clusters are in tests/end_to_end/
test_dask_cluster*.py): how a worker's project differs from the driver's, the line naming a
silent worker, and distributed's version table as one line."""

from pipeline.runtime import dask_worker
from pipeline.runtime.dask_session import (DaskSession, describe_silent, difference,
                                           lost_worker_line, mismatched_versions)

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


def test_a_silent_worker_is_one_console_line_naming_the_setting_that_drops_it():
    """Issue 50, item 17: the line said "dropped at 300 s" of a worker dropped at 379 s. The
    scheduler checks every worker-ttl for workers silent longer than that, so it drops one
    after ttl to twice ttl: the line says so and names the setting."""
    worker = {"address": "tcp://10.231.0.12:40211", "name": "worker-1", "silent": 21.4,
              "processing": 3, "status": "running"}
    line = describe_silent(worker, 300.0)
    assert line == ("Dask worker worker-1 (tcp://10.231.0.12:40211): silent 21 s, holds 3 "
                    "tasks; the scheduler drops it after 300-600 s silent "
                    "(distributed.scheduler.worker-ttl 300 s)")
    assert "\n" not in line
    assert describe_silent(dict(worker, processing=1), None).endswith(
        "holds 1 task; never dropped (distributed.scheduler.worker-ttl is off)")


def _session_seeing(silent, present, ttl=300.0):
    """A DaskSession whose next scheduler view is `silent` workers of those `present` (no
    look of its own: its client is never asked)."""
    session = DaskSession({}, {})
    session.client = object()
    session._next_look = float("inf")
    session._view = ([dict(w, silent=30.0, processing=1, status="running") for w in silent],
                     ttl, set(present))
    return session


def test_a_silent_worker_dropped_is_not_said_to_answer_again():
    """Issue 50, item 17: a stopped worker its nanny killed "answers the scheduler again"."""
    w1 = {"address": "tcp://h:1", "name": "w1", "last_seen": 1000.0}
    w2 = {"address": "tcp://h:2", "name": "w2", "last_seen": 1010.0}
    session = _session_seeing([w1, w2], ["tcp://h:1", "tcp://h:2"])
    assert [line.split(":")[0] for line in session.news()] == ["Dask worker w1 (tcp",
                                                                "Dask worker w2 (tcp"]
    # w1 heartbeats again; w2 is gone from the scheduler (dropped, its nanny's new worker
    # has another address)
    session._view = ([], 300.0, {"tcp://h:1", "tcp://h:3"})
    assert session.news() == ["Dask worker tcp://h:1 answers the scheduler again"]
    assert session.last_seen == {"tcp://h:2": 1010.0}  # for the line of its removal


def test_a_dropped_worker_is_named_with_how_long_it_was_silent_and_the_setting():
    event = {"action": "remove-worker", "worker": "tcp://h:2", "expected": False,
             "processing-tasks": ["a", "x"], "lost-computed-tasks": ["b"], "at": 1389.4}
    assert lost_worker_line(event, {"a", "b"}, last_seen=1010.0, ttl=300.0) == (
        "Dask worker tcp://h:2 dropped after 379 s silent (distributed.scheduler.worker-ttl "
        "300 s): 1 running and 1 finished tasks of the pass are computed again")
    assert lost_worker_line(event, {"a", "b"}) == (  # never seen silent: lost (killed)
        "Dask worker tcp://h:2 lost: 1 running and 1 finished tasks of the pass are "
        "computed again")


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
