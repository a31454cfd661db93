"""Shared test configuration: the repository root on sys.path, a TMPDIR of the session's
own (`session_tmpdir`), the test data directory, the lines of its real corpora, real
object-store servers holding a corpus (`s3`, `slow_s3`, `gcs`: tests/object_store_servers.py)
for the tests of the job and its lock on object stores, and a Dask cluster of separate hosts with its own store (`hosts`: tests/multihost_cluster.py)."""

import glob
import os
import sys
import tempfile

import pytest

from repo_paths import DATA_DIR, REPO_ROOT

if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)


@pytest.fixture(scope="session", autouse=True)
def session_tmpdir(tmp_path_factory):
    """TMPDIR, for this process and every process it starts, is a directory of the session's
    pytest temp dir, which pytest removes a few runs later: what a job killed by a test
    cannot remove (Beam's `beam-pipeline-temp*` and job server's `beam-temp*`,
    multiprocessing's `pymp-*`, `datagen-job-server-*`) no longer piles up in /tmp."""
    directory = str(tmp_path_factory.mktemp("tmpdir", numbered=False))
    saved = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"] = tempfile.tempdir = directory
    yield directory
    if saved[0] is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = saved[0]
    tempfile.tempdir = saved[1]


@pytest.fixture(scope="session")
def data_dir():
    return DATA_DIR


@pytest.fixture(scope="module")
def corpus_lines():
    """Every line of the three real test corpora (en-zh mlqe-pe, en-de OpenNMT, en-vi
    tensorflow/nmt), as `str.split("\\n")` gives them."""
    lines = []
    for corpus in ("enzh-mlqe-pe", "ende-opennmt", "envi-nmt-testdata"):
        for path in sorted(glob.glob(os.path.join(DATA_DIR, corpus, "*"))):
            with open(path, "rb") as f:
                lines.extend(f.read().decode("utf-8").split("\n"))
    return lines


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A moto_server on 127.0.0.1 whose bucket `BUCKET` holds the en-zh corpus under `in/`."""
    from object_store_servers import BUCKET, MotoServer
    corpus = os.path.join(DATA_DIR, "enzh-mlqe-pe")
    server = MotoServer(str(tmp_path_factory.mktemp("moto")))
    client = server.client()
    client.create_bucket(Bucket=BUCKET)
    for name in sorted(os.listdir(corpus)):
        with open(os.path.join(corpus, name), "rb") as f:
            client.put_object(Bucket=BUCKET, Key="in/" + name, Body=f.read())
    client.close()  # its connections, not held for the module's tests
    yield server
    server.stop()


@pytest.fixture(scope="module")
def slow_s3(s3):
    """The S3 server behind a proxy that delays each request by 30 ms."""
    from object_store_servers import DelayProxy
    proxy = DelayProxy(s3.port, 0.03)
    yield proxy
    proxy.stop()


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
    """A fake-gcs-server on 127.0.0.1 whose bucket `BUCKET` holds the en-zh corpus under `in/`."""
    from object_store_servers import BUCKET, FakeGcsServer
    corpus = os.path.join(DATA_DIR, "enzh-mlqe-pe")
    server = FakeGcsServer(str(tmp_path_factory.mktemp("gcs")), buckets=(BUCKET,))
    bucket = server.client().bucket(BUCKET)
    for name in sorted(os.listdir(corpus)):
        bucket.blob("in/" + name).upload_from_filename(os.path.join(corpus, name))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def numba_cache(tmp_path_factory):
    """A numba cache holding the job's compiled loops, made once per run (shared by
    pytest-xdist's processes: in their session directory's parent), for test hosts to
    seed their own from (tests/multihost_cluster.py)."""
    from multihost_cluster import warm_numba_cache
    session = tmp_path_factory.getbasetemp()
    cache = (session.parent if os.environ.get("PYTEST_XDIST_WORKER") else session) / "numba"
    return warm_numba_cache(str(cache))


@pytest.fixture(scope="session")
def hosts(tmp_path_factory, request):
    """A MultiHostCluster (store, sched, w1, w2: each a host of its own, in network, mount
    and PID namespaces) whose bucket holds the sample under `in/`; skips where hosts cannot
    be made (fails under CI=true). A test calls `hosts.ensure_up()` first, which boots again
    what an earlier test left down, so the test files that use it share one per process
    (its start is 20-50 s) and each writes under an output prefix of its own."""
    from network_hosts import require_hosts
    require_hosts()
    from multihost_cluster import running_hosts
    from multihost_jobs import put_sample
    with running_hosts(tmp_path_factory.mktemp("hosts"), request.getfixturevalue("numba_cache"),
                       fill_store=put_sample) as cluster:
        yield cluster


# The longest test files (whole jobs on clusters, stores and schedulers; minutes each), run
# first where no time of theirs is recorded yet (tests/file_times.py orders by the times the
# last runs took): `./run_tests.sh` hands whole files to its two processes (`--dist loadfile`)
# in collection order, and a long file started last leaves the other process idle at the end.
LONGEST_FILES_FIRST = ("test_airflow_dag.py", "test_multihost_faults.py",
                       "test_multihost_jobs.py", "test_multihost_resume.py",
                       "test_slurm_cluster.py", "test_object_stores.py", "test_unattended.py",
                       "test_dask_cluster.py", "test_signals_every_pass.py",
                       "test_console_noise.py", "test_completeness.py", "test_prism_runner.py")


def pytest_configure(config):
    from file_times import TimesPlugin
    config.pluginmanager.register(TimesPlugin(config), "datagen_file_times")


def pytest_collection_modifyitems(config, items):
    """Test files longest first, by the times recorded in pytest's cache (tests/file_times.py),
    and LONGEST_FILES_FIRST for those never timed; every file's tests stay together and in
    their order (module fixtures are shared within a file)."""
    from file_times import CACHE_KEY, file_of, file_order
    seconds = config.cache.get(CACHE_KEY, {}) if getattr(config, "cache", None) else {}
    files = list(dict.fromkeys(file_of(item.nodeid) for item in items))
    rank = {path: i for i, path in enumerate(file_order(files, seconds, LONGEST_FILES_FIRST))}
    items.sort(key=lambda item: rank[file_of(item.nodeid)])
