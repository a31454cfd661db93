"""A Dask worker preload (`dask worker --preload dask_hold_point`) that holds a worker's task
at an exact point until the test lets it go: a pass is then still running, whatever the
load, while the test does something (adds a worker) and watches what happens.

Armed by a file `hold` in the directory `$T2T_DASK_HOLD_DIR`: the first shard fragment
write (`transforms.storage.file_io.create_atomically` of a `.frag` path: a task of the encode
pass) of a worker that has the preload takes the file (renames it to `hold.taken`) and waits
until a file `release` is there (or 600 s, a hang guard).
"""

import contextlib
import os
import time

HOLD_DIR = "T2T_DASK_HOLD_DIR"
HOLD_SECONDS = 600


def _held():
    directory = os.environ[HOLD_DIR]
    try:
        os.rename(os.path.join(directory, "hold"), os.path.join(directory, "hold.taken"))
    except FileNotFoundError:
        return
    deadline = time.time() + HOLD_SECONDS
    while not os.path.exists(os.path.join(directory, "release")) and time.time() < deadline:
        time.sleep(0.05)


def _patch_fragment_writes():
    from transforms.storage import file_io
    original = file_io.create_atomically

    @contextlib.contextmanager
    def create_atomically(path):
        if path.endswith(".frag"):
            _held()
        with original(path) as f:
            yield f

    file_io.create_atomically = create_atomically


def dask_setup(worker):
    if os.environ.get(HOLD_DIR):
        _patch_fragment_writes()


def arm(directory):
    open(os.path.join(str(directory), "hold"), "w").close()


def taken(directory):
    return os.path.exists(os.path.join(str(directory), "hold.taken"))


def release(directory):
    open(os.path.join(str(directory), "release"), "w").close()
