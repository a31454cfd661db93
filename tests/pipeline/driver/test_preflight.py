"""pipeline/driver/preflight: every path the flags name is on a file system this install has,
and --output_dir can be written, each checked before anything runs, as one line naming the
flag."""

import os

import pytest

from driver_fixtures import config, layout, write
from pipeline.driver import preflight
from pipeline.runtime.errors import DatagenError


def test_named_paths_lists_the_output_then_every_input_pattern(tmp_path):
    cfg = config(tmp_path, "--dev_source", "d1.en,d2.en", "--dev_target", "d*.de",
                 "--filters", "f.yaml")
    named = preflight.named_paths(cfg)
    assert named[0] == ("--output_dir", str(tmp_path / "out"))
    assert named[1:] == [
        ("--train_source", str(tmp_path / "in" / "train.en")),
        ("--train_target", str(tmp_path / "in" / "train.de")),
        ("--dev_source", "d1.en"), ("--dev_source", "d2.en"), ("--dev_target", "d*.de"),
        ("--filters", "f.yaml")]


def test_a_path_without_a_file_system_is_one_line_naming_its_flag(tmp_path):
    preflight.check_file_systems(config(tmp_path))  # local paths: fine
    cfg = config(tmp_path, "--dev_source", "nosuch://bucket/d.en", "--dev_target", "d.de")
    with pytest.raises(DatagenError) as raised:
        preflight.check_file_systems(cfg)
    assert str(raised.value) == (
        "--dev_source nosuch://bucket/d.en: no file system for nosuch:// paths is installed; "
        "is the scheme right?")


def test_a_writable_output_dir_is_left_with_only_the_work_directory(tmp_path):
    out_layout = layout(config(tmp_path))
    preflight.check_output_writable(out_layout)
    assert os.listdir(out_layout.work_dir) == []  # the probe is gone


def test_the_probe_is_written_not_only_the_directory_made(tmp_path):
    out_layout = layout(config(tmp_path))
    os.makedirs(os.path.join(out_layout.work_dir, "write-test", "in the way"))
    with pytest.raises(DatagenError, match="cannot write there"):
        preflight.check_output_writable(out_layout)


def test_an_output_dir_under_a_regular_file_is_one_line(tmp_path):
    blocker = write(tmp_path / "file", "x")
    out_layout = layout(config(tmp_path, "--output_dir", os.path.join(blocker, "out")))
    with pytest.raises(DatagenError) as raised:
        preflight.check_output_writable(out_layout)
    message = str(raised.value)
    assert message.startswith("--output_dir %s/out: cannot write there (" % blocker)
    assert "\n" not in message


def test_make_local_dirs_makes_the_parents_and_accepts_an_existing_directory(tmp_path):
    path = str(tmp_path / "a" / "b" / "c")
    preflight.make_local_dirs(path)
    preflight.make_local_dirs(path)
    assert os.path.isdir(path)


def _s3_stores(endpoint):
    from transforms.storage.object_stores import ObjectStores, StoreSettings
    return ObjectStores(StoreSettings(s3_endpoint_url=endpoint, s3_access_key_id="k",
                                      s3_secret_access_key="s", s3_region_name="us-east-1"))


def test_a_store_that_does_not_answer_is_one_line_naming_the_flag_at_once(tmp_path,
                                                                          monkeypatch):
    """The job's own S3 client would retry for a minute or two (object_stores.S3_ATTEMPTS
    attempts): at the start a store nobody answers is asked with short timeouts and few
    attempts instead, as the requests its client sent show."""
    from object_store_servers import free_port
    from transforms.storage.object_stores import S3_ATTEMPTS, S3Store
    sent = []
    new_client = S3Store._new_client

    def counting_client(self, config=None):
        client = new_client(self, config)
        client.meta.events.register("before-send.s3", lambda **_: sent.append(1))
        return client

    monkeypatch.setattr(S3Store, "_new_client", counting_client)
    endpoint = "http://127.0.0.1:%d" % free_port()
    cfg = config(tmp_path, "--output_dir", "s3://bucket/out")
    with pytest.raises(DatagenError) as raised:
        preflight.check_stores_reachable(cfg, _s3_stores(endpoint))
    assert str(raised.value).startswith("--output_dir s3://bucket/out: cannot reach its "
                                        "store: Could not connect to the endpoint URL")
    assert endpoint in str(raised.value)
    assert 0 < len(sent) < S3_ATTEMPTS
    preflight.check_stores_reachable(config(tmp_path), _s3_stores(endpoint))  # local: fine


@pytest.mark.slow
def test_a_store_that_answers_with_a_refusal_is_left_to_the_step_that_needs_it(tmp_path, s3):
    """No such bucket: the store answers, and the steps after say what is wrong there."""
    cfg = config(tmp_path, "--output_dir", "s3://no-such-bucket/out", "--dev_source",
                 "s3://datagen-test/in/dev.*", "--dev_target", "s3://datagen-test/in/dev.zh")
    preflight.check_stores_reachable(cfg, _s3_stores(s3.endpoint))
