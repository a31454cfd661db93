"""One job server per job for FlinkRunner and SparkRunner (`pipeline.runtime.job_server`).

Beam's Flink and Spark job server jars are not on the Maven Central this machine reaches
(HTTP 404 for every version of `beam-runners-flink-*-job-server` and
`beam-runners-spark-3-job-server`), so the end-to-end test here starts Beam's Python job
service (`local_job_service_main`, a real Beam job server speaking the same Job API) where the
job would start the jar: what it checks is the job's side, that every pass of a job submits
to one job server started once, which is stopped when the job ends, and that a driver killed
with SIGKILL does not leave it running.
"""

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from datagen_helpers import DATA_DIR, FNAPI, output_bytes, run_datagen, wait_for
from pipeline import datagen
from pipeline.runtime import job_server
from pipeline.runtime.runners import FLINK_BATCH_MODE, FlinkJavaOptions, runner_for_pass
from repo_paths import REPO_ROOT, TESTS_DIR

SAMPLE = os.path.join(DATA_DIR, "enzh-mlqe-pe")
FLAGS = ["--problem", "p", "--vocab_size", 300, "--num_train_shards", 3, "--seed", 5]


def test_job_server_only_for_flink_and_spark_without_an_endpoint():
    def needs(*args):
        return job_server.needs_job_server(PipelineOptions(list(args)))

    assert needs("--runner", "FlinkRunner", "--flink_master", "localhost:8081")
    assert needs("--runner", "FlinkRunner", "--flink_master", "[local]")
    assert needs("--runner", "SparkRunner", "--spark_master_url", "spark://127.0.0.1:7077")
    assert not needs("--runner", "FlinkRunner", "--job_endpoint", "localhost:8099")
    assert not needs("--runner", "FlinkRunner", "--flink_submit_uber_jar")
    assert not needs("--runner", "SparkRunner", "--spark_submit_uber_jar")
    assert not needs("--runner", "FlinkRunner", "--dry_run", "True")
    assert not needs("--runner", "PortableRunner", "--job_endpoint", "localhost:8099")
    assert not needs("--runner", "DirectRunner")


def test_flink_passes_run_batch_forced_unless_told_otherwise():
    flink = PipelineOptions(["--runner", "FlinkRunner"])
    _, options = runner_for_pass(flink)
    assert options.view_as(FlinkJavaOptions).execution_mode_for_batch == FLINK_BATCH_MODE
    assert flink.view_as(FlinkJavaOptions).execution_mode_for_batch is None  # a copy's
    given = PipelineOptions(["--runner", "FlinkRunner", "--execution_mode_for_batch",
                             "PIPELINED", "--number_of_execution_retries", "2"])
    _, options = runner_for_pass(given)
    assert options.view_as(FlinkJavaOptions).execution_mode_for_batch == "PIPELINED"
    encoded = options.get_all_options()
    assert encoded["number_of_execution_retries"] == 2
    _, spark = runner_for_pass(PipelineOptions(["--runner", "SparkRunner"]))
    assert spark.view_as(FlinkJavaOptions).execution_mode_for_batch is None


@pytest.mark.parametrize("runner,flag", [
    (["--runner", "FlinkRunner", "--flink_master", "[local]",
      "--flink_job_server_jar", "/nonexistent/job-server.jar"], "--flink_job_server_jar"),
    (["--runner", "SparkRunner", "--spark_master_url", "spark://127.0.0.1:1",
      "--spark_job_server_jar", "/nonexistent/job-server.jar"], "--spark_job_server_jar"),
])
def test_a_job_server_jar_that_cannot_be_had_is_one_line_and_exit_2(tmp_path, capsys, runner,
                                                                     flag):
    code = datagen.main(["--train_source", os.path.join(SAMPLE, "dev.en"),
                         "--train_target", os.path.join(SAMPLE, "dev.zh"),
                         "--output_dir", str(tmp_path / "out"),
                         "--environment_type", "EXTERNAL", "--environment_config",
                         "localhost:2"] + runner)
    assert code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and "job server jar" in errors[0] and flag + " PATH" in errors[0]
    assert not os.path.exists(tmp_path / "out")  # a refused run leaves no new directory


def test_a_flink_master_that_does_not_answer_is_one_line_and_exit_2(tmp_path, capsys):
    from apache_beam.utils.subprocess_server import pick_port
    (port,) = pick_port(None)  # nothing listens there
    code = datagen.main(["--train_source", os.path.join(SAMPLE, "dev.en"),
                         "--train_target", os.path.join(SAMPLE, "dev.zh"),
                         "--output_dir", str(tmp_path / "out"), "--runner", "FlinkRunner",
                         "--flink_master", "127.0.0.1:%d" % port, "--environment_type",
                         "EXTERNAL", "--environment_config", "localhost:2"])
    assert code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and "Flink's REST API does not answer" in errors[0]


