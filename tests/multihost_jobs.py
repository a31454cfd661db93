"""What the multi-host job tests share (tests/multihost_cluster.py makes the hosts): the
sample corpus in the bucket, the job's flags there, its DirectRunner baseline, the outputs
read back, and the moments a test injects a fault at.

Every output is compared whole with a DirectRunner run of the same flags (same s3:// inputs,
output on the driver's disk): every shard, vocab file, length report, rejects file and
fingerprint sidecar byte-identical (equal shards also mean no record lost or written twice);
only the summary and the marker, which hold times, are left out, and the summaries' books
(pairs read, written, rejected per split and dataset) are compared instead.
"""

import json
import os

from cluster_jobs import Job, books
from object_store_servers import BUCKET
from repo_paths import DATA_DIR, SAMPLE_DATA

SAMPLE = os.path.join(SAMPLE_DATA, "enzh-mlqe-pe")
INPUTS = ["--train_source", "s3://%s/in/train.en" % BUCKET,
          "--train_target", "s3://%s/in/train.zh" % BUCKET,
          "--dev_source", "s3://%s/in/dev.en" % BUCKET,
          "--dev_target", "s3://%s/in/dev.zh" % BUCKET]
# The sample (7,000 + 1,000 pairs) in 8 train chunks: enough tasks that both workers encode.
COMMON = ["--encode_chunk_lines", "1000"]
NOT_COMPARED = (".datagen_summary.json", ".DATAGEN_COMPLETE")

_baselines = {}


def put_sample(cluster):
    """The bundled sample under s3://BUCKET/in/."""
    s3 = cluster.s3()
    for name in sorted(os.listdir(SAMPLE)):
        with open(os.path.join(SAMPLE, name), "rb") as f:
            s3.put_object(Bucket=BUCKET, Key="in/" + name, Body=f.read())


def _compared(name, problem):
    return (not name.endswith(NOT_COMPARED) and not name.startswith(".datagen-work")
            and (problem is None or _of_problem(name, problem)))


def _of_problem(name, problem):
    base = name.rsplit("/", 1)[-1].lstrip(".")
    return base.startswith((problem + "-", problem + ".")) or ".%s." % problem in name


def local_output(directory, problem=None):
    """{relative path: bytes} of an output on the driver's disk, hidden files included."""
    files = {}
    for base, _, names in os.walk(str(directory)):
        for name in names:
            path = os.path.join(base, name)
            rel = os.path.relpath(path, str(directory))
            if _compared(rel, problem):
                with open(path, "rb") as f:
                    files[rel] = f.read()
    return files


def store_output(cluster, prefix, problem=None):
    """{relative path: bytes} of an output under s3://BUCKET/`prefix`/."""
    s3 = cluster.s3()
    files = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET,
                                                             Prefix=prefix + "/"):
        for listed in page.get("Contents", []):
            rel = listed["Key"][len(prefix) + 1:]
            if _compared(rel, problem):
                files[rel] = s3.get_object(Bucket=BUCKET, Key=listed["Key"])["Body"].read()
    return files


def store_keys(cluster, prefix):
    """Every key under s3://BUCKET/`prefix`/, relative to it."""
    s3 = cluster.s3()
    return sorted(o["Key"][len(prefix) + 1:]
                  for page in s3.get_paginator("list_objects_v2").paginate(
                      Bucket=BUCKET, Prefix=prefix + "/")
                  for o in page.get("Contents", []))


def store_summary(cluster, prefix, problem):
    body = cluster.s3().get_object(Bucket=BUCKET, Key="%s/%s.datagen_summary.json"
                                   % (prefix, problem))["Body"].read()
    return json.loads(body)


class Baseline:
    """The job with `flags` (INPUTS and the store's flags added) on DirectRunner, output on
    the driver's disk, run as a command beside the cluster's run (`result` waits for it)."""

    def __init__(self, cluster, flags, out, given_files=None):
        self.out = out
        self.problem = flags[flags.index("--problem") + 1]
        for name, data in (given_files or {}).items():
            os.makedirs(os.path.dirname(os.path.join(str(out), name)), exist_ok=True)
            with open(os.path.join(str(out), name), "wb") as f:
                f.write(data)
        self.job = Job(INPUTS + list(flags) + cluster.s3_flags() + [
            "--output_dir", str(out), "--runner", "DirectRunner"])
        self._result = None

    def result(self):
        """(output files, books)."""
        if self._result is None:
            assert self.job.finish() == 0, log(self.job)
            with open(os.path.join(str(self.out), self.problem + ".datagen_summary.json")) as f:
                summary = json.load(f)
            self._result = (local_output(self.out, self.problem), books(summary))
        return self._result


