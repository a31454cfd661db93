"""Whether a job's command line alone says it will run in the driver: read before Beam's import.

The driver starts the worker processes' fork server before its own imports
(`local_worker_pool.start_early`), so both import Beam at once on two cores; a job whose input
is under `--in_process_below_mb` then runs its passes in the driver
(`runners.run_small_input_in_process`, decided once the fingerprint has listed the inputs),
and the server's imports (~1.8 s of CPU) were for nothing. `runs_in_driver` makes the same
decision early from what is cheap to know: local files named by the input flags. Only the
config's declarations are imported (no Beam): the flags are `InputConfig`'s input fields and
the limit is the declared default of `--in_process_below_mb` unless given.
"""

import argparse
import glob
import os

from transforms.contracts.config import InputConfig, JobConfig
from transforms.contracts.settings import INPUT, flag_fields


def runs_in_driver(argv: "list[str]") -> bool:
    """Whether a local look at `argv`'s input flags (`InputConfig`'s input fields) says the
    job will run in this process (`runners.run_small_input_in_process`): every pattern a
    local path, the files it matches under `--in_process_below_mb` in all. What it cannot
    tell (a corpora file, a store's path, a pattern matching nothing, a value it cannot
    read) says False: the fork server starts as ever, and a job that then runs here only
    wastes its imports; one found small here that is not starts the server when its pool
    does."""
    inputs = [flag for name, flag, declared in flag_fields(InputConfig)
              if declared.role == INPUT or name == "corpora"]  # (its inputs: in its file)
    limit = next(declared.default for _, flag, declared in flag_fields(JobConfig)
                 if flag == "in_process_below_mb")
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    for flag in inputs + ["in_process_below_mb"]:
        parser.add_argument("--" + flag)
    try:
        flags = vars(parser.parse_known_args(list(argv))[0])
        limit_mb = float(flags.pop("in_process_below_mb") or limit)
    except (argparse.ArgumentError, ValueError):
        return False
    if flags.pop("corpora") or limit_mb <= 0:
        return False
    total = 0
    for value in flags.values():
        for pattern in (p.strip() for p in (value or "").split(",") if p.strip()):
            files = [] if "://" in pattern else glob.glob(pattern)
            if not files:
                return False
            total += sum(os.path.getsize(f) for f in files if os.path.isfile(f))
    return 0 < total < limit_mb * 1e6
