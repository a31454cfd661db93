"""The job on a real Spark 3.5 standalone cluster (a master and one worker of 2 cores),
through Beam's Spark job server jar (one per job) and Beam's stock worker pool (EXTERNAL
environment): byte-identical to DirectRunner, every pass a Spark application. Installs and
downloads are cached (`tests/clusters.py`); where they are not possible the test skips with
the reason (fails under CI=true).
"""

import pytest

import clusters
from cluster_jobs import run_like_direct_runner

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    try:
        jar = clusters.job_server_jar(clusters.SPARK_JOB_SERVER)
        cluster = clusters.SparkCluster(str(tmp_path_factory.mktemp("spark")))
    except clusters.Unavailable as e:
        clusters.unavailable(str(e))
    with clusters.running_with_pool(cluster) as pool:
        yield cluster, clusters.runner_flags(cluster, jar, pool)


@pytest.mark.parametrize("kind", ["subword"])
def test_every_pass_runs_on_spark_byte_identical_to_direct_runner(spark, kind, tmp_path,
                                                                   tmp_path_factory):
    cluster, runner = spark
    before = len(cluster.state()["completedapps"])
    summary = run_like_direct_runner(kind, runner, tmp_path / "out", tmp_path_factory)
    # each pass an application of the cluster's
    assert len(cluster.state()["completedapps"]) - before == summary["passes"]
