"""The order the suite runs its files in (tests/file_times.py): longest first by the times
recorded in pytest's cache, the listed long files first where none is recorded, and what a
session records (each test's setup, call and teardown, on the controlling process)."""

from types import SimpleNamespace

from file_times import CACHE_KEY, TimesPlugin, file_order

A, B, C, D = ("t/a/test_a.py", "t/b/test_b.py", "t/c/test_c.py",
              "t/d/test_d.py")


def test_files_go_longest_first_by_the_sum_of_their_tests_times():
    seconds = {A + "::one": 5.0, A + "::two": 5.0, B + "::one": 30.0, C + "::x[1]": 12.0}
    assert file_order([A, B, C], seconds, ()) == [B, C, A]


def test_files_never_timed_go_by_the_list_first_then_the_rest_in_their_order():
    seconds = {A + "::one": 50.0}
    assert file_order([D, A, C, B], seconds, ("test_c.py", "test_b.py")) == [C, B, A, D]
    assert file_order([D, A, C], {}, ()) == [D, A, C]  # nothing known: as collected


class _Cache:
    def __init__(self, known):
        self.values = {CACHE_KEY: known}

    def get(self, key, default):
        return self.values.get(key, default)

    def set(self, key, value):
        self.values[key] = value


def test_a_session_records_the_tests_it_ran_and_keeps_the_others(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    (tmp_path / "t").mkdir()
    for name in ("test_kept.py", "test_ran.py"):
        (tmp_path / "t" / name).write_text("")
    cache = _Cache({"t/test_kept.py::old": 7.0, "t/test_ran.py::t": 99.0,
                    "t/test_gone.py::t": 3.0})
    plugin = TimesPlugin(SimpleNamespace(cache=cache, rootpath=tmp_path))
    for when, duration in (("setup", 1.0), ("call", 2.5), ("teardown", 0.5)):
        plugin.pytest_runtest_logreport(SimpleNamespace(nodeid="t/test_ran.py::t",
                                                        when=when, duration=duration))
    plugin.pytest_sessionfinish(None)
    assert cache.values[CACHE_KEY] == {"t/test_kept.py::old": 7.0,
                                       "t/test_ran.py::t": 4.0}
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")  # a worker leaves it to the controller
    cache.values[CACHE_KEY] = {}
    plugin.pytest_sessionfinish(None)
    assert cache.values[CACHE_KEY] == {}
