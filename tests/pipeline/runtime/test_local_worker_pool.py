"""The job's worker processes (pipeline.runtime.local_worker_pool): started once, shared by
every pass, one pass's workers in different processes, and never left behind; the same bytes
as Beam's own worker processes; Beam's stock DirectRunner, after one warning line, when
Beam's internals are not what the module expects."""

import re
import os
import signal
import subprocess
import sys
import threading
import time

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to

from pipeline.runtime import local_worker_pool
from pipeline.runtime.local_worker_pool import LocalWorkerPool, direct_runner
from repo_paths import REPO_ROOT as REPO

MP2 = ["--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
       "--direct_num_workers", "2"]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped) is gone for our purpose
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pids, seconds=300):
    """The pids of `pids` still alive once all have ended or `seconds` (a hang guard) passed."""
    deadline = time.monotonic() + seconds
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _worker_pids_of_a_pass(pool, options, out_dir, number):
    """Runs a pass whose 8 elements report the pid that processed them; returns those pids."""
    path = os.path.join(out_dir, "pids-%d" % number)
    runner, pass_options = direct_runner(options, pool)
    with beam.Pipeline(runner=runner, options=pass_options) as p:
        squares = (p | beam.Create(range(8)) | beam.Reshuffle()
                   | beam.Map(lambda x: (x * x, os.getpid())))
        assert_that(squares | beam.Map(lambda kv: kv[0]), equal_to([x * x for x in range(8)]))
        _ = (squares | beam.Map(lambda kv: str(kv[1]))
             | beam.io.WriteToText(path, shard_name_template=""))
    with open(path) as f:
        return {int(line) for line in f}


@pytest.mark.slow
def test_passes_share_the_pools_processes(tmp_path):
    options = PipelineOptions(MP2)
    with LocalWorkerPool(2, options) as pool:
        pool.ready()
        pool_pids = {p.pid for p in pool.processes}
        assert len(pool_pids) == 2 and os.getpid() not in pool_pids
        seen = [_worker_pids_of_a_pass(pool, options, str(tmp_path), n) for n in range(3)]
    for pids in seen:
        assert pids <= pool_pids  # every element ran in one of the pool's processes
    assert set().union(*seen) == pool_pids  # and both processes worked
    assert _wait_gone(pool_pids) == []  # close() ended them


def test_pass_options_keep_the_workers_count_and_leave_the_environment_to_the_pool():
    from apache_beam.options.pipeline_options import DirectOptions
    from apache_beam.transforms.environments import ExternalEnvironment

    class Pool:  # what direct_runner reads of a started pool
        num_workers, address = 2, "localhost:1"

    given = PipelineOptions(MP2)
    runner, options = direct_runner(given, Pool())
    assert isinstance(runner._default_environment, ExternalEnvironment)
    assert runner._default_environment.url == "localhost:1"
    assert options.view_as(DirectOptions).direct_running_mode == "in_memory"
    assert options.view_as(DirectOptions).direct_num_workers == 2
    assert given.view_as(DirectOptions).direct_running_mode == "multi_processing"  # untouched
    provision = runner._provision_info.provision_info.pipeline_options
    assert provision["beam:option:direct_running_mode:v1"] == "multi_processing"


@pytest.mark.slow
def test_processes_end_when_the_driver_is_killed(tmp_path):
    """kill -9 of the driver closes its end of the processes' stdin: they exit by themselves."""
    script = ("import sys; sys.path.insert(0, %r)\n"
              "from apache_beam.options.pipeline_options import PipelineOptions\n"
              "from pipeline.runtime.local_worker_pool import LocalWorkerPool\n"
              "pool = LocalWorkerPool(2, PipelineOptions([])).start()\n"
              "pool.ready()\n"
              "print(' '.join(str(p.pid) for p in pool.processes), flush=True)\n"
              "import time; time.sleep(600)\n" % REPO)
    driver = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in driver.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    assert _wait_gone(pids) == []


