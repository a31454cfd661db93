"""Direct clients of the object stores, for what Beam's FileSystems cannot say there.

Beam's FileSystems API has no conditional write, and its S3 writer cannot make a 0-byte
object (it completes a multipart upload with no parts, which S3 refuses with MalformedXML).
The job needs both: the output lock is a lease object taken with an exclusive create and
renewed with a replace conditional on the version it holds (S3: `If-None-Match: *` /
`If-Match: <ETag>`; GCS: `ifGenerationMatch=0` / `ifGenerationMatch=<generation>`), and an
empty shard or rejects file is a real output. Beam's file systems also make a new client for
every call (~90 ms on S3). So the job talks to the store with the store's own client
(boto3, google-cloud-storage: what `apache-beam[aws]` and `apache-beam[gcp]` install) for
those calls and for its own whole-object reads and writes, listings, deletes and streamed
uploads, configured from the same pipeline options as Beam's file systems
(`--s3_endpoint_url`, `--s3_access_key_id`, ...; GCS from the environment, as Beam's own GCS
client, `STORAGE_EMULATOR_HOST` included).

`StoreSettings` is the picklable part of the options a worker needs; an `ObjectStores` holds
one client per store, made on first use and reused: the driver has one for the job, each DoFn
that touches files one, made in its `setup` (a boto3 client costs ~60 ms to make, a request on
loopback ~3 ms). Paths without a store here (local files, hdfs://) get None from
`ObjectStores.for_path`: callers fall back to FileSystems.
"""

import dataclasses
import os
import threading
from typing import IO, Any, Dict, List, Optional, Tuple, Type, Union

from apache_beam.options.pipeline_options import PipelineOptions, S3Options

from transforms.errors import StoreUnreachable

SCHEMES = ("s3", "gs")


class PreconditionFailed(Exception):
    """A conditional write or delete found another version (or an object where none was
    expected)."""


# S3 copies an object in one CopyObject request up to 5 GB only; a larger one is a multipart
# copy (UploadPartCopy, each part a byte range of the source). boto3's managed `copy` picks
# one or the other by size; parts of 256 MiB keep a 50 GB shard at 200 requests (boto3
# raises the size where 10,000 parts would not do). `StoreSettings.copy_limit` and
# `copy_part_bytes` default to them; a test lowers them (parts of 5 MiB at least, as S3).
S3_SINGLE_COPY_LIMIT = 5 * 1024 ** 3
S3_COPY_PART_BYTES = 256 * 1024 ** 2
# Objects copied at once (`file_io.move_files`: the commit's shards), and the parts of one
# S3 object copied at once (boto3's managed transfer threads): at most their product of
# requests in flight, which the S3 client's connection pool holds.
COPY_THREADS = 8
S3_COPY_PART_THREADS = 4
# Connections an S3 client keeps: what it has in flight at most, the commit's copies above or
# a shard merge's streams (`transforms.shards.shard_fragments.MERGE_FAN_IN` and the run it
# writes); urllib3 would drop each connection over its pool with a WARNING line.
S3_CONNECTIONS = 72


@dataclasses.dataclass(frozen=True)
class StoreSettings:
    """The store options of a job's pipeline options, as plain values a DoFn can carry."""
    s3_endpoint_url: Optional[str] = None
    s3_access_key_id: Optional[str] = None
    s3_secret_access_key: Optional[str] = None
    s3_session_token: Optional[str] = None
    s3_region_name: Optional[str] = None
    s3_api_version: Optional[str] = None
    s3_verify: Optional[str] = None
    s3_disable_ssl: bool = False
    gcs_project: Optional[str] = None
    copy_limit: int = S3_SINGLE_COPY_LIMIT  # a test store's lower one (S3's in production)
    copy_part_bytes: int = S3_COPY_PART_BYTES

    @classmethod
    def from_options(cls, options: PipelineOptions) -> "StoreSettings":
        s3 = options.view_as(S3Options)
        values: Dict[str, Any] = {f.name: getattr(s3, f.name, None)
                                  for f in dataclasses.fields(cls) if f.name.startswith("s3_")}
        values["s3_disable_ssl"] = bool(values["s3_disable_ssl"])
        return cls(gcs_project=options.get_all_options().get("project"), **values)


def split_path(path: str) -> Tuple[str, str, str]:
    """(scheme, bucket, key) of `s3://bucket/key` or `gs://bucket/key`."""
    scheme, rest = path.split("://", 1)
    bucket, _, key = rest.partition("/")
    return scheme, bucket, key


def scheme_of(path: str) -> Optional[str]:
    scheme = path.split("://", 1)[0] if "://" in path else None
    return scheme if scheme in SCHEMES else None


