"""pipeline/runtime/memory.py: freed memory handed back between passes."""

import sys

import pytest

from transforms.storage.heap import release_free_memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_freed_heap_pages_go_back_to_the_system():
    """Many small blocks freed leave the heap's pages resident until malloc_trim."""
    import psutil
    from heap_holes import freed_heap_pages
    process = psutil.Process()
    with freed_heap_pages():
        before = process.memory_info().rss
        release_free_memory()
        after = process.memory_info().rss
    assert before - after > 100 * 2 ** 20



_PROBE = """
import ctypes, gc, json
from pipeline.runtime.memory import freeze_long_lived
from transforms.storage.heap import malloc_free_bytes, release_free_memory
facts = {"free_at_start": malloc_free_bytes(), "trimmed_at_start": release_free_memory()}
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
blocks = [libc.malloc(1024) for _ in range(100000)]
for block in blocks[:-1]:
    libc.free(block)
facts["free_after_100_mb"] = malloc_free_bytes()
facts["trimmed_after_100_mb"] = release_free_memory()
before = gc.get_freeze_count()
freeze_long_lived()
facts["frozen"] = gc.get_freeze_count() - before
print(json.dumps(facts))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallinfo2")
def test_the_heap_is_walked_only_when_enough_was_freed_and_modules_are_frozen():
    """A fresh process has little free in malloc: no malloc_trim; ~100 MB freed: trimmed.
    freeze_long_lived moves what lives now out of the collector's walks."""
    import json
    import subprocess

    from repo_paths import REPO_ROOT
    facts = json.loads(subprocess.run([sys.executable, "-c", _PROBE], cwd=REPO_ROOT,
                                      capture_output=True, text=True, check=True).stdout)
    if facts["free_at_start"] is None:
        pytest.skip("no mallinfo2 (glibc older than 2.33)")
    assert facts["free_at_start"] < 16 << 20 and facts["trimmed_at_start"] is False
    assert facts["free_after_100_mb"] > 90 << 20 and facts["trimmed_after_100_mb"] is True
    assert facts["frozen"] > 1000
