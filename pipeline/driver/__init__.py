"""The job's orchestration: flags into a config, datasets, and the passes (prepare, vocab, encode) run in order.

May import pipeline.output, pipeline.runtime and transforms; nothing imports it but pipeline.datagen."""
