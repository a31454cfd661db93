"""Two problems sharing one --output_dir (README: "Several problems in one directory").

Each run touches only its own work: real job subprocesses of two problems on the same
directory, at the same time or one inside the other, both end complete, with outputs
byte-identical to each run alone. The interleaving that used to lose work (one run ending
while the other is mid-pass) is made certain with SIGSTOP/SIGCONT, not with timing.
"""

import os
import re
import signal

import pytest

from datagen_helpers import (FNAPI, MLQE, end_group, output_bytes, pass_started, start_job,
                             wait_for_line)
from pipeline import datagen

pytestmark = pytest.mark.slow

PROBLEMS = ("a", "b")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """300 pairs of the bundled sample and 20 of them again (duplicates, which the clean
    pass records in a work file that later passes read)."""
    directory = tmp_path_factory.mktemp("corpus")
    paths = []
    for lang in ("en", "zh"):
        with open(os.path.join(MLQE, "train." + lang), "rb") as f:
            lines = [f.readline() for _ in range(300)]
            data = b"".join(lines + lines[:20])
        path = directory / ("train." + lang)
        path.write_bytes(data)
        paths.append(str(path))
    return paths


def _argv(out, corpus, problem):
    return ["--train_source", corpus[0], "--train_target", corpus[1], "--output_dir", str(out),
            "--problem", problem, "--num_train_shards", "2",
            "--dedup", "pairs"] + FNAPI  # 4 passes: prepare, clean, vocab, encode


@pytest.fixture(scope="module")
def alone(corpus, tmp_path_factory):
    """{problem: output_bytes} of each problem's run alone in a directory of its own."""
    outputs = {}
    for problem in PROBLEMS:
        out = tmp_path_factory.mktemp("alone-" + problem)
        assert datagen.main(_argv(out, corpus, problem)) == 0
        outputs[problem] = output_bytes(out)
    return outputs


def _start(out, corpus, problem, *extra):
    return start_job(_argv(out, corpus, problem) + list(extra))


def _finish(proc, before=""):
    """(exit status, stderr) of a started run; its group is killed if it hangs."""
    try:
        err = before + proc.stderr.read()
        return proc.wait(timeout=600), err
    finally:
        end_group(proc)


def _b_stopped_mid_pass_while_a_runs(start):
    """b, started by `start(problem)`, is stopped (SIGSTOP) as its vocab pass starts; a
    runs start to end; b goes on (SIGCONT) and ends. Both must end with status 0."""
    b = start("b")
    try:
        b_err = "".join(wait_for_line(b, pass_started(3)))
        os.killpg(b.pid, signal.SIGSTOP)
        try:
            a_status, a_err = _finish(start("a"))
        finally:
            os.killpg(b.pid, signal.SIGCONT)
        b_status, b_err = _finish(b, b_err)
    finally:
        end_group(b)
    assert a_status == 0, a_err
    assert b_status == 0, b_err
    assert "Traceback" not in a_err + b_err


def _assert_both_complete(out, alone):
    shared = output_bytes(out)
    for problem in PROBLEMS:
        assert os.path.exists(os.path.join(str(out), "%s.DATAGEN_COMPLETE" % problem))
        assert not os.path.exists(os.path.join(str(out), "%s.datagen.lock" % problem))
        # README.md, the dataset card, is the directory's one: the first problem's to end
        assert {k: shared.get(k) for k in alone[problem] if k != "README.md"} == {
            k: v for k, v in alone[problem].items() if k != "README.md"}, problem
    assert shared["README.md"] in (alone["a"]["README.md"], alone["b"]["README.md"])
    assert sorted(shared) == sorted(set(alone["a"]) | set(alone["b"]))
    assert not os.path.exists(os.path.join(str(out), ".datagen-work"))


