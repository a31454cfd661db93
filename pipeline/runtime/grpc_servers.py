"""gRPC servers that Beam's own channels may keep alive.

Beam's channels (`GRPCChannelFactory`: the driver's request for a worker, the SDK harness's
connections) send a keepalive ping every `grpc.keepalive_time_ms` (20 s), also with no call
open. A server made with gRPC's defaults accepts a ping without data only every 5 minutes
and, after two such strikes, answers GOAWAY "too_many_pings" (ENHANCE_YOUR_CALM): the
connection drops about a minute after it was opened. Another channel to the same address
shares that connection, so a pass that asks the worker pool for its workers a minute after
the last one (a long vocab pass, a loaded machine) could fail with UNAVAILABLE. Beam fixed
this for its runner's own servers (apache/beam#37013) with the options below; the worker
pool's servers are ours, so they take the same policy here, at the interval Beam's channels
ping at (`local_worker_pool.beam_ping_interval_ms`, which may read Beam's internals).
"""

from typing import Any, List, Tuple

SERVER_THREADS = 4


def server_options(ping_interval_ms: int) -> List[Tuple[str, Any]]:
    """Options under which pings no more often than every `ping_interval_ms`, with or
    without calls, never end the connection."""
    return [("grpc.http2.max_pings_without_data", 0),
            ("grpc.http2.max_ping_strikes", 0),
            ("grpc.http2.min_ping_interval_without_data_ms", ping_interval_ms)]


def new_server(ping_interval_ms: int) -> Any:
    """A `grpc.server` (not started) that channels pinging every `ping_interval_ms` keep."""
    import grpc
    from concurrent import futures
    return grpc.server(futures.ThreadPoolExecutor(max_workers=SERVER_THREADS),
                       options=server_options(ping_interval_ms))
