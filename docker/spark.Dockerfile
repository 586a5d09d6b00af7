# Spark master and workers for docker-compose: pyspark's own launcher (spark-class), the driver's Python minor
# version (3.11: pyproject.toml's requires-python, the Airflow image's python3.11) and what the analysis imports on
# executors, at the lock file's versions (-c: every package, transitive ones too, as pinned there). The jobs' code
# comes with each job (--py-files); the object-store credentials too (spark.executorEnv.*, from the submitting task).
FROM python:3.11-slim-bookworm
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*
COPY requirements/lock.txt /tmp/lock.txt
# Executors get every adapter (spark_jobs.lib.submit.PACKAGES): the HTTP ones (airflowapi, httpprobe) import requests.
RUN pip install --no-cache-dir -c /tmp/lock.txt pyspark numpy pandas pyarrow boto3 pyyaml requests \
    && python -c "import sys; assert sys.version_info[:2] == (3, 11), sys.version"
ENV SPARK_HOME=/usr/local/lib/python3.11/site-packages/pyspark \
    PYSPARK_PYTHON=/usr/local/bin/python \
    SPARK_NO_DAEMONIZE=1
RUN useradd --create-home --uid 10002 spark && mkdir -p /opt/spark-work && chown spark /opt/spark-work
USER spark
WORKDIR /opt/spark-work
