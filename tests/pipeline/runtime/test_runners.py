"""Runner portability and production use: the same bytes on every runner this machine can
run, the Dataflow translation, refusing a remote runner that would lack the project, and
crashed or killed runs that leave nothing a reader would pick up and complete on rerun."""

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys

import pytest

from datagen_helpers import (DIRECT_MP2, FNAPI, output_bytes, read_examples, small_corpus,
                             run_datagen, shard_files, wait_for)
from object_store_servers import free_port, wait_until_answers
from pipeline import datagen
from repo_paths import REPO_ROOT as REPO
from transforms.encode import shuffled_shards

FLAGS = ["--problem", "p", "--vocab_size", 300, "--num_train_shards", 3, "--seed", 11]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    return small_corpus(d)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory, corpus):
    out = tmp_path_factory.mktemp("fnapi") / "out"
    summary = run_datagen(out, *corpus, *FLAGS, runner=FNAPI)
    return out, summary


@pytest.mark.slow
def test_direct_runner_two_processes_matches_fnapi(tmp_path, baseline, corpus, monkeypatch):
    from apache_beam.runners.portability import prism_runner
    tried = []
    monkeypatch.setattr(prism_runner.PrismRunner, "run_pipeline",
                        lambda self, *args, **kwargs: tried.append(args) or 1 / 0)
    run_datagen(tmp_path / "mp2", *corpus, *FLAGS, runner=DIRECT_MP2)
    assert output_bytes(tmp_path / "mp2") == output_bytes(baseline[0])
    assert tried == []  # DirectRunner's passes never wait for a Prism download


def test_direct_runner_passes_run_on_the_fn_api_runner_with_its_options():
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.runners.portability.fn_api_runner import fn_runner
    from pipeline.runtime.pass_engine import PassEngine
    from pipeline.runtime.local_worker_pool import direct_runner
    given = PipelineOptions(DIRECT_MP2[:6])
    runner, options = direct_runner(given)
    assert isinstance(runner, fn_runner.FnApiRunner) and options is given
    options = runner._provision_info.provision_info.pipeline_options
    assert options["beam:option:direct_num_workers:v1"] == "2"
    assert options["beam:option:direct_running_mode:v1"] == "multi_processing"

    def pass_runner(args):
        engine = PassEngine(PipelineOptions(args))
        try:
            return engine.runner_and_options()[0]
        finally:
            engine.close()

    assert isinstance(pass_runner([]), fn_runner.FnApiRunner)  # DirectRunner by default
    # (PrismRunner without --job_endpoint: the job's own Prism, tests/end_to_end/test_prism_runner.py)
    for other in (FNAPI, ["--runner", "PrismRunner", "--job_endpoint", "localhost:1"],
                  ["--runner", "DataflowRunner"]):
        assert pass_runner(other) is None


@pytest.mark.slow
def test_small_input_runs_in_process_under_multi_processing(tmp_path, baseline, corpus, caplog):
    """Below --in_process_below_mb (16 MB by default) a multi_processing DirectRunner job runs
    its passes in this process, writing the same bytes."""
    caplog.set_level("INFO", logger="datagen")
    mp2_default = [a for a in DIRECT_MP2 if a not in ("--in_process_below_mb", "0")]
    assert len(mp2_default) == len(DIRECT_MP2) - 2
    run_datagen(tmp_path / "small", *corpus, *FLAGS, runner=mp2_default)
    assert "passes run in this process, not in worker processes" in caplog.text
    assert output_bytes(tmp_path / "small") == output_bytes(baseline[0])


def test_in_process_switch_only_for_small_inputs_of_multi_processing():
    from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions
    from pipeline.runtime.runners import run_small_input_in_process

    def after(args, input_bytes, limit_mb=8):
        options = PipelineOptions(args)
        switched = run_small_input_in_process(options, input_bytes, limit_mb)
        direct = options.view_as(DirectOptions)
        return switched, direct.direct_running_mode, direct.direct_num_workers

    mp = ["--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
          "--direct_num_workers", "2"]
    assert after(mp, 7_999_999) == (True, "in_memory", 1)  # one thread: no GIL contention
    assert after(mp, 8_000_000) == (False, "multi_processing", 2)
    assert after(mp, 10, limit_mb=0) == (False, "multi_processing", 2)
    assert after(["--runner", "FnApiRunner", "--direct_num_workers", "2"], 10)[::2] == (False, 2)
    assert after(["--runner", "DirectRunner", "--direct_running_mode", "multi_threading",
                  "--direct_num_workers", "2"], 10) == (False, "multi_threading", 2)


