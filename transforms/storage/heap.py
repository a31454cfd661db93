"""Memory a process freed, handed back to the system (glibc's `malloc_trim`).

What a process allocates and frees stays in malloc's heap, fragmented, as resident memory:
numpy arrays above malloc's mmap threshold go back when freed, but glibc raises that
threshold (up to 32 MB) each time such an array is freed, so later arrays of that size come
from the heap and stay resident after they are freed. The driver and the workers release
between passes (`pipeline.runtime.memory`); a stage about to make the pass's largest
allocations releases before them (the token index, `transforms.vocab.subword_refine`).
"""

import ctypes
import gc
from typing import Any, Optional

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
