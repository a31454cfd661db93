"""Issue 49, item 5: a rerun after the job was killed mid-encode keeps the chunks it had
finished (and the shards it had merged), checked by content, and ends byte-identical to an
uninterrupted run (README, Resume).

The kill lands on an event: the job's process group is stopped (SIGSTOP) once K chunk
manifests are on disk, the manifests are counted while nothing runs, then the whole group gets
SIGKILL (a lost machine, `kill -9` of the tree) or SIGTERM (a SLURM walltime). So the rerun
knows exactly how many chunks it may reuse, whatever the machine's speed. A kill once the
first shard's manifest is there (the merge under way) leaves shards the rerun keeps.
"""

import glob
import json
import os
import signal

import pytest

from datagen_helpers import (DIRECT_MP2, FNAPI, output_bytes, small_corpus, start_job, end_group,
                             wait_for)
from local_chunk_gate import gate_variables
from object_store_servers import BUCKET
from pipeline import datagen

pytestmark = pytest.mark.slow

LINES, CHUNK_LINES = 2000, 100
CHUNKS = LINES // CHUNK_LINES
PASSED = 8  # chunks a gated job encodes (tests/local_chunk_gate.py): 5 <= finished <= 8 < CHUNKS
# each chunk's records (~10 KB) fill a fragment group: a manifest per chunk, written as it ends
FLAGS = ["--problem", "p", "--vocab_size", "1000", "--num_train_shards", "3",
         "--encode_chunk_lines", str(CHUNK_LINES), "--fragment_group_mb", "0.001"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return small_corpus(tmp_path_factory.mktemp("in"), LINES)


@pytest.fixture(scope="module")
def uninterrupted(corpus, tmp_path_factory):
    """{relative path: bytes} of the job's output, run once without a kill."""
    out = tmp_path_factory.mktemp("whole") / "out"
    assert datagen.main(_argv(out, corpus, FNAPI)) == 0
    assert _summary(out)["resume"] == {"chunks_encoded": CHUNKS, "shards_written": 3}
    return output_bytes(out)


def _argv(out, corpus, runner, *extra):
    return (["--train_source", corpus[0], "--train_target", corpus[1], "--output_dir",
             str(out)] + FLAGS + list(runner) + list(extra))


def _summary(out):
    with open(os.path.join(str(out), "p.datagen_summary.json")) as f:
        return json.load(f)


def _manifests(out):
    return sorted(glob.glob(os.path.join(str(out), ".datagen-work", "p", "encode-*", "chunks",
                                         "*.json")))


def _gated(gate_dir, passed):
    """The environment of a job whose local workers encode only the first `passed` chunks and
    hold the rest (tests/local_chunk_gate.py): without it a loaded machine's poll saw 5 manifests
    only once all 20 chunks were done."""
    return dict(os.environ, **gate_variables(gate_dir, passed))


def _stop_then(argv, count, sig, k=5, env=None):
    """Starts the job, stops its group once `k` chunk manifests exist, counts them
    (`count()`), sends `sig` to the group; returns (manifests then, exit status)."""
    proc = start_job(argv, env=env)
    try:
        wait_for(lambda: count() >= k, "%d chunk manifests" % k, proc)
        os.killpg(proc.pid, signal.SIGSTOP)
        finished = count()
        os.killpg(proc.pid, sig)
        os.killpg(proc.pid, signal.SIGCONT)
        status = proc.wait(timeout=600)
    finally:
        end_group(proc)
        proc.stderr.close()
    return finished, status


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_a_rerun_after_a_kill_mid_encode_reuses_the_finished_chunks(tmp_path, corpus,
                                                                    uninterrupted, sig):
    out = tmp_path / "out"
    finished, status = _stop_then(_argv(out, corpus, DIRECT_MP2), lambda: len(_manifests(out)),
                                  sig, env=_gated(str(tmp_path / "gate"), PASSED))
    assert 5 <= finished <= PASSED and finished <= len(os.listdir(tmp_path / "gate"))  # gated
    if sig == signal.SIGTERM:  # an orderly stop: the chunks stay, nothing else of the run
        assert status == 128 + sig and _summary(out)["status"] == "interrupted"
        assert [os.path.basename(d) for d in glob.glob(str(out / ".datagen-work" / "p" / "*"))
                ] == [os.path.basename(os.path.dirname(os.path.dirname(_manifests(out)[0])))]
    assert len(_manifests(out)) >= finished
    assert datagen.main(_argv(out, corpus, FNAPI)) == 0
    reuse = _summary(out)["resume"]
    if sig == signal.SIGKILL:  # nothing ran after the count
        assert reuse["chunks_reused"] == finished
    assert reuse["chunks_reused"] >= finished
    assert reuse["chunks_reused"] + reuse["chunks_encoded"] == CHUNKS
    assert output_bytes(out) == uninterrupted
    assert not os.path.exists(out / ".datagen-work")


def test_a_cut_or_changed_fragment_is_encoded_again_and_another_fingerprint_reuses_nothing(
        tmp_path, corpus, uninterrupted, capsys):
    out = tmp_path / "out"
    finished, _ = _stop_then(_argv(out, corpus, DIRECT_MP2), lambda: len(_manifests(out)),
                             signal.SIGKILL, env=_gated(str(tmp_path / "gate"), PASSED))
    manifests = _manifests(out)[:finished]
    fragment_dir = os.path.join(os.path.dirname(os.path.dirname(manifests[0])), "fragments")
    for manifest, damage in zip(manifests, ("truncate", "flip")):
        with open(manifest) as f:
            name = next(v["path"] for tag, _, v in json.load(f)["chunks"][0]["outputs"]
                        if tag == "records")
        with open(os.path.join(fragment_dir, name), "r+b") as f:
            data = f.read()
            f.seek(0)
            f.truncate()
            f.write(data[:-7] if damage == "truncate" else data[:-1] + bytes([data[-1] ^ 1]))
    assert datagen.main(_argv(out, corpus, FNAPI)) == 0
    reuse = _summary(out)["resume"]
    assert reuse["chunks_reused"] == len(manifests) - 2, reuse  # the two damaged: again
    assert reuse["chunks_encoded"] == CHUNKS - len(manifests) + 2
    assert output_bytes(out) == uninterrupted

    # a killed run of another seed (another fingerprint) leaves chunks a rerun never takes
    other = tmp_path / "other"
    finished, _ = _stop_then(_argv(other, corpus, DIRECT_MP2, "--seed", "1"),
                             lambda: len(_manifests(other)), signal.SIGKILL)
    kept = {os.path.dirname(os.path.dirname(m)) for m in _manifests(other)}
    assert datagen.main(_argv(other, corpus, FNAPI)) == 0
    assert _summary(other)["resume"] == {"chunks_encoded": CHUNKS, "shards_written": 3}
    assert output_bytes(other) == uninterrupted
    assert len(kept) == 1 and not os.path.exists(kept.pop())


def _keys(client, prefix):
    return sorted(o["Key"] for o in client.list_objects_v2(
        Bucket=BUCKET, Prefix=prefix).get("Contents", []))


def test_on_s3_a_rerun_after_kill_9_reuses_chunks_and_gives_the_same_bytes(
        s3, corpus, uninterrupted):
    out = "s3://%s/resume/out" % BUCKET
    client = s3.client()
    for side, path in zip(("en", "zh"), corpus):
        with open(path, "rb") as f:
            client.put_object(Bucket=BUCKET, Key="resume/in/train." + side, Body=f.read())
    corpus_s3 = ["s3://%s/resume/in/train.%s" % (BUCKET, side) for side in ("en", "zh")]

    def manifests():
        return [k for k in _keys(client, "resume/out/.datagen-work/") if "/chunks/" in k]
    finished, _ = _stop_then(_argv(out, corpus_s3, FNAPI, *s3.beam_flags()),
                             lambda: len(manifests()), signal.SIGKILL)
    assert datagen.main(_argv(out, corpus_s3, FNAPI, *s3.beam_flags())) == 0
    summary = json.loads(client.get_object(Bucket=BUCKET, Key="resume/out/p.datagen_summary.json")[
        "Body"].read())
    assert summary["resume"]["chunks_reused"] == finished
    assert summary["resume"]["chunks_reused"] + summary["resume"]["chunks_encoded"] == CHUNKS
    got = {k[len("resume/out/"):]: client.get_object(Bucket=BUCKET, Key=k)["Body"].read()
           for k in _keys(client, "resume/out/")}
    for name, data in uninterrupted.items():
        if name.startswith("p-train-"):
            assert got[name] == data, name
    assert not [k for k in got if k.startswith(".datagen-work")]


def _merged(out):
    """{shard name: its file is still in the resume directory} of every shard manifest."""
    found = {}
    for manifest in glob.glob(os.path.join(str(out), ".datagen-work", "p", "encode-*", "merged",
                                           "*.json")):
        name = os.path.basename(manifest)[:-len(".json")]
        shard = os.path.join(os.path.dirname(os.path.dirname(manifest)), "shards", name)
        found[name] = os.path.exists(shard)
    return found


def test_a_rerun_after_a_kill_in_the_merge_keeps_the_shards_already_merged(
        tmp_path, corpus, uninterrupted):
    out = tmp_path / "out"
    _, status = _stop_then(_argv(out, corpus, DIRECT_MP2), lambda: len(_merged(out)),
                           signal.SIGKILL, k=1)
    assert status == -signal.SIGKILL
    kept = sorted(name for name, there in _merged(out).items() if there)
    assert kept and len(_manifests(out)) == CHUNKS  # every chunk done, some shard merged
    assert datagen.main(_argv(out, corpus, FNAPI)) == 0
    # A merged shard's fragment files are deleted (temporary disk, docs/scaling.md): every
    # chunk had a run in them, so each is encoded again; its runs come out the same, and
    # the shards merged before the kill are kept.
    assert _summary(out)["resume"] == {"chunks_encoded": CHUNKS, "shards_reused": len(kept),
                                       "shards_written": 3 - len(kept)}
    assert output_bytes(out) == uninterrupted
    assert not os.path.exists(out / ".datagen-work")


def test_a_text_shard_merged_before_a_kill_is_kept_by_both_its_files(tmp_path, corpus):
    """--output_format text: a shard is two files (`.en`, `.zh`) whose size and crc32c the
    manifest has together; the rerun checks both and keeps the shard (it merged it again
    when it read the `.en` file alone), ending as an uninterrupted run."""
    whole, out = tmp_path / "whole", tmp_path / "out"
    text = ["--output_format", "text"]
    assert datagen.main(_argv(whole, corpus, FNAPI, *text)) == 0
    _, status = _stop_then(_argv(out, corpus, DIRECT_MP2, *text), lambda: len(_merged(out)),
                           signal.SIGKILL, k=1)
    assert status == -signal.SIGKILL
    kept = sorted(name for name, there in _merged(out).items() if there)
    assert kept and all(name.endswith(".en") for name in kept)
    assert datagen.main(_argv(out, corpus, FNAPI, *text)) == 0
    assert _summary(out)["resume"]["shards_reused"] == len(kept)
    assert output_bytes(out) == output_bytes(whole)
