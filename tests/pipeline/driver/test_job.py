"""pipeline/driver/job: the parts of a run that need no pass: the datasets it plans, what it
refuses before touching --output_dir, and a rerun over a complete output of the same inputs
and flags (a noop: no pass, nothing written) or of others (refused without --overwrite)."""

import json
import os

import pytest
from apache_beam.options.pipeline_options import DirectOptions

from driver_fixtures import config, corpus, datagen_job, layout, write
from pipeline.driver import fingerprint
from pipeline.runtime.errors import DatagenError


def error_of(fn):
    with pytest.raises(DatagenError) as raised:
        fn()
    assert "\n" not in str(raised.value)
    return str(raised.value)


def test_the_plan_has_a_dev_split_only_when_dev_data_is_given(tmp_path):
    job = datagen_job(config(tmp_path))
    planned = job.plan()
    assert list(planned) == ["train"]
    assert job.num_shards(planned) == {"train": 10}
    dev = corpus(tmp_path, name="dev")
    job = datagen_job(config(tmp_path, "--dev_source", dev[0], "--dev_target", dev[1],
                             "--num_dev_shards", "2"))
    planned = job.plan()
    assert [(split, ds.source) for split in planned for ds in planned[split]] == [
        ("train", str(tmp_path / "in" / "train.en")), ("dev", dev[0])]
    assert job.num_shards(planned) == {"train": 10, "dev": 2}


def test_a_bad_filters_file_stops_the_job_before_it_starts(tmp_path):
    filters = write(tmp_path / "f.yaml", "filters:\n  - NoSuchFilter: {}\n")
    job = datagen_job(config(tmp_path, "--filters", filters))
    assert error_of(job.run).startswith("--filters %s: unknown filter NoSuchFilter" % filters)
    assert not os.path.exists(tmp_path / "out")


@pytest.mark.parametrize("flags, expected", [
    (("--train_source", "{tmp}/none*.en", "--train_target", "{tmp}/none*.de"),
     "no file matches '{tmp}/none*.en'"),
    (("--vocab_type", "word", "--word_vocab", "{tmp}/none.txt"),
     "--word_vocab {tmp}/none.txt: no such file"),
    (("--dev_source", "nosuch://b/d.en", "--dev_target", "nosuch://b/d.de"),
     "--dev_source nosuch://b/d.en: no file system for nosuch:// paths is installed; is the "
     "scheme right?"),
])
def test_bad_input_leaves_no_output_directory(tmp_path, flags, expected):
    job = datagen_job(config(tmp_path, *[f.format(tmp=tmp_path) for f in flags]))
    assert error_of(job.run) == expected.format(tmp=tmp_path)
    assert not os.path.exists(tmp_path / "out")


def complete_output(cfg, **summary):
    """A complete output of `cfg`'s run (its summary and marker): nothing else is listed."""
    out = layout(cfg)
    summary = dict({"status": "complete", "splits": {}, "vocab": {}, "passes": 3,
                    "fingerprint": fingerprint.output_fingerprint(cfg.flags())}, **summary)
    write(out.summary_path, json.dumps(summary))
    write(out.complete_path)
    return out


def listing(directory):
    return sorted(os.path.relpath(os.path.join(base, name), directory)
                  for base, dirs, names in os.walk(directory) for name in names + dirs)


def test_a_rerun_over_its_own_complete_output_does_nothing(tmp_path):
    cfg = config(tmp_path)
    out = complete_output(cfg)
    before = listing(out.output_dir), open(out.summary_path).read()
    summary = datagen_job(cfg).run()
    assert summary["noop"] is True and summary["passes"] == 3
    assert (listing(out.output_dir), open(out.summary_path).read()) == before


def test_a_rerun_with_other_flags_is_refused_and_changes_nothing(tmp_path):
    out = complete_output(config(tmp_path))
    before = listing(out.output_dir)
    cfg = config(tmp_path, "--seed", "9", train=(str(tmp_path / "in" / "train.en"),
                                                 str(tmp_path / "in" / "train.de")))
    assert error_of(datagen_job(cfg).run) == (
        "%s holds a complete output of other inputs/flags: --seed 0 -> 9; pass --overwrite "
        "to replace it" % out.output_dir)
    assert listing(out.output_dir) == before


def test_a_rerun_after_an_input_was_edited_is_refused(tmp_path):
    cfg = config(tmp_path)
    out = complete_output(cfg)
    source = str(tmp_path / "in" / "train.en")
    write(source, "edited\n")
    assert error_of(datagen_job(cfg).run) == (
        "%s holds a complete output of other inputs/flags: %s changed (size/mtime); pass "
        "--overwrite to replace it" % (out.output_dir, source))


@pytest.mark.slow  # building the three passes is Beam's own ~1 s of pipeline construction
def test_a_dry_run_translates_every_pass_and_writes_nothing(tmp_path):
    cfg = config(tmp_path, "--vocab_type", "word", "--vocab_size", "10",
                 "--train_source", "gs://b/none.en", "--train_target", "gs://b/none.de")
    summary = datagen_job(cfg, ("--runner", "DirectRunner", "--dry_run", "true")).run()
    # the prepare stage rides along the one word vocab pass, then the encode pass
    assert summary == {"status": "dry_run", "passes": 2, "problem": "translate_enzh_wmt8k",
                       "runner": "DirectRunner"}
    assert not os.path.exists(tmp_path / "out")


def sized(path, size):
    """A (sparse) file of `size` bytes."""
    with open(write(path), "wb") as f:
        f.truncate(size)
    return str(path)


@pytest.mark.parametrize("flags, mode", [
    ((), "in_memory"),                                   # 48 bytes of input
    (("--in_process_below_mb", "0"), "multi_processing"),  # 0: always the workers
    (("--dev_source", "{tmp}/big.en", "--dev_target", "{tmp}/big.de"), "multi_processing"),
    (("--vocab_type", "word", "--word_vocab", "{tmp}/big.words"), "in_memory"),  # not input
])
def test_small_inputs_run_in_process_given_vocabularies_not_counted(tmp_path, flags, mode):
    sized(tmp_path / "big.en", 9 * 10 ** 6)
    sized(tmp_path / "big.de", 9 * 10 ** 6)
    sized(tmp_path / "big.words", 20 * 10 ** 6)  # over 16 MB alone
    cfg = config(tmp_path, *[f.format(tmp=tmp_path) for f in flags])
    job = datagen_job(cfg, ("--runner", "DirectRunner", "--direct_running_mode",
                            "multi_processing"))
    job.record.fingerprint = fingerprint.output_fingerprint(cfg.flags())  # as run() does
    job.choose_direct_mode()
    assert job.options.view_as(DirectOptions).direct_running_mode == mode
