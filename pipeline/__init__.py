"""Datagen jobs: options, entry points, the multi-pass driver and the output layout.

Importing any of this package's modules first drops one log line of Beam's: importing
`apache_beam` imports its BigQuery client modules, which log "apitools not found, and
bigquery client libraries are not available ..." at WARNING on the root logger wherever
`apache-beam[gcp]` is not installed, in the driver and in every worker. The job reads no
BigQuery, so the line is noise on every run; the filter below drops that message only.
"""

import logging


class _NoApitoolsWarning(logging.Filter):
    def filter(self, record):
        return not str(record.msg).startswith("apitools not found")


logging.getLogger().addFilter(_NoApitoolsWarning())