def test_a_worker_process_that_cannot_start_is_an_error_and_leaves_nothing():
    # a log level no logger knows: the processes fail before they serve
    pool = LocalWorkerPool(2, PipelineOptions([]), log_level="nonsense").start()
    try:
        with pytest.raises(RuntimeError, match=r"worker process \d+ did not start "
                                               r"\(exit status 1\)"):
            pool.ready()
        processes = pool.processes
    finally:
        pool.close()
    # pids read after close, which waits for each start: when the first process fails, the
    # second may still be forking (its pid None until the fork server answers, on a busy machine)
    pids = [p.pid for p in processes]
    assert len(pids) == 2 and None not in pids and _wait_gone(pids) == []


def test_worker_processes_are_forked_by_one_fork_server():
    """Forked from one server (where the platform has one), which imported Beam and the
    project before: a second worker no longer imports Beam beside the first and the driver."""
    import multiprocessing
    if "forkserver" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork server on this platform")
    with LocalWorkerPool(2, PipelineOptions([])) as pool:
        pool.ready()
        pids = {p.pid for p in pool.processes}
        parents = set()
        for pid in pids:
            with open("/proc/%d/stat" % pid) as f:
                parents.add(int(f.read().split(")")[-1].split()[1]))
        assert len(parents) == 1 and os.getpid() not in parents  # both forked by the server
        with open("/proc/%d/cmdline" % parents.pop(), "rb") as f:
            assert b"forkserver" in f.read()
    assert len(pids) == 2


@pytest.mark.slow
def test_a_worker_killed_during_a_pass_fails_the_pass_and_says_which():
    """An out-of-memory kill of a worker in the middle of a bundle: Beam's runner would wait
    for it forever; the pass fails, naming the process and the signal."""
    from pipeline.driver.passes import PassRunner, WorkerDied
    run_pass = PassRunner(PipelineOptions(MP2), lambda: None)
    raised = []

    def killing_pass():
        try:
            run_pass("killing", lambda p: p | beam.Create([1], reshuffle=False)
                     | beam.Reshuffle()
                     | beam.Map(lambda _: os.kill(os.getpid(), signal.SIGKILL)))
        except Exception as error:  # noqa: BLE001 (checked below)
            raised.append(error)

    thread = threading.Thread(target=killing_pass, daemon=True)
    try:
        thread.start()
        thread.join(600)  # a guard against waiting forever, not a measure of speed
        assert not thread.is_alive(), "the pass still waits for its killed worker"
    finally:
        run_pass.close()
    assert len(raised) == 1 and isinstance(raised[0], WorkerDied), raised
    assert re.search(r"pass 1 failed: worker process \d+ killed by SIGKILL while it ran "
                     r"\(out of memory\?\)", str(raised[0])), raised


@pytest.mark.parametrize("argv", [
    ["--direct_running_mode", "multi_processing", "--vocab_size", "300"],
    ["--runner=DirectRunner", "--direct_running_mode=multi_processing", "--runner", "Flink"],
    ["--local_worker_pool", "off", "--direct_running_mode", "in_memory", "--dry_run", "True"],
    ["--output_dir", "--runner"],  # a value missing: neither parse reads on
])
def test_the_early_look_at_the_flags_reads_them_as_beams_parser_does(argv):
    """`start_early` reads a few of Beam's options before Beam's import: the flags Beam's
    parser declares (each taking a value), read as that parser reads them."""
    from pipeline.runtime import flags
    from pipeline.runtime.errors import DatagenError
    beam = flags.with_beam_options(flags.FlagParser())
    takes_value = {s: action.nargs is None and action.const is None
                   for action in beam.actions for s in action.option_strings}
    read_early = ["--" + name for name in vars(local_worker_pool._early_flags([]))
                  if name != "help"]
    assert read_early == list(local_worker_pool.EARLY_FLAGS)
    assert all(takes_value.get(flag) for flag in read_early)
    early = local_worker_pool._early_flags(argv)
    try:
        known = beam.parse_known_args(argv)[0]
    except DatagenError:
        assert early is None
        return
    for flag in read_early:
        assert getattr(early, flag[2:]) == (getattr(known, flag[2:]) if flag in argv or any(
            a.startswith(flag + "=") for a in argv) else None), flag


