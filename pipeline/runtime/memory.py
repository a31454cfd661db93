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

import ctypes
import gc
from typing import Any, List, Optional

# malloc_trim walks the heap; below this much free memory in malloc's arenas it is skipped
TRIM_ABOVE_BYTES = 16 << 20


class _MallInfo2(ctypes.Structure):
    """glibc's `struct mallinfo2` (glibc >= 2.33): every field a size_t."""
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _libc() -> Any:
    try:  # the process's own symbols, libc's among them (find_library would run ldconfig)
        return ctypes.CDLL(None)
    except (OSError, TypeError):  # TypeError: Windows loads no library by None
        return None


def malloc_free_bytes() -> Optional[int]:
    """Bytes malloc holds free in its arenas (glibc's `mallinfo2().fordblks`), or None where
    that is not known (another libc, an older glibc)."""
    info = getattr(_libc(), "mallinfo2", None)
    if info is None:
        return None
    info.restype = _MallInfo2
    return int(info().fordblks)


def freeze_long_lived() -> None:
    """Moves every object alive now to the collector's permanent generation: call once the
    process's imports are done (the modules, classes and functions it keeps to the end), so
    that later full collections walk only what the passes allocate. (What is garbage
    already stays: right after the imports that is a few dozen objects.)"""
    gc.freeze()


def release_free_memory() -> bool:
    """Collects garbage, then asks glibc's malloc to return its free pages (`malloc_trim`)
    when it holds at least TRIM_ABOVE_BYTES free (or when that is unknown); only the
    collection off glibc. True if it trimmed."""
    gc.collect()
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is None:
        return False
    free = malloc_free_bytes()
    if free is not None and free < TRIM_ABOVE_BYTES:
        return False  # nothing worth a walk over the heap was freed
    trim(0)
    return True


def run_then_release(holder: List[Any]) -> None:
    """Runs a pass's SDK harness (`holder`: [harness], emptied so that nothing keeps the
    harness once it ends), then `release_free_memory`."""
    try:
        holder.pop().run()
    finally:
        release_free_memory()
