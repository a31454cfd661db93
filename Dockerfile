# The project's image: Beam's Python SDK container with this project installed, for runners
# whose workers cannot install it themselves (Flink/Spark with Docker environments, Dataflow
# with --sdk_container_image instead of --setup_file), and for a Dask cluster's scheduler and
# workers (the Dask Kubernetes operator's specs run it with their own args). Build and push it
# where the cluster can pull:
#   docker build -t REGISTRY/t2t-beam-datagen:0.1.0 .
#   docker push REGISTRY/t2t-beam-datagen:0.1.0
# The base image's Beam and Python versions must match the submitting environment's: the job
# refuses Dask workers and a scheduler that run another Python, Beam or project version.
FROM apache/beam_python3.11_sdk:2.77.0

WORKDIR /opt/t2t-beam-datagen
COPY setup.py README.md ./
COPY pipeline ./pipeline
COPY transforms ./transforms
# What the driver runs, pinned: setup.py's ranges let pip pick newer Dask, distributed or
# cloudpickle than the driver's venv holds, and the scheduler unpickles the driver's task
# graphs (distributed warns of a mismatch; the job refuses another Beam). These are the
# versions setup.py resolved in the project's venv (tests/test_image.py holds them equal).
RUN pip install --no-cache-dir . "apache-beam==2.77.0" "dask==2026.8.0" \
        "distributed==2026.8.0" "cloudpickle==3.1.3" \
    && python -c "import pipeline.datagen, transforms.encode.encode_pairs"
# The compiled loops (numba, `cache=True`: the subword index and encoder), compiled once
# here, as the job's own warm-up compiles them, into a cache every container reads: a worker
# then loads them instead of compiling them as it starts. numba keys a cache entry by the CPU
# it was compiled for; `generic` makes the entries of the build machine those of any node.
ENV NUMBA_CACHE_DIR=/opt/numba-cache
ENV NUMBA_CPU_NAME=generic
RUN python -c "import pipeline.runtime.worker_warmup" && chmod -R a+rX /opt/numba-cache
# Dask workers of this image warm up (Beam, the project, compiled loops) as they start.
ENV DASK_DISTRIBUTED__WORKER__PRELOAD='["pipeline.runtime.dask_worker"]'
# `dask-worker ...`, `dask-scheduler ...` (the Dask Kubernetes operator's args) and `dask ...`
# run Dask; anything else runs Beam's SDK harness boot, the base image's entrypoint
# (pipeline/runtime/container_start.py).
ENTRYPOINT ["python", "-m", "pipeline.runtime.container_start"]
