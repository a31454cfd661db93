"""The fork server's imports follow the job's kind (`pipeline.runtime.worker_preload`)."""

import subprocess
import sys

import pytest

from pipeline.runtime import worker_preload
from transforms.codecs.kinds import CODEC_KINDS, DEFAULT_KIND


def test_without_a_command_line_every_kinds_modules_are_preloaded():
    everything = worker_preload.preload()
    assert everything[:len(worker_preload.COMMON)] == worker_preload.COMMON
    for kind in CODEC_KINDS:
        assert set(kind.worker_modules) <= set(everything), kind.name
    assert len(set(everything)) == len(everything)


@pytest.mark.parametrize("kind", CODEC_KINDS, ids=lambda kind: kind.name)
def test_a_job_preloads_its_own_kinds_modules_only(kind):
    for argv in (["--vocab_type", kind.name], ["--vocab_size", "300", "--vocab_type=" + kind.name]):
        assert worker_preload.preload(argv) == worker_preload.COMMON + kind.worker_modules
    others = {m for k in CODEC_KINDS if k is not kind for m in k.worker_modules}
    assert not others & set(worker_preload.preload(["--vocab_type", kind.name]))


@pytest.mark.parametrize("argv", [[], ["--vocab_type"], ["--vocab_type", "no_such_kind"]])
def test_a_kind_not_said_plainly_preloads_the_default_or_every_kind(argv):
    """No --vocab_type is the default kind; a flag the real parse will refuse (no value, an
    unknown kind) preloads every kind's modules: the job stops with that parse's message."""
    if argv:
        assert worker_preload.preload(argv) == worker_preload.preload()
    else:
        default = next(kind for kind in CODEC_KINDS if kind.name == DEFAULT_KIND)
        assert worker_preload.preload(argv) == worker_preload.COMMON + default.worker_modules


@pytest.mark.slow
def test_every_preloaded_module_imports_and_only_the_default_kind_loads_numba():
    """What the preload saves: a job of another kind than the default's never loads numba
    in the server (its workers never call the compiled loops)."""
    for kind in CODEC_KINDS:
        modules = worker_preload.preload(["--vocab_type", kind.name])
        loaded = subprocess.run(
            [sys.executable, "-c", "import importlib, sys\nfor m in sys.argv[1:]: "
             "importlib.import_module(m)\nprint('numba' in sys.modules)"] + list(modules),
            check=True, capture_output=True, text=True).stdout.split()[-1]
        assert loaded == str(kind.name == DEFAULT_KIND), kind.name