def _wait_for_port(port, proc):
    wait_until_answers(lambda: socket.create_connection(("localhost", port), timeout=1).close(),
                       proc, "the service on port %d" % port)


@pytest.fixture(scope="module")
def portable_services(tmp_path_factory):
    """Beam's Python job service and an external worker pool on localhost, stopped by PID."""
    logs = tmp_path_factory.mktemp("services")
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    job_port, pool_port = free_port(), free_port()
    commands = [
        [sys.executable, "-m", "apache_beam.runners.portability.local_job_service_main",
         "--port", str(job_port)],
        [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main",
         "--service_port", str(pool_port)],
    ]
    procs = []
    try:
        for i, cmd in enumerate(commands):
            log = open(logs / ("service%d.log" % i), "wb")
            procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                          start_new_session=True, cwd=str(logs)))
        _wait_for_port(job_port, procs[0])
        _wait_for_port(pool_port, procs[1])
        yield job_port, pool_port
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            except ProcessLookupError:
                pass


@pytest.mark.slow
def test_portable_runner_with_external_workers_matches_fnapi(tmp_path, baseline, corpus,
                                                             portable_services):
    job_port, pool_port = portable_services
    runner = ["--runner", "PortableRunner", "--job_endpoint", "localhost:%d" % job_port,
              "--environment_type", "EXTERNAL", "--environment_config", "localhost:%d" % pool_port]
    summary = run_datagen(tmp_path / "portable", *corpus, *FLAGS, runner=runner)
    assert summary["runner"] == "PortableRunner"
    assert output_bytes(tmp_path / "portable") == output_bytes(baseline[0])


DATAFLOW = ["--runner", "DataflowRunner", "--project", "my-project", "--region", "us-central1",
            "--temp_location", "gs://my-bucket/tmp", "--dry_run", "True"]
GCS_ARGS = ["--train_source", "gs://my-bucket/data/train.en", "--train_target",
            "gs://my-bucket/data/train.zh", "--output_dir", "gs://my-bucket/out"]


@pytest.mark.slow
@pytest.mark.parametrize("extra,passes", [
    # line files: the prepare stage rides along the first vocab pass, then a later vocab
    # pass and the encode pass
    ([], 3),
    # a word vocab is one counting pass; SGM inputs are converted in the prepare pass
    (["--vocab_type", "word", "--train_source", "gs://my-bucket/data/a.en.sgm",
      "--train_target", "gs://my-bucket/data/a.zh.sgm"], 3),
])
def test_dataflow_dry_run_translates_every_pass(capsys, extra, passes):
    pytest.importorskip("apache_beam.runners.dataflow.dataflow_runner")
    pytest.importorskip("google.cloud.storage")
    code = datagen.main(GCS_ARGS + DATAFLOW + ["--setup_file", os.path.join(REPO, "setup.py")]
                        + extra)
    assert code == 0
    assert "%d passes translated for runner DataflowRunner" % passes in capsys.readouterr().out


def _readme_dataflow_command():
    """The Dataflow command of docs/runners.md (its `dataflow` example), placeholders and
    all, as argv."""
    import shlex
    import readme_examples
    block = readme_examples.shell_script("dataflow")
    command = block.replace("\\\n", " ").splitlines()
    (line,) = [c for c in command if c.startswith("python -m pipeline.datagen")]
    argv = shlex.split(line)
    assert "BUCKET" in line and "PROJECT" in line and "--setup_file" in argv
    return [sys.executable] + argv[1:]


# Imported first by the job's subprocess (and the sdist build's): any name lookup or
# connection to a host other than this one fails at once.
_NO_NETWORK = """
import socket
_LOCAL = {"localhost", "127.0.0.1", "::1", None, ""}
_getaddrinfo, _connect = socket.getaddrinfo, socket.socket.connect
def getaddrinfo(host, *args, **kwargs):
    if host not in _LOCAL:
        raise OSError("network disabled by the test: lookup of %s" % host)
    return _getaddrinfo(host, *args, **kwargs)
def connect(self, address):
    if self.family != socket.AF_UNIX and address[0] not in _LOCAL:
        raise OSError("network disabled by the test: connect to %s" % (address,))
    return _connect(self, address)
socket.getaddrinfo, socket.socket.connect = getaddrinfo, connect
"""


