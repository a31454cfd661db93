"""Airflow DAG `t2t_datagen`: `python -m pipeline.datagen` once a day, into a dated directory.

Copy this file into Airflow's DAGs folder (Airflow 3; `pip install apache-airflow`, nothing
else). The task is a BashOperator: it needs no provider, its timeout sends SIGTERM to the
job's process group (the job stops cleanly: summary "interrupted", lock released, exit 143),
and it reads the job's output as it comes. See docs/operations.md, "Scheduling", for the
job's exit statuses and what a retry after each one does.

Every run writes `{output_dir}/{{ ds }}`: a rerun of a day whose output is complete is a
no-op (exit 0), a rerun whose inputs or flags changed since fails with one line (exit 2).
The params (trigger with a conf JSON to change them) default to the bundled sample:

  python        interpreter with the project installed (default: the project's .venv)
  train_source, train_target, dev_source, dev_target
                file patterns as the job takes them ("" leaves the dev split out)
  output_dir    a prefix; the run's logical date is appended
  extra_args    a list of further flags, one list item per argument (runner flags here)

Every param is shell-quoted into the command (the `sh` filter), so a conf cannot inject
shell. The task's schedule settings are read when the DAG is parsed, from the environment
(defaults in brackets): T2T_DATAGEN_HOME [the directory two levels above this file: the
project, when this file is used where it is shipped], T2T_DATAGEN_RETRIES [2],
T2T_DATAGEN_RETRY_DELAY_SECONDS [300: longer than the job's --lock_stale_seconds (120), so a
retry after a worker host was lost finds the dead run's lock stale and takes it over],
T2T_DATAGEN_TIMEOUT_SECONDS [7200].

`t2t_datagen_dataflow` (only when apache-airflow-providers-apache-beam imports, which needs
apache-airflow-providers-google too) is the same job through BeamRunPythonPipelineOperator,
for teams that run it on Dataflow; read its comment before using it.
"""

import datetime
import os
import shlex

from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG, Param

PROJECT_DIR = os.environ.get("T2T_DATAGEN_HOME") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(PROJECT_DIR, "sample_data", "enzh-mlqe-pe")


def _env_seconds(name, default):
    return datetime.timedelta(seconds=float(os.environ.get(name, default)))


DEFAULT_PARAMS = {
    "python": Param(os.path.join(PROJECT_DIR, ".venv", "bin", "python"), type="string",
                    minLength=1, description="interpreter with the project installed"),
    "train_source": Param(os.path.join(SAMPLE, "train.en"), type="string", minLength=1),
    "train_target": Param(os.path.join(SAMPLE, "train.zh"), type="string", minLength=1),
    "dev_source": Param(os.path.join(SAMPLE, "dev.en"), type="string",
                        description='"" for no dev split'),
    "dev_target": Param(os.path.join(SAMPLE, "dev.zh"), type="string"),
    "output_dir": Param(os.path.join(PROJECT_DIR, "local_output", "airflow"), type="string",
                        minLength=1, description="prefix; the logical date (ds) is appended"),
    "extra_args": Param(["--runner", "DirectRunner", "--direct_running_mode",
                         "multi_processing", "--direct_num_workers", "2"],
                        type="array", items={"type": "string"},
                        description="further flags of the job, one item per argument"),
}

# One argument per line; `sh` is shlex.quote. The job's progress and log go to stderr and
# its summary table (about 1 KB) to stdout; the BashOperator logs both as they come.
DATAGEN_COMMAND = """\
exec {{ params.python | sh }} -m pipeline.datagen \\
  --train_source {{ params.train_source | sh }} \\
  --train_target {{ params.train_target | sh }} \\
{%- if params.dev_source %}
  --dev_source {{ params.dev_source | sh }} \\
  --dev_target {{ params.dev_target | sh }} \\
{%- endif %}
  --output_dir {{ (params.output_dir.rstrip('/') ~ '/' ~ ds) | sh }}
{%- for arg in params.extra_args %} {{ arg | sh }}{% endfor %}
"""