def test_one_problem_ends_while_the_other_is_mid_pass(tmp_path, corpus, alone):
    """b is stopped (SIGSTOP) as its vocab pass starts, its work directory holding what its
    prepare and clean passes wrote; a runs start to end in the same directory; b goes on
    (SIGCONT), reads that work, and ends complete too."""
    out = tmp_path / "shared"
    _b_stopped_mid_pass_while_a_runs(lambda problem: _start(out, corpus, problem))
    _assert_both_complete(out, alone)


def test_two_problems_at_the_same_time_and_again(tmp_path, corpus, alone):
    """Both started together, then both again (--overwrite): every run ends complete."""
    out = tmp_path / "shared"
    for extra in ([], ["--overwrite"]):
        procs = [_start(out, corpus, p, *extra) for p in PROBLEMS]
        results = [_finish(p) for p in procs]
        for status, err in results:
            assert status == 0, err
        _assert_both_complete(out, alone)


def test_a_run_removes_only_its_own_problems_temporary_files(tmp_path, corpus):
    """Temporary names a killed run left are removed by the next run of that problem; those
    of another problem (whose run may be writing them right now) are left alone."""
    out = tmp_path / "shared"
    out.mkdir()
    hex_ = "0123456789abcdef" * 2
    mine = [".a.datagen_summary.json.tmp-" + hex_, ".vocab.a.8192.subwords.en.tmp-" + hex_,
            ".a-train-00000-of-00002.tmp-" + hex_]
    theirs = [".b.datagen_summary.json.tmp-" + hex_, ".vocab.b.8192.subwords.en.tmp-" + hex_,
              ".b-train-00000-of-00002.tmp-" + hex_, ".a.datagen.lock.tmp-" + hex_]
    for name in mine + theirs:
        (out / name).write_bytes(b"x")
    assert datagen.main(_argv(out, corpus, "a")) == 0
    assert sorted(n for n in os.listdir(out) if ".tmp-" in n) == sorted(theirs)


def test_on_s3_one_problem_ends_while_the_other_is_mid_pass(s3, corpus, alone):
    """The same interleaving with inputs and --output_dir on S3 (moto_server): both runs end
    complete; every object but the per-run and per-place ones (summary, marker, vocab
    fingerprints, rejects, which name the input paths) is byte-identical to the run alone
    on local disk, and no work object is left."""
    from object_store_servers import BUCKET
    client = s3.client()
    inputs = []
    for path in corpus:
        key = "shared-in/" + os.path.basename(path)
        with open(path, "rb") as f:
            client.put_object(Bucket=BUCKET, Key=key, Body=f.read())
        inputs.append("s3://%s/%s" % (BUCKET, key))
    out = "s3://%s/shared-out" % BUCKET

    _b_stopped_mid_pass_while_a_runs(
        lambda problem: start_job(_argv(out, inputs, problem) + s3.beam_flags()))
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix="shared-out/").get("Contents", [])
    objects = {o["Key"][len("shared-out/"):]: client.get_object(
        Bucket=BUCKET, Key=o["Key"])["Body"].read() for o in listed}
    assert not [k for k in objects if k.startswith(".datagen-work") or ".tmp-" in k]
    assert "a.DATAGEN_COMPLETE" in objects and "b.DATAGEN_COMPLETE" in objects
    expected = set(alone["a"]) | set(alone["b"]) | {
        "a.DATAGEN_COMPLETE", "b.DATAGEN_COMPLETE", "a.datagen_summary.json",
        "b.datagen_summary.json"}
    fingerprints = {".vocab.%s.8192.subwords.%s.fingerprint.json" % (p, lang)
                    for p in PROBLEMS for lang in ("en", "zh")}  # hidden: not in `alone`
    assert sorted(objects) == sorted(expected | fingerprints)
    # the dataset card, README.md, is the directory's one: the first problem's to finish
    per_place = re.compile(r"(\.fingerprint\.json|^rejects/.*|^README\.md)$")
    for problem in PROBLEMS:
        for name, data in alone[problem].items():
            if not per_place.search(name):
                assert objects[name] == data, name
