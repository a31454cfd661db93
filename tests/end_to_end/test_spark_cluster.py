"""The job on a real Spark 3.5 standalone cluster (a master and one worker of 2 cores),
through Beam's Spark job server jar (one per job) and Beam's stock worker pool (EXTERNAL
environment): byte-identical to DirectRunner, every pass a Spark application. Installs and
downloads are cached (`tests/clusters.py`); where they are not possible the test skips with
the reason (fails under CI=true).
"""

import pytest

import clusters
from cluster_jobs import COMMON, INPUTS, KINDS, baseline, books, work_leftovers
from datagen_helpers import assert_books_balance, output_bytes
from pipeline import datagen

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
    expected, direct = baseline(kind, tmp_path_factory)
    before = len(cluster.state()["completedapps"])
    summary = datagen.run(INPUTS + COMMON + KINDS[kind] + runner + [
        "--output_dir", str(tmp_path / "out")])
    assert summary["runner"] == "SparkRunner"
    assert output_bytes(tmp_path / "out") == expected
    assert books(summary) == books(direct)
    assert_books_balance(summary)
    # each pass an application of the cluster's
    assert len(cluster.state()["completedapps"]) - before == summary["passes"]
    assert work_leftovers(tmp_path / "out") == []
