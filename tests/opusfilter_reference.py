"""OpusFilter 3.3.1 itself as the oracle for the cleaning stage: which lines it drops.

OpusFilter pulls in ~600 MB (pandas, scikit-learn, lingua, ...) that the project must not
depend on, so it lives in a virtualenv of its own, created once per machine under
~/.cache/t2t-datagen-opusfilter (`T2T_OPUSFILTER_VENV` to put it elsewhere) from PyPI with
`opusfilter==3.3.1` and `py3langid<0.4` (OpusFilter 3.3.1 calls
`LanguageIdentifier.from_pickled_model`, which py3langid 0.4 removed). About a minute with a
warm pip cache. Where PyPI cannot be reached the tests skip with pip's reason, except under
CI=true, where a missing OpusFilter is a failure (as tests/end_to_end/test_airflow_dag.py does for
Airflow).

`opusfilter_drops` runs the real `opusfilter` command on real files with a YAML config of
independent steps, each reading the original input: one `remove_duplicates` step (optionally
one with `overlap`, the dev files) and one `filter` step per filter list. A step writes the
lines it keeps, in order, so the kept line numbers are recovered by matching its output
against the input in order (earliest match first). That is exact here: `remove_duplicates`
writes lines as read and drops only later copies of a kept key; the `filter` step writes
right-stripped lines and decides equal right-stripped pairs alike. Dropped = all - kept.
OpenBLAS runs on one thread, as the job's LangidFilter does (`transforms/cleaning/langid.py`).
"""

import json
import os
import subprocess
import time

import yaml

from cached_venvs import cache_dir, installed_venv

OPUSFILTER_VERSION = "3.3.1"
OPUSFILTER_VENV = cache_dir("opusfilter", "opusfilter", OPUSFILTER_VERSION)

# A chain of OpusFilter's filters as a user's config would list it: lengths, their ratio,
# the language, HTML tags, numerals (the cleaning job's and the parity tests' chain).
FILTER_CHAIN = [
    {"LengthFilter": {"unit": ["word", "char"], "min_length": 1, "max_length": [50, 90]}},
    {"LengthRatioFilter": {"unit": ["word", "char"], "threshold": 4}},
    {"LangidFilter": {"languages": ["en", "zh"]}},
    {"HtmlTagFilter": {}},
    {"NonZeroNumeralsFilter": {}},
]


def install_opusfilter():
    """bin/opusfilter of the cached virtualenv (OpusFilter 3.3.1 runs only with py3langid
    < 0.4), created on first use."""
    venv = installed_venv(OPUSFILTER_VENV, ["opusfilter==" + OPUSFILTER_VERSION,
                                            "py3langid<0.4"], "OpusFilter")
    return os.path.join(venv, "bin", "opusfilter")


# LanguageIDFilter's other id_methods need these in OpusFilter's venv (lingua comes with it).
LID_EXTRAS = ["pycld2", "fasttext"]


