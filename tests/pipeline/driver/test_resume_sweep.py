"""What a run keeps of a killed run's work (`pipeline.driver.resume`): only the resume
directory of its own key, which a fingerprint or a chunking of its own names."""

import os

from pipeline.driver import resume
from pipeline.output.layout import OutputLayout

FINGERPRINT = {"flags": {"seed": 0}, "inputs": {"train_source": {"/in/a.en": {"size": 9}}}}


def test_the_key_follows_the_fingerprint_and_the_chunking():
    key = resume.resume_key(FINGERPRINT, 10000)
    assert key == resume.resume_key(dict(FINGERPRINT), 10000) and len(key) == 16
    assert key != resume.resume_key(FINGERPRINT, 5000)
    assert key != resume.resume_key(dict(FINGERPRINT, flags={"seed": 1}), 10000)


def test_a_run_sweeps_every_work_directory_but_its_own_keys(tmp_path):
    layout = OutputLayout(str(tmp_path), "p", 100, run_id="new")
    key = resume.resume_key(FINGERPRINT, 10000)
    other = resume.resume_key(FINGERPRINT, 5000)
    for path in ("old-run/encode.json", "encode-%s/chunks/train-d0-l0.json" % other,
                 "encode-%s/fragments/train-00000-d0-l0.frag" % key):
        os.makedirs(os.path.dirname(os.path.join(layout.problem_work_dir, path)),
                    exist_ok=True)
        open(os.path.join(layout.problem_work_dir, path), "w").close()
    assert resume.sweep_work(layout, key, None) is False  # fragments, but no manifest
    assert os.listdir(layout.problem_work_dir) == ["encode-" + key]
    chunks = resume.resume_of(layout, key, True).manifest_dir
    os.makedirs(chunks)
    open(os.path.join(chunks, "train-d0-l0.json"), "w").close()
    assert resume.sweep_work(layout, key, None) is True
    assert resume.keeps_chunks(layout, key, None)
    assert resume.sweep_work(layout, other, None) is False  # another key: all of it goes
    assert os.listdir(layout.problem_work_dir) == []
