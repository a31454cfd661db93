#!/usr/bin/env bash
# Runs the whole datagen job on the sample corpus shipped in the repo, on this machine.
# Creates ./.venv and installs the project on first use. Extra arguments go to the job, e.g.
#   ./run_local.sh --overwrite --seed 7
# stdout gets only the job's final table (README); everything else goes to stderr.
set -euo pipefail
cd "$(dirname "$0")"

if [ ! -x .venv/bin/python ]; then
  echo "Creating virtualenv .venv and installing the project (first run only)..." >&2
  python3 -m venv .venv >&2
  .venv/bin/pip install --quiet --upgrade pip >&2
fi
# Installed? (looked up, not imported: importing TensorFlow alone takes seconds)
if ! .venv/bin/python -c "
import importlib.metadata, importlib.util, sys
importlib.metadata.version('t2t-beam-datagen')
sys.exit(any(importlib.util.find_spec(m) is None for m in
             ('apache_beam', 'tensorflow', 'google_crc32c', 'numba', 'pydivsufsort', 'regex',
              'sentencepiece')))
" >/dev/null 2>&1; then
  .venv/bin/pip install --quiet -e . >&2
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
