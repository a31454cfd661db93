"""pipeline/runtime/memory.py: freed memory handed back between passes."""

import sys

import pytest

from pipeline.runtime.memory import release_free_memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_freed_heap_pages_go_back_to_the_system():
    """Many small blocks freed leave the heap's pages resident until malloc_trim."""
    import ctypes

    import psutil
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    process = psutil.Process()
    blocks = []
    for _ in range(200000):  # 200k x 1 KB below the mmap threshold: heap pages
        block = libc.malloc(1024)
        ctypes.memset(block, 1, 1024)
        blocks.append(block)
    for block in blocks[:-1]:  # the last one keeps the heap's top in place
        libc.free(block)
    before = process.memory_info().rss
    release_free_memory()
    after = process.memory_info().rss
    libc.free(blocks[-1])
    assert before - after > 100 * 2 ** 20