def install_lid_extras():
    """pycld2 and fastText installed into OpusFilter's cached virtualenv, on first use, under
    the venv's lock (another test run may be installing)."""
    import fcntl
    from cached_venvs import unavailable
    python = os.path.join(install_opusfilter().rsplit(os.sep, 2)[0], "bin", "python")
    check = [python, "-c", "import pycld2, fasttext"]
    if subprocess.run(check, capture_output=True).returncode == 0:
        return
    with open(OPUSFILTER_VENV + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if subprocess.run(check, capture_output=True).returncode == 0:
            return
        run = subprocess.run([python, "-m", "pip", "install", "--quiet", *LID_EXTRAS],
                             capture_output=True, text=True, timeout=1200)
        if run.returncode:
            unavailable("OpusFilter's %s" % " ".join(LID_EXTRAS),
                        "could not install %s: %s" % (" ".join(LID_EXTRAS),
                                                       " ".join(run.stderr.split()[-40:])))


def opusfilter_python():
    """The virtualenv's python (OpusFilter and its py3langid importable)."""
    install_opusfilter()
    return os.path.join(OPUSFILTER_VENV, "bin", "python")


def _read_lines(path, keep_ends):
    """Lines as OpusFilter's text-mode reader gives them (universal newlines)."""
    with open(path, encoding="utf-8") as f:
        return [line if keep_ends else line.rstrip() for line in f]


def kept_numbers(inputs, outputs, keep_ends):
    """1-based numbers of the input pairs a step wrote to `outputs`, matched in order."""
    pairs = list(zip(*(_read_lines(p, keep_ends) for p in inputs)))
    kept_pairs = list(zip(*(_read_lines(p, keep_ends) for p in outputs)))
    kept, at = [], 0
    for pair in kept_pairs:
        while pairs[at] != pair:
            at += 1
        kept.append(at + 1)
        at += 1
    return kept


# fasttext 0.9.3's `predict` of one line ends in `np.array(probs, copy=False)`, which NumPy 2
# (OpusFilter's venv has it) refuses: OpusFilter's fasttext method cannot run there as
# released. This runs bin/opusfilter with that one call made `np.asarray` (NumPy's own advice;
# the same numbers), OpusFilter itself unchanged.
FASTTEXT_NUMPY2 = """
import runpy, sys, numpy, fasttext.FastText as ft
class _NumPy:
    def __getattr__(self, name):
        return getattr(numpy, name)
    @staticmethod
    def array(values, copy=True, **kwargs):
        return numpy.asarray(values, **kwargs) if copy is False else numpy.array(values, **kwargs)
ft.np = _NumPy()
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def opusfilter_drops(work_dir, source, target, filter_steps=None, dedups=None, overlap=None,
                     seconds=None, fasttext_numpy2=False):
    """Runs OpusFilter on the pair `source`/`target`; returns {step name: sorted dropped line
    numbers}. `filter_steps`: {name: OpusFilter filter list}; `dedups`: {name: the
    `remove_duplicates` parameters besides inputs and outputs};
    `overlap`: [dev source, dev target] for a `remove_duplicates` step with `overlap`
    ("overlap" in the result). `seconds`: a dict that gets the run's wall time.
    `fasttext_numpy2`: fastText's one-line predict made to run on NumPy 2 (FASTTEXT_NUMPY2)."""
    work_dir = str(work_dir)
    os.makedirs(work_dir, exist_ok=True)
    inputs = [os.path.abspath(source), os.path.abspath(target)]
    steps, outputs = [], {}

    def outs(name):
        outputs[name] = [os.path.join(work_dir, "%s.%d" % (name, i)) for i in (0, 1)]
        return outputs[name]

    for name, params in (dedups or {}).items():
        steps.append({"type": "remove_duplicates",
                      "parameters": dict(params, inputs=inputs, outputs=outs(name))})
    if overlap:
        steps.append({"type": "remove_duplicates",
                      "parameters": {"inputs": inputs, "outputs": outs("overlap"),
                                     "overlap": [os.path.abspath(p) for p in overlap]}})
    for name, filters in (filter_steps or {}).items():
        steps.append({"type": "filter", "parameters": {
            "inputs": inputs, "outputs": outs(name), "filters": filters}})
    config = os.path.join(work_dir, "opusfilter.yaml")
    with open(config, "w") as f:
        yaml.safe_dump({"common": {"output_directory": work_dir}, "steps": steps}, f)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)
    start = time.time()
    command = [install_opusfilter(), "--overwrite", config]
    if fasttext_numpy2:
        command = [opusfilter_python(), "-c", FASTTEXT_NUMPY2, command[0]] + command[1:]
    run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
    if seconds is not None:
        seconds["opusfilter"] = time.time() - start
    assert run.returncode == 0, run.stderr[-3000:]
    total = len(list(zip(*(_read_lines(p, True) for p in inputs))))
    result = {}
    for name, paths in outputs.items():
        kept = set(kept_numbers(inputs, paths, keep_ends=name == "overlap" or name in (
            dedups or {})))
        result[name] = sorted(set(range(1, total + 1)) - kept)
    with open(os.path.join(work_dir, "drops.json"), "w") as f:
        json.dump(result, f)
    return result
