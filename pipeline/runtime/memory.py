"""Memory a long-lived process of the job freed, handed back to the system between passes.

A job is several passes (Beam pipelines) run by one driver on the same worker processes
(`pipeline.runtime.local_worker_pool`). What one pass allocates and frees (the local
runner's shuffle buffers in the driver, a DoFn's caches in a worker) stays in the process's
heap, fragmented, as resident memory through every pass after it: with cleaning on, the job's
peak over its processes was ~2 GB above the same job without it, most of it such leftovers.
So a worker releases after each pass's harness ends, and the driver before each pass.
"""

import ctypes
import gc
from typing import Any, List


def release_free_memory() -> None:
    """Collects garbage, then asks glibc's malloc to return its free pages (`malloc_trim`);
    only the collection off glibc."""
    gc.collect()
    try:  # the process's own symbols, libc's among them (find_library would run ldconfig)
        trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    except (OSError, TypeError):  # TypeError: Windows loads no library by None
        trim = None
    if trim is not None:
        trim(0)


def run_then_release(holder: List[Any]) -> None:
    """Runs a pass's SDK harness (`holder`: [harness], emptied so that nothing keeps the
    harness once it ends), then `release_free_memory`."""
    try:
        holder.pop().run()
    finally:
        release_free_memory()
