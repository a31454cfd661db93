"""Imported by the worker processes' fork server (`pipeline.fork_server.PRELOAD`): runs the
token index's compiled loops once on a tiny index, so numba loads them (~0.2 s) in the server,
before it forks, instead of in every worker process during the first round."""

from transforms.codecs import subword_index

subword_index.warm_up()