def _python_job_service(started):
    """job_server_command's stand-in: Beam's Python job service on a free port."""
    def command(options, artifacts_dir):
        from apache_beam.utils.subprocess_server import pick_port
        (port,) = pick_port(None)
        started.append(artifacts_dir)
        return ([sys.executable, "-m", "apache_beam.runners.portability.local_job_service_main",
                 "--port", str(port)], "localhost:%d" % port)
    return command


def _shell_job_server(options, artifacts_dir):
    """A job server that ends only by a signal's default action (Beam's Python job service
    has a SIGTERM handler of its own, which an ignored SIGTERM does not survive exec)."""
    from apache_beam.utils.subprocess_server import pick_port
    (port,) = pick_port(None)
    server = ("import grpc, time\nfrom concurrent import futures\n"
              "s = grpc.server(futures.ThreadPoolExecutor(1)); s.add_insecure_port('localhost:%d')"
              "\ns.start()\nwhile True: time.sleep(1)\n" % port)
    return [sys.executable, "-c", server], "localhost:%d" % port


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as f:  # a zombie is not running
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_every_pass_of_a_job_submits_to_one_job_server_stopped_at_the_end(
        tmp_path, monkeypatch, caplog):
    caplog.set_level("INFO", logger="datagen")
    started = []
    monkeypatch.setattr(job_server, "job_server_command", _python_job_service(started))
    servers = []
    real_start = job_server.JobServer.start

    def start(self):
        servers.append(self)
        return real_start(self)
    monkeypatch.setattr(job_server.JobServer, "start", start)
    source, target = os.path.join(SAMPLE, "dev.en"), os.path.join(SAMPLE, "dev.zh")
    flink = ["--runner", "FlinkRunner", "--flink_master", "[local]",
             "--environment_type", "LOOPBACK"]
    summary = run_datagen(tmp_path / "flink", source, target, *FLAGS, runner=flink)
    assert summary["runner"] == "FlinkRunner" and summary["passes"] >= 2
    assert len(started) == 1 and len(servers) == 1  # one job server for every pass
    assert servers[0].endpoint and servers[0].seconds > 0
    assert "job server started in" in caplog.text and "job server stopped" in caplog.text
    assert summary["job_server_start_seconds"] > 0
    assert caplog.text.count(" s (submitted after ") == summary["passes"]
    assert not os.path.exists(os.path.dirname(started[0]))  # its directory removed
    run_datagen(tmp_path / "fnapi", source, target, *FLAGS, runner=FNAPI)
    assert output_bytes(tmp_path / "flink") == output_bytes(tmp_path / "fnapi")


_DRIVER = textwrap.dedent("""
    import sys, time
    sys.path[:0] = [{tests!r}, {helpers!r}, {repo!r}]
    from apache_beam.options.pipeline_options import PipelineOptions
    from pipeline.runtime import job_server
    import test_job_server
    job_server.job_server_command = test_job_server._python_job_service([])
    server = job_server.JobServer(PipelineOptions(["--runner", "FlinkRunner"])).start()
    print(server._proc.pid, flush=True)
    time.sleep(600)
""")


