"""The job: `datagen` (the entry point), `driver` (its passes), `output` (the output transaction), `runtime`
(process machinery), and `tools` (inspect, reader) for the output's consumers.

Importing it does nothing but import: the console settings a process of the job needs before
Beam's import (a logging filter, GRPC_VERBOSITY) are made by the entry points
(`pipeline.runtime.console.set_up`).

May import: transforms.
"""
