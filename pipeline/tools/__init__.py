"""Tools for the output's consumers, apart from the job: `inspect` (a look at an output) and `reader` (tf.data input).

Never the driver.

May import: pipeline.output, pipeline.runtime, transforms."""