@pytest.mark.slow
def test_a_job_server_ends_with_a_driver_killed_by_sigkill(tmp_path):
    tests = os.path.dirname(os.path.abspath(__file__))
    driver = subprocess.Popen(
        [sys.executable, "-c", _DRIVER.format(tests=tests, helpers=TESTS_DIR, repo=REPO_ROOT)],
        stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        group = int(driver.stdout.readline())  # the job server's shell: its process group
        members = [int(p) for p in os.listdir("/proc") if p.isdigit() and _group_of(p) == group]
        assert len(members) >= 2  # the shell and the job server
        driver.kill()
        driver.wait()
        wait_for(lambda: not [p for p in members if _alive(p)],
                 "the job server's group ending after its driver", seconds=300)
    finally:
        if driver.poll() is None:
            driver.kill()


def _group_of(pid):
    try:
        with open("/proc/%s/stat" % pid) as f:
            return int(f.read().split(")")[-1].split()[2])
    except (OSError, ValueError, IndexError):
        return None


@pytest.mark.slow
def test_a_failed_pass_is_one_line_then_a_rerun_completes_byte_identical(
        tmp_path, monkeypatch, capsys):
    """A pass that fails on the runner (here a DoFn error, as a worker lost without a restart
    strategy): exit 1, one ERROR line naming the pass and the runner, the job server
    stopped, nothing left but the vocab files and a failed summary; the rerun reuses them
    and writes what FnApiRunner writes."""
    from transforms.encode import encode_pairs
    started = []
    monkeypatch.setattr(job_server, "job_server_command", _python_job_service(started))

    def fail(self, chunk):
        raise RuntimeError("worker lost\n  at some.java.Frame(Frame.java:1)")
    real_process = encode_pairs._EncodeChunkFn.process
    monkeypatch.setattr(encode_pairs._EncodeChunkFn, "process", fail)
    out = tmp_path / "flink"
    argv = ["--output_dir", str(out), "--train_source", os.path.join(SAMPLE, "dev.en"),
            "--train_target", os.path.join(SAMPLE, "dev.zh"), "--runner", "FlinkRunner",
            "--flink_master", "[local]", "--environment_type", "LOOPBACK"] + [
                str(f) for f in FLAGS]
    assert datagen.main(argv) == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if " ERROR " in line]
    assert len(errors) == 1, err
    assert " pass 2 (encode " in errors[0] and "failed on FlinkRunner" in errors[0]
    # the error's first line and its root cause (the LOOPBACK workers run in this process,
    # so their own error log is on this stderr too; on a cluster it is the workers')
    assert "failed in state FAILED" in errors[0] and errors[0].endswith("RuntimeError: worker lost")
    left = sorted(os.listdir(out))
    assert [n for n in left if "-train-" in n or n.endswith("COMPLETE")] == []
    assert ".datagen-work" not in left
    with open(out / "p.datagen_summary.json") as f:
        assert '"status": "failed"' in f.read()
    monkeypatch.setattr(encode_pairs._EncodeChunkFn, "process", real_process)
    assert datagen.main(argv) == 0
    assert len(started) == 2  # one job server per job
    run_datagen(tmp_path / "fnapi", os.path.join(SAMPLE, "dev.en"),
                os.path.join(SAMPLE, "dev.zh"), *FLAGS, runner=FNAPI)
    assert output_bytes(out) == output_bytes(tmp_path / "fnapi")
    assert ".datagen-work" not in os.listdir(out)


@pytest.mark.parametrize("runner", [["--runner", "FlinkRunner"], ["--runner=SparkRunner"],
                                    ["--runner", "PortableRunner"]])
def test_the_jobs_local_machinery_is_off_on_cluster_runners(runner, monkeypatch):
    """The fork server, the job's worker processes and the in-process switch for small
    inputs serve DirectRunner only, even with DirectRunner's flags on the command line."""
    from multiprocessing import forkserver
    from pipeline.runtime import local_worker_pool
    from pipeline.runtime.runners import (run_small_input_in_process, uses_local_worker_pool,
                                          uses_worker_processes)
    argv = runner + ["--direct_running_mode", "multi_processing", "--direct_num_workers", "2"]
    options = PipelineOptions(argv)
    assert not uses_worker_processes(options) and not uses_local_worker_pool(options)
    assert not run_small_input_in_process(options, 10, 16)
    started = []
    monkeypatch.setattr(forkserver, "ensure_running", lambda: started.append(1))
    local_worker_pool.start_early(argv)
    assert started == []
    direct = ["--runner", "DirectRunner"] + argv[len(runner):]
    local_worker_pool.start_early(direct + ["--local_worker_pool", "off"])
    assert started == []
    local_worker_pool.start_early(direct)
    assert started == [1]


def test_a_job_server_that_cannot_start_is_one_line_at_once(tmp_path, capsys):
    """A jar that is not one: the JVM ends at once, and so does the job (exit 2, its last
    words in the one ERROR line), not after the start timeout."""
    import shutil
    if shutil.which("java") is None:
        pytest.skip("no java on PATH")
    jar = tmp_path / "empty.jar"
    jar.write_bytes(b"")
    code = datagen.main(["--train_source", os.path.join(SAMPLE, "dev.en"),
                         "--train_target", os.path.join(SAMPLE, "dev.zh"),
                         "--output_dir", str(tmp_path / "out"), "--runner", "FlinkRunner",
                         "--flink_job_server_jar", str(jar), "--environment_type", "EXTERNAL",
                         "--environment_config", "localhost:2"])
    assert code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if " ERROR " in line]
    # the start's wait saw the JVM end (it looks before every half-second wait for an
    # answer), not its START_SECONDS running out: that line says "did not answer within"
    assert len(errors) == 1 and "exited with status 1 before it answered" in errors[0]
    assert "corrupt jarfile" in errors[0]