DEFAULT_ARGS = {
    "retries": int(os.environ.get("T2T_DATAGEN_RETRIES", 2)),
    "retry_delay": _env_seconds("T2T_DATAGEN_RETRY_DELAY_SECONDS", 300),
    "execution_timeout": _env_seconds("T2T_DATAGEN_TIMEOUT_SECONDS", 7200),
}

with DAG(
    dag_id="t2t_datagen",
    description="Tensor2Tensor translation datagen (Apache Beam), one dated output per day",
    schedule="@daily",
    start_date=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    params=DEFAULT_PARAMS,
    user_defined_filters={"sh": shlex.quote},
    tags=["t2t-datagen"],
) as dag:
    BashOperator(
        task_id="datagen",
        bash_command=DATAGEN_COMMAND,
        # The job's own module comes from the project directory (and its installed deps from
        # params.python's environment); `exec` makes the job the shell's process, and both
        # are in the process group the timeout's SIGTERM goes to.
        cwd=PROJECT_DIR,
        # Exit 99 would make the task "skipped"; the job never exits 99, but any non-zero
        # status must fail the task.
        skip_on_exit_code=None,
    )


# -- the same job through the Apache Beam provider, for Dataflow -------------------------------
# BeamRunPythonPipelineOperator imports only with apache-airflow-providers-google installed
# (even for DirectRunner; 2.2 GB with Airflow). Caveats with provider 6.3.1 (docs/operations.md,
# "Scheduling"; the first two measured here, the third read from its source):
# - on execution_timeout it fails the task but does NOT stop the job: its on_kill cancels only
#   a Dataflow job it has seen. A local job runs on with its output directory's lock (a retry
#   meanwhile exits 2, "... is in use by run ...") and may complete the day unwatched.
# - its hook reads the job's stderr to the end before stdout; the job keeps stdout small
#   (< 4 KiB), so this cannot fill the stdout pipe and hang.
# - it stops following the process at the first "Created job with id" line (Beam's INFO log)
#   and waits for that Dataflow job, but the job submits one per pass. By default the job
#   holds Beam's logging back, so the hook follows the driver to its end instead (do not add
#   "log_level": "info" below); then it has seen no job either, and a timeout cancels nothing:
#   cancel the running pass's Dataflow job and stop the driver yourself.
try:
    from airflow.providers.apache.beam.operators.beam import BeamRunPythonPipelineOperator
except ImportError:  # provider (or the google provider it needs) not installed
    BeamRunPythonPipelineOperator = None

if BeamRunPythonPipelineOperator is not None:
    with DAG(
        dag_id="t2t_datagen_dataflow",
        description="t2t datagen on Dataflow via BeamRunPythonPipelineOperator",
        schedule="@daily",
        start_date=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc),
        catchup=False,
        max_active_runs=1,
        is_paused_upon_creation=True,  # placeholders below: fill them in first
        default_args=DEFAULT_ARGS,
        tags=["t2t-datagen"],
    ) as dataflow_dag:
        BeamRunPythonPipelineOperator(
            task_id="datagen",
            py_interpreter=os.path.join(PROJECT_DIR, ".venv", "bin", "python"),
            py_options=["-m"],
            py_file="pipeline.datagen",  # run as `python -m pipeline.datagen`
            runner="DataflowRunner",
            pipeline_options={  # passed as --key=value; the job accepts that form
                "train_source": "gs://BUCKET/corpus/train.en",
                "train_target": "gs://BUCKET/corpus/train.zh",
                "output_dir": "gs://BUCKET/t2t_data/translate_enzh_wmt8k/{{ ds }}",
                "project": "PROJECT",
                "region": "us-central1",
                "temp_location": "gs://BUCKET/tmp",
                "staging_location": "gs://BUCKET/staging",
                "setup_file": os.path.join(PROJECT_DIR, "setup.py"),
            },
        )
