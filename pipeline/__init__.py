"""The job: `datagen` (the entry point), `driver` (its passes), `output` (the output transaction), `runtime`
(process machinery), and `tools` (inspect, reader) for the output's consumers. May import transforms.

Importing any of this package's modules first drops one log line of Beam's: importing
`apache_beam` imports its BigQuery client modules, which log "apitools not found, and
bigquery client libraries are not available ..." at WARNING on the root logger wherever
`apache-beam[gcp]` is not installed, in the driver and in every worker. The job reads no
BigQuery, so the line is noise on every run; the filter below drops that message only. It
also keeps gRPC's C core quiet below ERROR (see GRPC_VERBOSITY below).
"""

import logging
import os


class _NoApitoolsWarning(logging.Filter):
    def filter(self, record):
        return not str(record.msg).startswith("apitools not found")


logging.getLogger().addFilter(_NoApitoolsWarning())

# gRPC's C core (Beam's channels to its workers) prints its INFO lines to stderr when
# GRPC_VERBOSITY is unset (grpc >= 1.66 leaves absl's default), such as "Got goaway" when a
# worker channel closes at the end of a pass. Set before Beam imports grpc, in the driver and
# (inherited) in the worker processes; an explicit GRPC_VERBOSITY is kept.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
