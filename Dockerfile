# A custom Beam SDK container with this project installed, for runners whose workers cannot
# install it themselves (Flink/Spark with Docker environments, or Dataflow with
# --sdk_container_image instead of --setup_file). Build and push it where the cluster can pull:
#   docker build -t REGISTRY/t2t-beam-datagen:0.1.0 .
#   docker push REGISTRY/t2t-beam-datagen:0.1.0
# The base image's Beam and Python versions must match the submitting environment's.
FROM apache/beam_python3.11_sdk:2.77.0

WORKDIR /opt/t2t-beam-datagen
COPY setup.py README.md ./
COPY pipeline ./pipeline
COPY transforms ./transforms
RUN pip install --no-cache-dir . && python -c "import pipeline.datagen, transforms.encode_pairs"
# The entrypoint stays the base image's Beam SDK harness boot (/opt/apache/beam/boot).
