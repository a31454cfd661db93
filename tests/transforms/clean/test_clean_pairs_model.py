"""A filter's model file in a bucket (`LanguageIDFilter`'s `fasttext_model_path:
s3://...`): the cleaning DoFn copies it once per machine to a local file
(`clean_pairs.local_model`), which fastText then loads; tested on a real S3 server
(moto_server on 127.0.0.1, tests/conftest.py's `s3`)."""

import os

import pytest

pytestmark = pytest.mark.slow


def _model(tmp_path):
    fasttext = pytest.importorskip("fasttext")
    train = tmp_path / "lid.train"
    rows = []
    for lang, name in (("en", "enzh-mlqe-pe/train.en"), ("zh", "enzh-mlqe-pe/train.zh")):
        from repo_paths import DATA_DIR
        with open(os.path.join(DATA_DIR, name), encoding="utf-8") as f:
            rows += ["__label__%s %s" % (lang, line.strip()) for line in list(f)[:300]]
    train.write_text("\n".join(rows) + "\n", encoding="utf-8")
    model = fasttext.train_supervised(str(train), dim=8, epoch=3, minn=1, maxn=2, thread=1,
                                      seed=1, verbose=0)
    path = str(tmp_path / "lid.bin")
    model.save_model(path)
    return path


def test_a_bucket_model_is_copied_once_and_decides_as_the_local_file(s3, tmp_path,
                                                                     monkeypatch):
    from object_store_servers import ACCESS_KEY, BUCKET, REGION, SECRET_KEY
    from transforms.clean.clean_pairs import local_model
    from transforms.cleaning.langid import LanguageIDFilter
    from transforms.storage.object_stores import ObjectStores, StoreSettings
    local = _model(tmp_path)
    with open(local, "rb") as f:
        s3.client().put_object(Bucket=BUCKET, Key="models/lid.bin", Body=f.read())
    stores = ObjectStores(StoreSettings(s3_endpoint_url=s3.endpoint, s3_access_key_id=ACCESS_KEY,
                                        s3_secret_access_key=SECRET_KEY, s3_region_name=REGION))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "worker-tmp"))
    os.makedirs(tmp_path / "worker-tmp")
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR read again

    def built(path):
        return LanguageIDFilter(languages=["en", "zh"], id_method="fasttext",
                                fasttext_model_path=path)

    remote = built("s3://%s/models/lid.bin" % BUCKET)
    with s3.record() as requests:
        local_model(remote, stores)
        copied = remote.model_path
        again = built("s3://%s/models/lid.bin" % BUCKET)
        local_model(again, stores)  # a second DoFn on the same machine
    assert copied.startswith(str(tmp_path / "worker-tmp")) and copied.endswith(".bin")
    assert again.model_path == copied
    assert [r[0] for r in requests if "models/lid.bin" in r[1]] == ["GET"]
    assert open(copied, "rb").read() == open(local, "rb").read()
    plain = built(local)
    local_model(plain, stores)
    assert plain.model_path == local  # a local file is used where it is
    pairs = [("The river flows into the sea near the old town.", "这条河在老城附近流入大海。"),
             ("这条河在老城附近流入大海。", "The river flows into the sea near the old town.")]
    remote.setup()
    plain.setup()
    assert remote.accept_many(pairs) == plain.accept_many(pairs) == [True, False]
