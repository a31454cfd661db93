"""Freed heap pages that stay resident: what `malloc_trim` (transforms.storage.heap) hands back.

200k blocks of 1 KB, below malloc's mmap threshold, come from the heap; all but the last are
freed (the last keeps the heap's top in place, so nothing shrinks by itself), leaving ~200 MB
of free pages resident until something trims them. Used by the tests of the release between
passes and of the token index's release before its build."""

import contextlib
import ctypes
from typing import Iterator


@contextlib.contextmanager
def freed_heap_pages() -> Iterator[None]:
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    blocks = []
    for _ in range(200000):
        block = libc.malloc(1024)
        ctypes.memset(block, 1, 1024)
        blocks.append(block)
    for block in blocks[:-1]:
        libc.free(block)
    try:
        yield
    finally:
        libc.free(blocks[-1])