@pytest.mark.slow
def test_readme_dataflow_dry_run_is_offline_fast_and_leaves_nothing(tmp_path):
    # The README's command with its literal BUCKET/PROJECT placeholders and --dry_run True:
    # no network (Beam would try to create a default bucket for the invalid ones), one sdist
    # build for all passes, and nothing new in the source tree (no egg-info, build/, dist/).
    pytest.importorskip("apache_beam.runners.dataflow.dataflow_runner")
    pytest.importorskip("google.cloud.storage")
    (tmp_path / "sitecustomize.py").write_text(_NO_NETWORK)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), REPO]))
    caches = {".hypothesis", ".pytest_cache"}  # other tests' caches may appear meanwhile
    before = set(os.listdir(REPO)) - caches
    done = subprocess.run(_readme_dataflow_command() + ["--dry_run", "True"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "network disabled" not in done.stderr and "Retry" not in done.stderr
    assert "dry run: --project PROJECT, --temp_location gs://BUCKET/tmp" in done.stderr
    assert done.stderr.count("sdist t2t-beam-datagen-0.1.0.tar.gz built once") == 1
    assert "3 passes translated for runner DataflowRunner" in done.stdout
    assert set(os.listdir(REPO)) - caches == before


@pytest.mark.parametrize("runner", [DATAFLOW, ["--runner", "FlinkRunner"],
                                    ["--runner", "PortableRunner", "--job_endpoint", "localhost:1"]])
def test_remote_runner_without_setup_file_refuses_to_start(runner, capsys):
    code = datagen.main(GCS_ARGS + runner)
    assert code == 2
    assert "--setup_file ./setup.py" in capsys.readouterr().err


def _copy_vocabs(src, dst):
    os.makedirs(dst, exist_ok=True)
    for name in os.listdir(src):
        if name.startswith("vocab."):
            shutil.copy(os.path.join(src, name), os.path.join(dst, name))


def _visible_shards(out):
    """Shards and the length report: what a failed run must not leave in place."""
    return glob.glob(os.path.join(str(out), "p-train*")) + glob.glob(
        os.path.join(str(out), "p-dev*")) + glob.glob(os.path.join(str(out), "p.lengths.html"))


@pytest.mark.slow
def test_crash_while_writing_leaves_nothing_visible_and_rerun_keeps_the_vocab(
        tmp_path, baseline, corpus, monkeypatch):
    original = shuffled_shards.merge_fragments
    written = []

    def failing_merge(paths, stores=None):
        for entry in original(paths, stores):
            written.append(1)
            if len(written) > 50:
                raise OSError("disk died in the middle of a shard")
            yield entry

    monkeypatch.setattr(shuffled_shards, "merge_fragments", failing_merge)
    out = tmp_path / "out"
    with pytest.raises(Exception, match="disk died"):
        run_datagen(out, *corpus, *FLAGS, runner=FNAPI)
    assert len(written) > 50
    assert _visible_shards(out) == []
    assert not os.path.exists(out / "p.DATAGEN_COMPLETE")
    assert not os.path.exists(out / ".datagen-work")
    with open(out / "p.datagen_summary.json") as f:
        failed = json.load(f)
    assert failed["status"] == "failed" and "disk died" in failed["error"]
    assert sorted(n for n in os.listdir(out) if n.startswith("vocab.")) == [
        "vocab.p.300.subwords.en", "vocab.p.300.subwords.zh"]

    monkeypatch.setattr(shuffled_shards, "merge_fragments", original)
    summary = run_datagen(out, *corpus, *FLAGS, runner=FNAPI)
    assert summary["status"] == "complete"
    assert summary["passes"] == 2  # scan + encode: the vocab passes were not run again
    assert all(v["reused"] for v in summary["vocab"].values())
    assert output_bytes(out) == output_bytes(baseline[0])


@pytest.mark.slow
def test_kill_9_during_encoding_then_rerun_completes(tmp_path, baseline):
    """A bigger input (7,000 pairs) so the encode pass is long enough to be killed inside."""
    out = tmp_path / "out"
    _copy_vocabs(baseline[0], out)
    source = os.path.join(REPO, "sample_data", "enzh-mlqe-pe", "train.en")
    target = os.path.join(REPO, "sample_data", "enzh-mlqe-pe", "train.zh")
    cmd = [sys.executable, "-m", "pipeline.datagen", "--train_source", source, "--train_target",
           target, "--output_dir", str(out)] + [str(a) for a in FLAGS] + [
           "--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
           "--direct_num_workers", "2", "--in_process_below_mb", "0", "--encode_chunk_lines", "500"]
    proc = subprocess.Popen(cmd, cwd=REPO, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            text=True, start_new_session=True)
    try:
        for line in proc.stderr:
            if ": encode " in line:
                break
        work = out / ".datagen-work" / "p"
        # killed once encoding has written something, well before its end
        wait_for(lambda: any(work.glob("*/fragments/*.frag")), "a first fragment", proc)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert _visible_shards(out) == []
    assert not os.path.exists(out / "p.DATAGEN_COMPLETE")

    summary = run_datagen(out, source, target, *FLAGS, "--encode_chunk_lines", 500, runner=FNAPI)
    train = summary["splits"]["train"]
    assert (train["pairs_read"], train["pairs_written"]) == (7000, 7000)
    assert len(shard_files(out, "p", "train")) == 3
    assert sum(len(read_examples(p)) for p in shard_files(out, "p", "train")) == 7000
    assert not os.path.exists(out / ".datagen-work")


@pytest.mark.slow
def test_failed_overwrite_is_not_left_looking_complete(tmp_path, baseline, corpus, monkeypatch):
    out = tmp_path / "out"
    shutil.copytree(baseline[0], out)

    def failing_merge(paths, stores=None):
        raise OSError("disk died")

    monkeypatch.setattr(shuffled_shards, "merge_fragments", failing_merge)
    with pytest.raises(Exception, match="disk died"):
        run_datagen(out, *corpus, *FLAGS, "--overwrite", runner=FNAPI)
    assert not os.path.exists(out / "p.DATAGEN_COMPLETE")
    with open(out / "p.datagen_summary.json") as f:
        assert json.load(f)["status"] == "failed"


@pytest.mark.slow
def test_problems_sharing_a_directory_and_overwrite_without_dev(tmp_path, baseline, corpus):
    out = tmp_path / "out"
    shutil.copytree(baseline[0], out)
    flags = [str(a) for a in FLAGS]
    flags[flags.index("p")] = "q"
    other = run_datagen(out, *corpus, *flags, runner=FNAPI)
    assert not other.get("noop") and os.path.exists(out / "q.DATAGEN_COMPLETE")
    assert os.path.exists(out / "p.DATAGEN_COMPLETE")
    # a dev split written once, then an --overwrite run without one: no stale dev shard stays
    run_datagen(out, *corpus, *FLAGS, "--overwrite", "--dev_source", corpus[0],
                "--dev_target", corpus[1], runner=FNAPI)
    assert glob.glob(str(out / "p-dev-*"))
    run_datagen(out, *corpus, *FLAGS, "--overwrite", runner=FNAPI)
    assert glob.glob(str(out / "p-dev-*")) == []
    assert len(glob.glob(str(out / "q-train-*"))) == 3


def test_every_runners_own_flags_pass_the_flag_check_and_short_names_resolve():
    """`--runner DaskRunner` as a user types it (Beam resolves no such short name), and
    the flags Beam declares only in a runner's own module (DaskOptions) or for Prism."""
    from pipeline.driver.options import parse_flags
    from pipeline.runtime.runners import runner_class_path
    from pipeline.runtime.errors import DatagenError
    base = ["--train_source", "a", "--train_target", "b", "--output_dir", "o"]
    parse_flags(base + ["--runner", "DaskRunner", "--dask_client_address",
                        "tcp://127.0.0.1:1", "--dask_connection_timeout", "5"])
    parse_flags(base + ["--runner=DaskRunner", "--dask_npartitions", "4"])
    parse_flags(base + ["--runner", "PrismRunner", "--prism_location", "/p",
                        "--prism_log_level", "warn"])
    assert runner_class_path("DaskRunner") == \
        "pipeline.runtime.dask_runner.DatagenDaskRunner"
    assert runner_class_path("Dask") == "pipeline.runtime.dask_runner.DatagenDaskRunner"
    assert runner_class_path("PrismRunner").endswith("prism_runner.PrismRunner")
    assert runner_class_path("NoSuchRunner") is None
    with pytest.raises(DatagenError, match=r"--dask_clinet_address \(did you mean "
                                           r"--dask_client_address\?\)"):
        parse_flags(base + ["--runner", "DaskRunner", "--dask_clinet_address", "x"])


def test_the_job_runs_beams_dask_runner_patched():
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.runners.dask.dask_runner import DaskRunner
    from pipeline.runtime.dask_runner import DatagenDaskRunner
    from pipeline.runtime.runners import runner_for_pass, runner_name
    options = PipelineOptions(["--runner", "DaskRunner"])
    runner, _ = runner_for_pass(options)
    assert isinstance(runner, DatagenDaskRunner) and isinstance(runner, DaskRunner)
    assert runner_name(options) == "dask"
    assert runner_for_pass(PipelineOptions(["--runner", "PrismRunner"]))[0] is None
