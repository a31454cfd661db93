"""A Dask worker plugin that lets each worker process encode its first `passed` chunks of
the encode pass and holds every later one (until the worker is killed, or a 900 s hang
guard): a test that stops a job mid-encode then knows, whatever the load, that some chunks
are done and some are not. Without it a fast machine finished all 32 chunks of the resume
test between the poll that saw half of them and the kill.

Registered by the test (`client.register_plugin(ChunkGate(n))`) before the job starts; it
lives on the scheduler that registered it, so a rerun on a new scheduler has no gate. The
worker imports this module by name (tests/ is on the hosts' PYTHONPATH).
"""

import threading
import time

from distributed.diagnostics.plugin import WorkerPlugin

HANG_GUARD_SECONDS = 900


class ChunkGate(WorkerPlugin):
    name = "t2t-test-chunk-gate"

    def __init__(self, passed):
        self.passed = passed

    def setup(self, worker):
        from transforms.encode.encode_pairs import _EncodeChunkFn
        original = _EncodeChunkFn.process
        lock, seen = threading.Lock(), [0]
        passed = self.passed

        def process(fn, chunk):
            with lock:
                seen[0] += 1
                held = seen[0] > passed
            if held:
                time.sleep(HANG_GUARD_SECONDS)
            yield from original(fn, chunk)

        _EncodeChunkFn.process = process
