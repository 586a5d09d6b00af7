# Airflow 3 with the project's pinned dependencies, dags/plugins mounted by docker-compose.
FROM apache/airflow:3.3.2-python3.11
USER root
RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jre-headless rabbitmq-server \
    && rm -rf /var/lib/apt/lists/*
USER airflow
COPY requirements/lock.txt /tmp/lock.txt
RUN pip install --no-cache-dir -r /tmp/lock.txt psycopg2-binary==2.9.10 \
    && pip install --no-cache-dir --force-reinstall --no-deps "$(grep -E '^pyspark==' /tmp/lock.txt)"
COPY --chown=airflow sizing /opt/rabbit-sizing/sizing
COPY --chown=airflow loadgen /opt/rabbit-sizing/loadgen
COPY --chown=airflow spark_jobs /opt/rabbit-sizing/spark_jobs
COPY --chown=airflow catalogs /opt/rabbit-sizing/catalogs
COPY --chown=airflow terraform /opt/rabbit-sizing/terraform
ENV PYTHONPATH=/opt/rabbit-sizing:/opt/airflow/plugins
