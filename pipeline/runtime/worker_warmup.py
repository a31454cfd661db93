"""Imported by the worker processes' fork server (`pipeline.runtime.local_worker_pool.PRELOAD`):
runs the compiled loops of the token index and of the encode pass's subword encoders once on tiny
inputs (and the sample's token counter's), so numba loads them (~0.3 s for the index's, ~0.02 s for the encoder's) in the
server, before it forks, instead of in every worker process during its first bundle."""

from transforms.codecs import subword_batch, subword_kernel, subword_learner, token_count_kernel

subword_learner.warm_up_index()
subword_batch.warm_up()
subword_kernel.warm_up()
token_count_kernel.warm_up()
