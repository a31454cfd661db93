"""The job's orchestration: flags into a config, datasets, and the passes (prepare, vocab, encode) run in order.

Nothing imports it but pipeline.datagen.

May import: pipeline.output, pipeline.runtime, transforms."""
