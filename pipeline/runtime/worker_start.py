"""The first module the worker processes' fork server imports (`local_worker_pool.PRELOAD`):
its import is the fork server's console set-up (`console.set_up`), before the server imports
Beam.

A fork server runs none of the project's code but the imports it is told to preload, so this
module is the one whose import acts, and only the fork server imports it. The server is a
fresh interpreter: without this, its import of Beam would print "apitools not found ..." to
the job's stderr; the processes forked from it inherit the filter and the environment.
"""

from pipeline.runtime import console

console.set_up()