# The S3 client's attempts per request, as patient as GCS's client (which retries for
# 120 s): a store or a worker's link that drops for seconds to a minute mid-run is ridden
# out, not a failed pass (botocore's default, 5 attempts, gives up within ~15 s). Standard
# mode retries connection errors, timeouts, throttling and 5xx answers, backing off up to
# 20 s a time. AWS's own settings win: AWS_MAX_ATTEMPTS, AWS_RETRY_MODE.
S3_ATTEMPTS = 12
S3_CONNECT_TIMEOUT = 10  # seconds per attempt (botocore's default: 60)


def s3_retries() -> Dict[str, Any]:
    """The S3 client's retry settings (botocore's `Config(retries=...)`)."""
    return {"mode": os.environ.get("AWS_RETRY_MODE", "standard"),
            "total_max_attempts": int(os.environ.get("AWS_MAX_ATTEMPTS", S3_ATTEMPTS))}


class S3Store:
    """S3 (or an S3-compatible store) through boto3.

    A version is the object's ETag."""

    def __init__(self, settings: StoreSettings):
        import boto3  # apache-beam[aws]
        from botocore.config import Config
        self._settings = settings
        self._boto3 = boto3
        self._client = self._new_client(Config(
            retries=s3_retries(), connect_timeout=S3_CONNECT_TIMEOUT,
            max_pool_connections=S3_CONNECTIONS))

    def _new_client(self, config: Any = None) -> Any:
        s = self._settings
        return self._boto3.session.Session().client(
            "s3", endpoint_url=s.s3_endpoint_url, aws_access_key_id=s.s3_access_key_id,
            aws_secret_access_key=s.s3_secret_access_key,
            aws_session_token=s.s3_session_token, region_name=s.s3_region_name,
            api_version=s.s3_api_version, use_ssl=not s.s3_disable_ssl, verify=s.s3_verify,
            config=config)

    def _call(self, method: str, **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError
        try:
            return getattr(self._client, method)(**kwargs)
        except BotoCoreError as e:  # no connection, no credentials, ...
            raise OSError(str(e)) from None
        except ClientError as e:
            code = e.response.get("Error", {}).get("Code")
            if code in ("PreconditionFailed", "412", "ConditionalRequestConflict"):
                raise PreconditionFailed(str(e)) from None
            if code in ("NoSuchKey", "404", "NotFound"):
                raise FileNotFoundError(str(e)) from None
            raise OSError(str(e)) from None

    def put(self, path: str, data: bytes, if_absent: bool = False,
            if_version: Optional[str] = None) -> str:
        """Writes the whole object in one PUT; returns its new version."""
        _, bucket, key = split_path(path)
        kwargs: Dict[str, str] = {}
        if if_absent:
            kwargs["IfNoneMatch"] = "*"
        if if_version is not None:
            kwargs["IfMatch"] = if_version
        return self._call("put_object", Bucket=bucket, Key=key, Body=data, **kwargs)["ETag"]

    def get(self, path: str) -> Optional[Tuple[bytes, str]]:
        """(bytes, version) of the object, None when there is none."""
        _, bucket, key = split_path(path)
        try:
            got = self._call("get_object", Bucket=bucket, Key=key)
        except FileNotFoundError:
            return None
        return got["Body"].read(), got["ETag"]

    def delete(self, path: str, if_version: Optional[str] = None) -> None:
        _, bucket, key = split_path(path)
        kwargs = {"IfMatch": if_version} if if_version is not None else {}
        try:
            self._call("delete_object", Bucket=bucket, Key=key, **kwargs)
        except FileNotFoundError:
            pass

    def open(self, path: str, offset: int = 0) -> Any:
        """A binary stream of the object from byte `offset` on (one GET, read as it goes)."""
        _, bucket, key = split_path(path)
        kwargs = {"Range": "bytes=%d-" % offset} if offset else {}
        return self._call("get_object", Bucket=bucket, Key=key, **kwargs)["Body"]

    def upload(self, path: str, stream: IO[bytes]) -> None:
        """Writes the object from a readable binary `stream`, whole when it completes:
        boto3's managed transfer (one PUT for a small object, 0 bytes included, else a
        multipart upload of bounded parts)."""
        from boto3.s3.transfer import TransferConfig
        from botocore.exceptions import BotoCoreError, ClientError
        _, bucket, key = split_path(path)
        try:
            self._client.upload_fileobj(stream, bucket, key,
                                        Config=TransferConfig(use_threads=False))
        except (BotoCoreError, ClientError) as e:
            raise OSError("%s: %s" % (path, e)) from None

    def list(self, prefix: str) -> List[Tuple[str, int, float]]:
        """(path, size, modification time) of every object whose name starts with `prefix`."""
        scheme, bucket, key = split_path(prefix)
        listed: List[Tuple[str, int, float]] = []
        token = None
        while True:
            kwargs: Dict[str, str] = {"ContinuationToken": token} if token else {}
            page = self._call("list_objects_v2", Bucket=bucket, Prefix=key, **kwargs)
            listed += [("%s://%s/%s" % (scheme, bucket, o["Key"]), o["Size"],
                        o["LastModified"].timestamp()) for o in page.get("Contents", [])]
            if not page.get("IsTruncated"):
                return listed
            token = page["NextContinuationToken"]

    def probe(self, prefix: str) -> None:
        """One small listing under `prefix` with short timeouts and few retries (a client
        of its own): OSError within about 30 s when the store cannot be reached."""
        from botocore.config import Config
        from botocore.exceptions import (BotoCoreError, ClientError, ConnectionError,
                                         HTTPClientError)
        _, bucket, key = split_path(prefix)
        client = self._new_client(Config(connect_timeout=5, read_timeout=10,
                                   retries={"mode": "standard", "max_attempts": 2}))
        try:
            client.list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1)
        except (ConnectionError, HTTPClientError) as e:
            raise StoreUnreachable(str(e)) from None
        except (BotoCoreError, ClientError) as e:
            raise OSError(str(e)) from None

    def copy(self, source: str, destination: str) -> None:
        """A server-side copy of any size: boto3's managed copy, one CopyObject up to the
        single-copy limit, a multipart copy (UploadPartCopy of byte ranges, parts copied by
        a few threads) above it. A multipart copy that fails is aborted."""
        from boto3.s3.transfer import TransferConfig
        from botocore.exceptions import BotoCoreError, ClientError
        from s3transfer.exceptions import S3CopyFailedError
        _, bucket, key = split_path(source)
        _, to_bucket, to_key = split_path(destination)
        s = self._settings
        config = TransferConfig(multipart_threshold=s.copy_limit,
                                multipart_chunksize=s.copy_part_bytes,
                                max_concurrency=S3_COPY_PART_THREADS)
        try:
            self._client.copy({"Bucket": bucket, "Key": key}, to_bucket, to_key,
                              Config=config)
        except (BotoCoreError, ClientError, S3CopyFailedError) as e:
            raise OSError("copying %s to %s: %s" % (source, destination,
                                                     " ".join(str(e).split()))) from None

    def delete_many(self, paths: List[str]) -> None:
        """Deletes objects, up to 1,000 a request."""
        by_bucket: Dict[str, List[str]] = {}
        for path in paths:
            _, bucket, key = split_path(path)
            by_bucket.setdefault(bucket, []).append(key)
        for bucket, keys in by_bucket.items():
            for start in range(0, len(keys), 1000):
                done = self._call("delete_objects", Bucket=bucket, Delete={
                    "Objects": [{"Key": k} for k in keys[start:start + 1000]], "Quiet": True})
                if done.get("Errors"):
                    raise OSError("deleting from s3://%s failed: %s" % (
                        bucket, done["Errors"][0]))


