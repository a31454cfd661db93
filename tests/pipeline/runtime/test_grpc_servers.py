"""pipeline/runtime/grpc_servers.py: the worker pool's gRPC servers keep the connections of
Beam's channels, which ping every keepalive interval also with no call open.

The defect is gRPC's default server policy (a ping without data at most every 5 minutes, two
strikes, then GOAWAY "too_many_pings"), which Beam's channels trip about a minute after they
connect; the first test shows it still exists with the installed grpcio (the reason for the
module: when it no longer does, the options can go). The checks run at a short interval (the
channel pings every 200 ms, as Beam's does every 20 s) and are anchored on events: how long the
default server takes to drop the channel is measured first, ours must keep it twice as long.
"""

import threading
import time

import grpc

from apache_beam.runners.worker.channel_factory import GRPCChannelFactory
from pipeline.runtime import grpc_servers, local_worker_pool

PING_MS = 200
HANG_GUARD_SECONDS = 120


class _Watched:
    """A channel made as Beam makes its channels, pinging every PING_MS, and the
    connectivity states it went through."""

    def __init__(self, port):
        options = [(k, PING_MS if k == "grpc.keepalive_time_ms" else v)
                   for k, v in GRPCChannelFactory.DEFAULT_OPTIONS]
        self.channel = grpc.insecure_channel("localhost:%d" % port, options=options)
        self.states = []
        self.dropped = threading.Event()
        self.channel.subscribe(self._seen, try_to_connect=True)
        grpc.channel_ready_future(self.channel).result(timeout=HANG_GUARD_SECONDS)

    def _seen(self, state):
        if self.states and self.states[-1] == grpc.ChannelConnectivity.READY \
                and state != grpc.ChannelConnectivity.READY:
            self.dropped.set()
        self.states.append(state)

    def close(self):
        self.channel.close()


def _serve(server):
    port = server.add_insecure_port("localhost:0")
    server.start()
    return port


def test_a_default_server_drops_a_beam_channel_and_ours_keeps_it_twice_as_long():
    from concurrent import futures
    default = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    watched = _Watched(_serve(default))
    start = time.monotonic()
    try:
        # the upstream defect: gRPC's defaults end a connection that pings while idle
        assert watched.dropped.wait(HANG_GUARD_SECONDS), watched.states
        to_drop = time.monotonic() - start
    finally:
        watched.close()
        default.stop(None)

    ours = grpc_servers.new_server(ping_interval_ms=PING_MS)
    watched = _Watched(_serve(ours))
    try:
        assert not watched.dropped.wait(2 * to_drop), watched.states
    finally:
        watched.close()
        ours.stop(None)


def test_the_pools_servers_accept_pings_as_often_as_beams_channels_send_them():
    interval = local_worker_pool.beam_ping_interval_ms()
    assert interval == dict(GRPCChannelFactory.DEFAULT_OPTIONS)["grpc.keepalive_time_ms"]
    options = dict(grpc_servers.server_options(interval))
    assert options["grpc.http2.min_ping_interval_without_data_ms"] == interval
    assert options["grpc.http2.max_ping_strikes"] == 0