def test_no_fork_server_for_a_job_that_runs_in_the_driver(tmp_path, monkeypatch):
    """A job whose local input is under --in_process_below_mb runs its passes in the driver
    (`runners.run_small_input_in_process`), so `start_early` starts no fork server for it;
    a larger input, a limit of 0, a corpora file, a store's path or a pattern matching
    nothing start it as before (what cannot be told locally is taken as large)."""
    from multiprocessing import forkserver
    started = []
    monkeypatch.setattr(forkserver, "ensure_running", lambda: started.append(1))
    small = tmp_path / "train.en"
    small.write_text("a line\n" * 1000)  # 7 kB
    base = ["--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
            "--train_source", str(small), "--train_target=%s" % small]
    local_worker_pool.start_early(base)
    local_worker_pool.start_early(base + ["--in_process_below_mb", "0.02"])
    assert started == []
    for more in (["--in_process_below_mb", "0.01"], ["--in_process_below_mb", "0"],
                 ["--corpora", str(small)], ["--dev_source", "s3://bucket/dev.en"],
                 ["--dev_target", str(tmp_path / "none*.zh")]):
        local_worker_pool.start_early(base + more)
        assert len(started) == 1, more
        started.clear()


@pytest.mark.slow
def test_starting_the_fork_server_keeps_the_signals_blocked():
    """multiprocessing's resource tracker unblocks SIGINT/SIGTERM in the thread that starts
    it; the driver keeps them blocked in every thread (pipeline.runtime.interrupts), or a Ctrl-C is
    lost. A fresh interpreter: in this one the server may be running already."""
    script = ("import signal, sys; sys.path.insert(0, %r)\n"
              "signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGTERM))\n"
              "from pipeline.runtime import local_worker_pool\n"
              "local_worker_pool.start_early(['--direct_running_mode', 'multi_processing'])\n"
              "from multiprocessing import forkserver\n"
              "assert forkserver._forkserver._forkserver_pid is not None  # it did start\n"
              "blocked = signal.pthread_sigmask(signal.SIG_BLOCK, ())\n"
              "print(signal.SIGINT in blocked, signal.SIGTERM in blocked)\n" % REPO)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "True"]


@pytest.mark.slow
def test_ready_at_once_after_start_waits_for_the_starting_thread(monkeypatch):
    """`ready()` (or a pass's first worker request) before the thread that starts the
    processes got to them: it waits for them, it does not lock them out."""
    import threading
    original_start, original_ready = LocalWorkerPool._start_processes, LocalWorkerPool.ready
    asked = threading.Event()

    def late(self, context, settings):  # only once ready() has been called
        assert asked.wait(600), "ready() was never called"
        original_start(self, context, settings)

    def ready(self):
        asked.set()
        original_ready(self)

    monkeypatch.setattr(LocalWorkerPool, "_start_processes", late)
    monkeypatch.setattr(LocalWorkerPool, "ready", ready)
    with LocalWorkerPool(2, PipelineOptions([])) as pool:
        pool.ready()
        pids = [p.pid for p in pool.processes]
    assert len(pids) == 2 and _wait_gone(pids) == []


def test_a_dead_fork_server_is_not_a_dead_worker():
    """The fork server reports its children's ends; if it is killed, its workers still run
    and must not be reported dead (the pass would be failed for nothing)."""
    import multiprocessing
    if "forkserver" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork server on this platform")
    with LocalWorkerPool(2, PipelineOptions([])) as pool:
        pool.ready()
        pids = [p.pid for p in pool.processes]
        with open("/proc/%d/stat" % pids[0]) as f:
            server = int(f.read().split(")")[-1].split()[1])
        os.kill(server, signal.SIGKILL)
        assert _wait_gone([server]) == []
        # the server gone, its end is read at once (EOF on its pipe): no wait for a report
        assert all(_alive(p) for p in pids) and pool.dead() == []
    assert _wait_gone(pids) == []