class GcsStore:
    """Google Cloud Storage through google-cloud-storage.

    A version is the object's generation (as a string)."""

    def __init__(self, settings: StoreSettings):
        from google.cloud import storage  # apache-beam[gcp]
        from google.auth.exceptions import DefaultCredentialsError
        try:
            self._client = storage.Client(project=settings.gcs_project)
        except (DefaultCredentialsError, OSError):
            # As Beam's own GCS client: no credentials here, so anonymous (public buckets,
            # or an emulator named by STORAGE_EMULATOR_HOST).
            self._client = storage.Client.create_anonymous_client()

    def _blob(self, path: str) -> Any:
        _, bucket, key = split_path(path)
        return self._client.bucket(bucket).blob(key)

    @staticmethod
    def _failed(error: Exception) -> Exception:
        from google.api_core import exceptions
        if isinstance(error, exceptions.PreconditionFailed):
            return PreconditionFailed(str(error))
        if isinstance(error, exceptions.NotFound):
            return FileNotFoundError(str(error))
        return OSError(str(error))

    def put(self, path: str, data: bytes, if_absent: bool = False,
            if_version: Optional[str] = None) -> str:
        from google.api_core.exceptions import GoogleAPIError
        blob = self._blob(path)
        match = 0 if if_absent else (int(if_version) if if_version is not None else None)
        try:
            blob.upload_from_string(data, content_type="application/octet-stream",
                                    if_generation_match=match)
        except GoogleAPIError as e:
            raise self._failed(e) from None
        return str(blob.generation)

    def get(self, path: str) -> Optional[Tuple[bytes, str]]:
        from google.api_core.exceptions import GoogleAPIError, NotFound
        _, bucket, key = split_path(path)
        try:
            blob = self._client.bucket(bucket).get_blob(key)
            if blob is None:
                return None
            return blob.download_as_bytes(if_generation_match=blob.generation), \
                str(blob.generation)
        except NotFound:
            return None
        except GoogleAPIError as e:
            raise self._failed(e) from None

    def delete(self, path: str, if_version: Optional[str] = None) -> None:
        from google.api_core.exceptions import GoogleAPIError, NotFound
        try:
            self._blob(path).delete(
                if_generation_match=int(if_version) if if_version is not None else None)
        except NotFound:
            pass
        except GoogleAPIError as e:
            raise self._failed(e) from None

    def open(self, path: str, offset: int = 0) -> Any:
        """A binary stream of the object from byte `offset` on."""
        stream = self._blob(path).open("rb")
        if offset:
            stream.seek(offset)
        return stream

    def upload(self, path: str, stream: IO[bytes]) -> None:
        """Writes the object from a readable binary `stream` (a resumable upload in chunks,
        which appears whole when it completes; one that fails, or whose stream raises, is
        never finalized, so no part of it appears)."""
        from google.api_core.exceptions import GoogleAPIError
        try:
            self._blob(path).upload_from_file(stream, content_type="application/octet-stream",
                                              checksum=None)
        except GoogleAPIError as e:
            raise self._failed(e) from None

    def list(self, prefix: str) -> List[Tuple[str, int, float]]:
        from google.api_core.exceptions import GoogleAPIError
        scheme, bucket, key = split_path(prefix)
        try:
            return [("%s://%s/%s" % (scheme, bucket, b.name), b.size, b.updated.timestamp())
                    for b in self._client.list_blobs(bucket, prefix=key)]
        except GoogleAPIError as e:
            raise self._failed(e) from None

    def probe(self, prefix: str) -> None:
        """One small listing under `prefix` with a 10 s timeout and retries for 15 s at
        most (google-cloud-storage's default retries for 120 s): OSError within about
        30 s when the store cannot be reached."""
        from google.api_core.exceptions import GoogleAPIError, RetryError
        from google.cloud.storage.retry import DEFAULT_RETRY
        _, bucket, key = split_path(prefix)
        try:
            list(self._client.list_blobs(bucket, prefix=key, max_results=1, timeout=10,
                                         retry=DEFAULT_RETRY.with_timeout(15)))
        except RetryError as e:  # retried until the timeout: no answer
            raise StoreUnreachable(str(e)) from None
        except GoogleAPIError as e:  # the store's answer
            raise OSError(str(e)) from None
        except Exception as e:  # requests' and urllib3's connection errors
            raise StoreUnreachable("%s: %s" % (type(e).__name__, e)) from None

    def copy(self, source: str, destination: str) -> None:
        """A server-side rewrite (however large, in as many calls as GCS asks for)."""
        from google.api_core.exceptions import GoogleAPIError
        _, to_bucket, to_key = split_path(destination)
        target = self._client.bucket(to_bucket).blob(to_key)
        try:
            token, _, _ = target.rewrite(self._blob(source))
            while token is not None:
                token, _, _ = target.rewrite(self._blob(source), token=token)
        except GoogleAPIError as e:
            raise self._failed(e) from None

    def delete_many(self, paths: List[str]) -> None:
        """One request per object: GCS's batch endpoint is not served by every emulator, and
        the job deletes few objects."""
        for path in paths:
            self.delete(path)


Store = Union[S3Store, GcsStore]  # the client of one store; both have the same methods
_STORE_CLASSES: Dict[str, Union[Type[S3Store], Type[GcsStore]]] = {"s3": S3Store,
                                                                   "gs": GcsStore}


class ObjectStores:
    """One client per store scheme, made on first use and then reused (thread-safe)."""

    def __init__(self, settings: StoreSettings):
        self.settings = settings
        self._stores: Dict[str, Store] = {}
        self._lock = threading.Lock()

    def for_path(self, path: str) -> Optional[Store]:
        """The store client for `path` (S3Store, GcsStore), or None for a path on any other
        file system."""
        scheme = scheme_of(path)
        if scheme is None:
            return None
        with self._lock:
            if scheme not in self._stores:
                self._stores[scheme] = _STORE_CLASSES[scheme](self.settings)
            return self._stores[scheme]
