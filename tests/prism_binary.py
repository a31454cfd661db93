"""Prism, Beam's Go portable runner, for the tests that run the job on it: built for this Beam
release by run_tests.sh (`go install ...@vBEAM_VERSION`) into the clusters' cache
(`CACHE/prism/vBEAM_VERSION/prism`), or where `PRISM_BINARY` says."""

import os

from clusters import BEAM_VERSION, CACHE, Unavailable

PRISM_PACKAGE = "github.com/apache/beam/sdks/v2/go/cmd/prism"


def prism_binary():
    """The Prism binary the tests run the job on: `PRISM_BINARY`, as run_tests.sh sets it
    after building it there (the build needs Go and the Go module proxy, and about 6 minutes
    once per machine), or its default place in the cache. Unavailable when it is not there."""
    path = os.environ.get("PRISM_BINARY") or os.path.join(
        CACHE, "prism", "v" + BEAM_VERSION, "prism")
    if not os.access(path, os.X_OK):
        raise Unavailable("no Prism binary at %s: run_tests.sh builds it with `GOBIN=%s go "
                          "install %s@v%s`" % (path, os.path.dirname(path), PRISM_PACKAGE,
                                                BEAM_VERSION))
    return path