@pytest.mark.slow
def test_a_job_server_started_with_the_jobs_signals_blocked_stops_on_sigterm(monkeypatch):
    """While the job runs, its driver blocks and ignores SIGINT/SIGTERM (pipeline.runtime.interrupts),
    and a child inherits both: the job server must not, or stopping it waits for the SIGKILL
    fallback."""
    monkeypatch.setattr(job_server, "job_server_command", _shell_job_server)
    old = signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGTERM))
    saved = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server = job_server.JobServer(PipelineOptions(["--runner", "FlinkRunner"])).start()
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    stopped = []
    stop_group = job_server._stop_group
    monkeypatch.setattr(job_server, "_stop_group",
                        lambda proc: (stop_group(proc), stopped.append(proc.returncode)))
    server.stop()
    # its group ended on the SIGTERM, not on the SIGKILL sent after STOP_SECONDS
    assert stopped and stopped[0] != -signal.SIGKILL, stopped


_COMMAND = textwrap.dedent("""
    import signal, sys
    signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGTERM))  # as the command
    sys.path[:0] = [{tests!r}, {helpers!r}, {repo!r}]
    from pipeline import datagen
    from pipeline.runtime import job_server
    import test_job_server
    job_server.job_server_command = test_job_server._python_job_service([])
    if {at_return!r}:  # the Ctrl-C as the job server's start returns: made certain
        import os, time
        start = job_server.JobServer.start
        def start_then_ctrl_c(self):
            start(self)
            os.killpg(0, signal.SIGINT)  # to the job's group, as a terminal sends it
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                time.sleep(0.01)  # the job's Interrupted is raised in here
            return self
        job_server.JobServer.start = start_then_ctrl_c
    datagen._leave(datagen.main(sys.argv[1:]))
""")


@pytest.mark.slow
@pytest.mark.parametrize("at_return", [False, True], ids=["once-started", "as-start-returns"])
def test_ctrl_c_to_the_jobs_process_group_stops_its_job_server(tmp_path, at_return):
    """A terminal's Ctrl-C reaches the job's process group, not the job server's session:
    the job handles it (exit 130, one line) and stops the job server itself, also when it
    lands as the server's start returns (the job held no reference to it yet: the server
    was left running)."""
    tests = os.path.dirname(os.path.abspath(__file__))
    argv = ["--output_dir", str(tmp_path / "out"), "--train_source",
            os.path.join(SAMPLE, "train.en"), "--train_target", os.path.join(SAMPLE, "train.zh"),
            "--runner", "FlinkRunner", "--environment_type", "LOOPBACK"] + [
                str(f) for f in FLAGS]
    proc = subprocess.Popen(
        [sys.executable, "-c",
         _COMMAND.format(tests=tests, helpers=TESTS_DIR, repo=REPO_ROOT, at_return=at_return)]
        + argv,
        stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines = []
    try:
        for line in proc.stderr:
            lines.append(line)
            if "job server started" in line:
                break
        server = int(lines[-1].split("pid ")[1].rstrip(")\n"))
        os.killpg(proc.pid, signal.SIGINT)  # the job server is up: the job must stop it
        rest = proc.communicate(timeout=600)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, "".join(lines) + rest
    errors = [line for line in rest.splitlines() if " ERROR " in line]
    assert errors == [errors[0]] and "interrupted (SIGINT)" in errors[0]
    assert not _alive(server), "".join(lines) + rest
    left = [p for p in os.listdir("/proc") if p.isdigit() and _group_of(p) == server]
    assert not left, [open("/proc/%s/stat" % p).read()[:120] for p in left]


def test_job_server_commands_are_beams_with_the_jobs_options(tmp_path):
    """The command is the one Beam's runner would run: its jar, its arguments, the job's
    --job_server_jvm_properties (and, for Spark, the --add-opens Java 17 needs)."""
    jar = tmp_path / "job-server.jar"
    jar.write_bytes(b"")
    spark, endpoint = job_server.job_server_command(PipelineOptions([
        "--runner", "SparkRunner", "--spark_master_url", "spark://127.0.0.1:7077",
        "--spark_job_server_jar", str(jar), "--job_server_jvm_properties=-Xmx2g"]),
        str(tmp_path / "artifacts"))
    spark = [str(c) for c in spark]
    assert spark[0] == "java" and "-Xmx2g" in spark
    assert "--add-opens=java.base/java.util=ALL-UNNAMED" in spark
    assert spark[spark.index("-jar") + 1] == str(jar)
    assert spark[spark.index("--spark-master-url") + 1] == "spark://127.0.0.1:7077"
    assert spark[spark.index("--artifacts-dir") + 1] == str(tmp_path / "artifacts")
    assert spark[spark.index("--job-port") + 1] == endpoint.split(":")[1]
    flink, _ = job_server.job_server_command(PipelineOptions([
        "--runner", "FlinkRunner", "--flink_master", "127.0.0.1:8081",
        "--flink_job_server_jar", str(jar)]), str(tmp_path / "artifacts"))
    flink = [str(c) for c in flink]
    assert flink[flink.index("--flink-master") + 1] == "http://127.0.0.1:8081"
