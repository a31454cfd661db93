"""transforms/storage/object_stores: the S3 client rides out a store or link that drops for
a while (standard retries, S3_ATTEMPTS attempts a request), unless AWS's own settings say
otherwise; the start-of-run probe keeps its own short timeouts."""

from transforms.storage import object_stores
from transforms.storage.object_stores import S3Store, StoreSettings

SETTINGS = StoreSettings(s3_endpoint_url="http://127.0.0.1:9", s3_access_key_id="k",
                         s3_secret_access_key="s", s3_region_name="us-east-1")


def test_the_client_retries_as_long_as_gcs_does(monkeypatch):
    monkeypatch.delenv("AWS_MAX_ATTEMPTS", raising=False)
    monkeypatch.delenv("AWS_RETRY_MODE", raising=False)
    config = S3Store(SETTINGS)._client.meta.config
    assert config.retries == {"mode": "standard",
                              "total_max_attempts": object_stores.S3_ATTEMPTS}
    assert object_stores.S3_ATTEMPTS >= 10 and config.connect_timeout == 10


def test_aws_settings_win(monkeypatch):
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "3")
    monkeypatch.setenv("AWS_RETRY_MODE", "adaptive")
    assert S3Store(SETTINGS)._client.meta.config.retries == {
        "mode": "adaptive", "total_max_attempts": 3}
