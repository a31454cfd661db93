"""The entrypoint of the project's container image (the Dockerfile's ENTRYPOINT): one image
for Beam's portable workers and for a Dask cluster.

The image builds on Beam's SDK image, whose entrypoint is Beam's SDK harness boot
(`/opt/apache/beam/boot`): what Flink, Spark and Dataflow start with `--id=... 
--provision_endpoint=...`. The Dask Kubernetes operator starts the same image with its own
`args` only: `dask-worker --name $(DASK_WORKER_NAME) --dashboard --dashboard-address 8788`
for a worker (the scheduler's address in `DASK_SCHEDULER_ADDRESS`) and `dask-scheduler --host
0.0.0.0` for the scheduler, its default specs. Beam's boot cannot run those, and distributed no
longer installs `dask-worker` or `dask-scheduler` commands. So `dask-worker ARGS`,
`dask-scheduler ARGS` and `dask ARGS` run distributed's own command line (`python -m dask
worker ARGS`, ...) in this image's Python; anything else goes to Beam's boot, as before. The
image's workers warm up as they start (`DASK_DISTRIBUTED__WORKER__PRELOAD`, set by the
Dockerfile, preloads `pipeline.runtime.dask_worker`).
"""

import os
import sys
from typing import List, Sequence

BEAM_BOOT = "/opt/apache/beam/boot"  # Beam's SDK image's own entrypoint
DASK_COMMANDS = {"dask-worker": ["worker"], "dask-scheduler": ["scheduler"], "dask": []}


def command(args: Sequence[str], python: str = sys.executable,
            boot: str = BEAM_BOOT) -> List[str]:
    """The command the container runs for `args` (its `args`, or Docker's CMD)."""
    if args and args[0] in DASK_COMMANDS:
        return [python, "-m", "dask"] + DASK_COMMANDS[args[0]] + list(args[1:])
    return [boot] + list(args)


def main() -> None:
    argv = command(sys.argv[1:], boot=os.environ.get("BEAM_BOOT", BEAM_BOOT))
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
