"""Tools for the output's consumers, apart from the job: `inspect` (a look at an output) and `reader` (tf.data input).

May import pipeline.output, pipeline.runtime and transforms; never the driver."""
