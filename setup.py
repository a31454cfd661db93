"""Package for the Beam datagen job. Works as Beam's `--setup_file` so remote workers
(Dataflow, Flink, Spark) install the `pipeline` and `transforms` packages and their
runtime requirements."""

import setuptools

REQUIRED = [
    # LanguageIDFilter's other id_methods (transforms/cleaning/lid_methods.py): CLD2, lingua
    # (OpusFilter 3.3.1's own lower bound) and fastText (the user's model file).
    "pycld2>=0.41",
    "lingua-language-detector>=2.1.1",
    "fasttext>=0.9.2",
    "apache-beam>=2.77,<3",
    "google-crc32c>=1.5",
    # Object stores (transforms/storage/object_stores.py): the lease's conditional writes, 0-byte
    # objects and reused clients on s3:// and gs://; the same clients Beam's own S3 and GCS
    # file systems use (apache-beam[aws], apache-beam[gcp]).
    "boto3>=1.35,<2",
    "botocore>=1.35,<2",
    # boto3's managed transfer, whose copy fails with its own S3CopyFailedError (the commit's
    # multipart copy of a shard over S3's 5 GB single-copy limit).
    "s3transfer>=0.10,<1",
    "google-cloud-storage>=2.18.2,<4",
    "google-auth>=2,<3",
    "google-api-core>=2,<3",
    # The job's local worker pool (pipeline/runtime/local_worker_pool.py) serves Beam's worker
    # pool API; Beam itself depends on grpcio, at versions it accepts.
    "grpcio>=1.33.1,<2",
    # The subword learner's token index: suffix array (pydivsufsort) and compiled loops (numba);
    # the byte-level BPE learner's merge loop (numba).
    "numpy>=1.24",
    "numba>=0.59",
    "pydivsufsort>=0.0.14",
    # tf.train.Example built without TensorFlow (transforms/formats/example_proto.py):
    # message_factory.GetMessageClass.
    "protobuf>=4.22",
    # GPT-2's pre-tokenizer pattern (byte-level BPE) needs \p{..} classes.
    "regex>=2023.0",
    # Checked decompression of .zst inputs (transforms/formats/checked_decompress.py); Beam's own
    # dependency, at the versions it accepts.
    "zstandard>=0.18,<1",
    # Corpus cleaning (transforms/cleaning): the --filters YAML file; LangidFilter's model,
    # the py3langid line OpusFilter 3.3.1 runs with (0.4 ships another model and API);
    # one BLAS thread per worker while it classifies (threadpoolctl).
    "PyYAML>=5.4",
    "py3langid>=0.3,<0.4",
    "threadpoolctl>=3",
    # --vocab_type sentencepiece: SentencePiece's own trainer and processor
    # (transforms/codecs/sentencepiece_model.py); its generated sentencepiece_model_pb2 is
    # never imported (it needs protobuf >= 7).
    "sentencepiece>=0.2,<0.3",
    # --runner DaskRunner (pipeline/runtime/dask_runner.py): Beam's Dask runner, at the versions
    # apache-beam[dask] asks for; a cluster's workers get them with the project. cloudpickle
    # (distributed's own): the job's check of the workers is shipped by value
    # (pipeline/runtime/dask_session.py).
    "dask>=2024.4.2",
    "distributed>=2024.4.2",
    "cloudpickle>=3",
    # --output_format array_record / parquet (transforms/shards/record_formats.py): ArrayRecord's
    # writer and pyarrow's Parquet writer, so a plain install writes every format.
    "array-record>=0.8",
    "pyarrow>=17",
    # The ArrayRecord reader without TensorFlow (pipeline/tools/batches.py): Grain.
    "grain>=0.2",
    "tensorflow-cpu>=2.16; platform_machine == 'x86_64'",
    "tensorflow>=2.16; platform_machine != 'x86_64'",
]

setuptools.setup(
    name="t2t-beam-datagen",
    version="0.1.0",
    description="Tensor2Tensor-compatible translation datagen (subword vocab, encoded, "
                "sharded, shuffled TFRecords) on Apache Beam",
    packages=setuptools.find_packages(include=["pipeline", "pipeline.*", "transforms", "transforms.*"]),
    # The packages sit at the top of the checkout, said plainly: `pip install -e .` then adds
    # the checkout to sys.path (setuptools' simple editable install) instead of printing its
    # "Editable installation ... be careful with folders" warning block.
    package_dir={"": "."},
    # The tokenizer's stored table of alphanumeric code-point ranges.
    package_data={"transforms.codecs": ["alnum_ranges.json"]},
    python_requires=">=3.10",
    install_requires=REQUIRED,
    extras_require={
        # Submitting to Dataflow: the GCP I/O and runner, and `build` for --setup_file sdists.
        "dataflow": ["apache-beam[gcp]>=2.77,<3", "build"],
        "test": ["pytest>=8", "hypothesis>=6.100", "mypy>=1.10"],
        # Loading Parquet outputs with Hugging Face datasets (pipeline/tools/batches.py's
        # dataset_batches takes a loaded dataset; the module itself does not import it).
        "hf": ["datasets>=3"],
    },
)
