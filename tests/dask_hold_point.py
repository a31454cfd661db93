"""A Dask worker preload (`dask worker --preload dask_hold_point`) that holds a worker's task
at an exact point until the test lets it go: a pass is then still running, whatever the
load, while the test does something (adds a worker) and watches what happens.

Armed by a file `hold` in the directory `$T2T_DASK_HOLD_DIR`: the first set-up of the encode
DoFn (`_EncodeChunkFn.setup`, in the first chunk task of the encode pass, before it encodes a
line) on a worker that has the preload takes the file (renames it to `hold.taken`) and waits
until a file `release` is there (or 600 s, a hang guard). Held there, a worker of one thread
runs no chunk task of the pass until the test lets it go, however fast it is: the hold was
first at the first fragment write, and beside a CPU hog a worker had run every chunk task
before that write came.
"""

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


def _patch_encode_setup():
    from transforms.encode.encode_pairs import _EncodeChunkFn
    original = _EncodeChunkFn.setup

    def setup(self):
        _held()
        original(self)

    _EncodeChunkFn.setup = setup


def dask_setup(worker):
    if os.environ.get(HOLD_DIR):
        _patch_encode_setup()


def arm(directory):
    open(os.path.join(str(directory), "hold"), "w").close()


def taken(directory):
    return os.path.exists(os.path.join(str(directory), "hold.taken"))


def release(directory):
    open(os.path.join(str(directory), "release"), "w").close()
