#!/usr/bin/env bash
# Runs the bundled sample (sample_data/enzh-mlqe-pe) on a local Flink 1.20 session cluster,
# started as the tests start it (tests/clusters.py): Flink's Java distribution from PyPI,
# installed once into ~/.cache/t2t-datagen-clusters; Beam's Flink job server jar fetched once
# with mvn into ~/.m2; a JobManager and 2 TaskManagers and Beam's worker pool on free
# loopback ports. Prints the Flink web UI's address while the job runs and stops everything
# it started at the end (also on Ctrl-C). Extra arguments go to the job, e.g. --vocab_type word.
# Exit status: the job's; 3 when Flink or the job server jar cannot be downloaded here.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-.venv/bin/python}
if [ ! -x "$PYTHON" ]; then
  python3 -m venv .venv && .venv/bin/pip install --quiet -e .
fi
OUTPUT_DIR=${OUTPUT_DIR:-local_output/flink}
S=sample_data/enzh-mlqe-pe
exec "$PYTHON" tests/clusters.py flink \
  --train_source "$S/train.en" --train_target "$S/train.zh" \
  --dev_source "$S/dev.en" --dev_target "$S/dev.zh" \
  --output_dir "$OUTPUT_DIR" "$@"