def baseline(cluster, flags, tmp_path_factory, given_files=None):
    """The `Baseline` of `flags`, started on first use."""
    key = tuple(flags)
    if key not in _baselines:
        _baselines[key] = Baseline(cluster, flags, tmp_path_factory.mktemp("direct") / "out",
                                   given_files)
    return _baselines[key]


def t2t_vocab_files(problem):
    """{name: bytes}: T2T's own en/zh subword vocab files named for `problem`, which a run
    finds in its output directory and reuses (no vocab pass), as T2T does."""
    files = {}
    for lang in ("en", "zh"):
        with open(os.path.join(DATA_DIR, "t2t_vocab", "vocab.translate_enzh_wmt8k.8192."
                               "subwords." + lang), "rb") as f:
            files["vocab.%s.8192.subwords.%s" % (problem, lang)] = f.read()
    return files


def start_job(cluster, flags, prefix, tmp_path_factory, given_files=None):
    """The job with `flags` on the cluster, into s3://BUCKET/`prefix` (a cluster_jobs.Job),
    and its DirectRunner baseline beside it; `given_files` ({name: bytes}) are put into
    both output directories first."""
    baseline(cluster, flags, tmp_path_factory, given_files)
    for name, data in (given_files or {}).items():
        cluster.s3().put_object(Bucket=BUCKET, Key="%s/%s" % (prefix, name), Body=data)
    return Job(INPUTS + list(flags) + cluster.s3_flags() + cluster.dask_flags()
               + ["--output_dir", "s3://%s/%s" % (BUCKET, prefix)])


def log(job):
    return "\n".join(job.lines[-30:])


def assert_same_as_direct(cluster, job, flags, prefix, tmp_path_factory):
    """The job ended complete, with DirectRunner's files and books."""
    assert job.finish() == 0, log(job)
    problem = flags[flags.index("--problem") + 1]
    expected, expected_books = baseline(cluster, flags, tmp_path_factory).result()
    got = store_output(cluster, prefix, problem)
    assert sorted(got) == sorted(expected)
    assert [name for name in sorted(expected) if got[name] != expected[name]] == []
    assert books(store_summary(cluster, prefix, problem)) == expected_books
    assert not [k for k in store_keys(cluster, prefix) if k.startswith(".datagen-work/%s/"
                                                                         % problem)]


def on_workers(cluster, path):
    """{worker: whether `path` exists on its host}."""
    with cluster.client() as client:
        names = {a: w["name"] for a, w in
                 client.scheduler_info(n_workers=-1)["workers"].items()}
        return {names[a]: seen for a, seen in client.run(os.path.exists, str(path)).items()}


def pass_starts(cluster, job, text):
    """Waits for the job's `pass N of M: ...` line holding `text`; returns (how many tasks
    the cluster had started by then, `pass N`)."""
    job.wait_for_line(text)
    line = next(line for line in job.lines if text in line)
    return len(cluster.starts()), line[line.index("pass "):line.index(" of ")]


def at_work_in_pass(cluster, host, job, text):
    """Returns once the pass whose line holds `text` runs and worker `host` has started one
    of its tasks: (starts before the pass, whether the pass was still running then)."""
    before, number = pass_starts(cluster, job, text)
    cluster.wait_for_start(host, before, job=job)
    return before, not any(number + " done" in line for line in job.lines)


def lose_host_in_pass(cluster, host, job, text):
    """Every process of worker `host` killed at once, as `at_work_in_pass` returns."""
    before, running = at_work_in_pass(cluster, host, job, text)
    cluster.kill_host(host)
    return before, running


def assert_rescheduled(cluster, before, lost_host="w2", other="w1"):
    """The scheduler removed `lost_host` (after the first `before` task starts) while tasks
    ran there or results were held only there, and `other` started some of those again."""
    starts, removed = cluster.task_log()
    removal = [r for r in removed if r["name"] == lost_host and r["after_starts"] >= before]
    assert removal, removed
    held = set(removal[0]["running"]) | set(removal[0]["lost"])
    assert held, "%s held nothing when it went: nothing was rescheduled" % lost_host
    again = {key for name, key in starts[removal[0]["after_starts"]:] if name == other}
    assert held & again, (sorted(held)[:5], len(again))