# ---- the pool against Beam's own worker processes, and the fallback -------------------------

JOB_FLAGS = ["--problem", "p", "--vocab_size", "300", "--num_train_shards", "3", "--seed", "11",
             "--in_process_below_mb", "0"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from datagen_helpers import small_corpus
    d = tmp_path_factory.mktemp("corpus")
    return small_corpus(d)


def _job(out, corpus, *extra):
    return ["--output_dir", str(out), "--train_source", corpus[0], "--train_target",
            corpus[1]] + MP2 + JOB_FLAGS + list(extra)


def _counting_pool_starts(monkeypatch):
    started = []
    original = LocalWorkerPool.start
    monkeypatch.setattr(LocalWorkerPool, "start",
                        lambda self: started.append(self) or original(self))
    return started


@pytest.fixture(scope="module")
def pool_output(tmp_path_factory, corpus):
    from datagen_helpers import output_bytes
    from pipeline import datagen
    out = tmp_path_factory.mktemp("pool") / "out"
    datagen.run(_job(out, corpus))
    return output_bytes(out)


@pytest.mark.slow
def test_the_pool_writes_the_bytes_of_beams_own_worker_processes(tmp_path, corpus,
                                                                  pool_output, monkeypatch):
    from datagen_helpers import output_bytes
    from pipeline import datagen
    started = _counting_pool_starts(monkeypatch)
    datagen.run(_job(tmp_path / "off", corpus, "--local_worker_pool", "off"))
    assert started == []  # Beam started its own processes for every pass
    assert output_bytes(tmp_path / "off") == pool_output
    assert len(pool_output) >= 5  # two vocab files, three shards (and the length report)


@pytest.mark.slow
def test_beam_internals_that_differ_mean_one_warning_and_beams_stock_direct_runner(
        tmp_path, corpus, pool_output, monkeypatch, capsys):
    """The documented hook: an internal Beam lacks added to REQUIRED_INTERNALS stands for a
    Beam release whose internals changed. --prism_location keeps DirectRunner's Prism
    attempt offline (it fails at once and DirectRunner falls back to its FnApiRunner)."""
    from datagen_helpers import output_bytes
    from pipeline import datagen
    monkeypatch.setattr(local_worker_pool, "REQUIRED_INTERNALS", local_worker_pool.REQUIRED_INTERNALS
                        + [(local_worker_pool.FN_RUNNER, "FnApiRunner", ("no_such_parameter",))])
    started = _counting_pool_starts(monkeypatch)
    assert datagen.main(_job(tmp_path / "stock", corpus, "--prism_location",
                             str(tmp_path / "no-prism"))) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "internals" in line]
    assert len(warnings) == 1, warnings
    assert warnings[0].endswith(
        "Beam's internals are not what the job's local runner expects (apache_beam.runners."
        "portability.fn_api_runner.fn_runner.FnApiRunner has no parameter no_such_parameter): "
        "the passes run on Beam's stock DirectRunner")
    assert started == []
    assert output_bytes(tmp_path / "stock") == pool_output


def test_the_internals_this_beam_has_are_the_ones_expected():
    assert local_worker_pool.internals_missing() is None


def test_the_pool_serves_direct_runner_only_and_not_when_off():
    from pipeline.runtime.runners import uses_local_worker_pool
    assert uses_local_worker_pool(PipelineOptions(MP2))
    assert not uses_local_worker_pool(PipelineOptions(MP2 + ["--local_worker_pool", "off"]))
    assert not uses_local_worker_pool(PipelineOptions(MP2[:2]))  # in_memory by default
    for runner in ("FlinkRunner", "SparkRunner", "PortableRunner", "DataflowRunner",
                   "PrismRunner", "FnApiRunner"):
        assert not uses_local_worker_pool(PipelineOptions(["--runner", runner] + MP2[2:]))
