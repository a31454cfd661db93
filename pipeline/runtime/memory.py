"""Memory a long-lived process of the job freed, handed back to the system between passes.

A job is several passes (Beam pipelines) run by one driver on the same worker processes
(`pipeline.runtime.local_worker_pool`). What one pass allocates and frees (the local
runner's shuffle buffers in the driver, a DoFn's caches in a worker) stays in the process's
heap, fragmented, as resident memory through every pass after it: with cleaning on, the job's
peak over its processes was ~2 GB above the same job without it, most of it such leftovers.
So a worker releases after each pass's harness ends, and the driver before each pass after
its first.

A release costs little when there is little to release: the objects that live for the whole
process (Beam's and the project's modules, ~200k of them) are moved out of the collector's
sight once (`freeze_long_lived`: a full collection otherwise walks them all, ~0.1 s each
time), and malloc is asked to give pages back only when it holds enough free ones.
"""

import gc
from typing import Any, List

from transforms.storage.heap import release_free_memory


def freeze_long_lived() -> None:
    """Moves every object alive now to the collector's permanent generation: call once the
    process's imports are done (the modules, classes and functions it keeps to the end), so
    that later full collections walk only what the passes allocate. (What is garbage
    already stays: right after the imports that is a few dozen objects.)"""
    gc.freeze()


def run_then_release(holder: List[Any]) -> None:
    """Runs a pass's SDK harness (`holder`: [harness], emptied so that nothing keeps the
    harness once it ends), then `release_free_memory`."""
    try:
        holder.pop().run()
    finally:
        release_free_memory()
