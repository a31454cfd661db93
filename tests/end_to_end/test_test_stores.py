"""The stores' proxies the object-store tests put between a job and its store
(tests/object_store_servers.py), checked on their own: a connection through one, once its
client closed it, holds no descriptor of the test process. DelayProxy kept both sockets of
every connection a job made (72 per S3 client) until the process ended: a test process
reached over 1024 descriptors, and the select() of the SLURM and multi-host tests after it
failed ('filedescriptor out of range in select()')."""

import os
import socket
import threading

from datagen_helpers import wait_for
from object_store_servers import DelayProxy, GatheringProxy

CONNECTIONS = 40


def _descriptors():
    return len(os.listdir("/proc/self/fd"))


class _Echo:
    """A TCP server on 127.0.0.1 that sends back what it gets, a connection a thread."""

    def __init__(self):
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn):
        with conn:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                conn.sendall(data)

    def stop(self):
        self._listener.close()


def _through(endpoint):
    """Opens CONNECTIONS connections to `endpoint`, each answered once, then closes them."""
    port = int(endpoint.rsplit(":", 1)[1])
    for _ in range(CONNECTIONS):
        with socket.create_connection(("127.0.0.1", port)) as conn:
            conn.sendall(b"ping")
            assert conn.recv(4) == b"ping"


def test_closed_connections_through_a_proxy_leave_no_descriptor():
    echo = _Echo()
    try:
        for make in (lambda: DelayProxy(echo.port, 0.0),
                     lambda: GatheringProxy(echo.port, "never", 1)):
            proxy = make()
            before = _descriptors()  # the proxy's listener and the echo's are open already
            _through(proxy.endpoint)
            wait_for(lambda: _descriptors() <= before,
                     "%s closing its connections' sockets (%d open, %d before)"
                     % (type(proxy).__name__, _descriptors(), before))
            proxy.stop()
    finally:
        echo.stop()
