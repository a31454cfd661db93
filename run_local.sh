#!/usr/bin/env bash
# Runs the whole datagen job on the sample corpus shipped in the repo, on this machine.
# Creates ./.venv and installs the project on first use. Extra arguments go to the job, e.g.
#   ./run_local.sh --overwrite --seed 7
# stdout gets only the job's final table (README); everything else goes to stderr.
set -euo pipefail
cd "$(dirname "$0")"

# The first run's set-up is minutes of pip: it says so first, then pip shows its progress.
FIRST_RUN="run_local.sh: first run: creating .venv and installing the project and its \
dependencies with pip (once: about 3 GB, TensorFlow alone 1.3 GB; about 9 minutes, a few \
with pip's cache warm); later runs start the job at once"
if [ ! -x .venv/bin/python ]; then
  echo "$FIRST_RUN" >&2
  python3 -m venv .venv >&2
  .venv/bin/pip install --upgrade pip >&2
fi
# Installed? (looked up, not imported: importing TensorFlow alone takes seconds)
if ! .venv/bin/python -c "
import importlib.metadata, importlib.util, sys
importlib.metadata.version('t2t-beam-datagen')
sys.exit(any(importlib.util.find_spec(m) is None for m in
             ('apache_beam', 'tensorflow', 'google_crc32c', 'numba', 'pydivsufsort', 'regex',
              'sentencepiece')))
" >/dev/null 2>&1; then
  echo "run_local.sh: installing the project into .venv with pip (once)" >&2
  .venv/bin/pip install -e . >&2
  echo "run_local.sh: installed; running the job" >&2
fi

OUT="${OUTPUT_DIR:-$PWD/local_output/translate_enzh_wmt8k}"
.venv/bin/python -m pipeline.datagen \
  --train_source sample_data/enzh-mlqe-pe/train.en \
  --train_target sample_data/enzh-mlqe-pe/train.zh \
  --dev_source sample_data/enzh-mlqe-pe/dev.en \
  --dev_target sample_data/enzh-mlqe-pe/dev.zh \
  --output_dir "$OUT" \
  --problem translate_enzh_wmt8k \
  --vocab_size 8192 \
  --runner DirectRunner --direct_running_mode multi_processing --direct_num_workers 2 \
  "$@"

echo "Records decoded back to text: .venv/bin/python -m pipeline.tools.inspect $OUT" >&2
