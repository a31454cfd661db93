"""How long each test took in the last runs, kept in pytest's cache (`.pytest_cache`), and
the order of test files it gives: longest first. `./run_tests.sh` hands whole files to its
processes (`--dist loadfile`) in collection order, so a long file started last leaves the
other process idle at the end; a fixed list of the longest files goes stale as tests are
added, measured times do not. `./run_tests.sh` also prints the 30 slowest (`--durations`).

A run records the tests it ran (setup, call and teardown), so a partial run (`-k`, one file)
updates only those; a file's time is the sum over its tests, a test never timed counts 0."""

import os
from collections import defaultdict
from typing import Dict, Iterable, List, Sequence

CACHE_KEY = "datagen/test_seconds"


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def file_order(files: Iterable[str], seconds: Dict[str, float],
               longest_first: Sequence[str]) -> List[str]:
    """`files` (paths, each once) longest first by `seconds` ({nodeid: s}); files with no
    time recorded are ranked by `longest_first` (base names), ahead of the rest, in its order."""
    per_file: Dict[str, float] = defaultdict(float)
    for nodeid, s in seconds.items():
        per_file[file_of(nodeid)] += s
    rank = {name: i for i, name in enumerate(longest_first)}

    def key(path):
        if path in per_file:
            return (0, -per_file[path], 0)
        name = os.path.basename(path)
        if name in rank:  # never timed here: the listed ones first, then the rest
            return (0, float("-inf"), rank[name])
        return (1, 0.0, 0)
    return sorted(files, key=key)


class TimesPlugin:
    """A pytest plugin: sums each test's phases as reports come in (on the controlling
    process under xdist) and saves them in the cache at the end of the session."""

    def __init__(self, config):
        self._config = config
        self._seconds: Dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report):
        self._seconds[report.nodeid] += report.duration

    def pytest_sessionfinish(self, session):
        cache = getattr(self._config, "cache", None)
        if cache is None or not self._seconds or os.environ.get("PYTEST_XDIST_WORKER"):
            return  # an xdist worker's reports are the controller's to save
        root = str(self._config.rootpath)
        known = {nodeid: s for nodeid, s in cache.get(CACHE_KEY, {}).items()
                 if os.path.exists(os.path.join(root, file_of(nodeid)))}  # files still here
        known.update(self._seconds)
        cache.set(CACHE_KEY, known)
