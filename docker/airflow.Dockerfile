# Airflow 3 with rabbit-sizing installed as a package (every top-level package pyproject.toml lists: a new one is
# installed with the others, tests/test_compose_stack.py checks the list against the repository), Terraform from
# HashiCorp's release archive (checked against its SHA-256), Java for spark-submit, RabbitMQ for the local target.
# Building needs the internet (PyPI, Debian, releases.hashicorp.com); running does not.
#   docker compose build airflow-init      (the other Airflow services share the image)
FROM apache/airflow:3.3.2-python3.11

USER root
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless rabbitmq-server curl ca-certificates \
    && rm -rf /var/lib/apt/lists/*

# Terraform: the release archive, verified against the SHA-256 HashiCorp publishes in terraform_<v>_SHA256SUMS.
# The aws stack needs >= 1.10 (its S3 backend's use_lockfile).
ARG TERRAFORM_VERSION=1.11.4
ARG TERRAFORM_SHA256_AMD64=1ce994251c00281d6845f0f268637ba50c0005657eb3cf096b92f753b42ef4dc
ARG TERRAFORM_SHA256_ARM64=a43d1d0da9b9bab214a8305a39db0e40869572594ccf50c416a7756499143633
ARG TARGETARCH=amd64
RUN set -eu; \
    case "${TARGETARCH}" in \
      amd64) sum="${TERRAFORM_SHA256_AMD64}" ;; \
      arm64) sum="${TERRAFORM_SHA256_ARM64}" ;; \
      *) echo "no Terraform checksum for ${TARGETARCH}" >&2; exit 1 ;; \
    esac; \
    curl -fsSL -o /tmp/terraform.zip \
      "https://releases.hashicorp.com/terraform/${TERRAFORM_VERSION}/terraform_${TERRAFORM_VERSION}_linux_${TARGETARCH}.zip"; \
    echo "${sum}  /tmp/terraform.zip" | sha256sum -c -; \
    python -c "import zipfile; zipfile.ZipFile('/tmp/terraform.zip').extract('terraform', '/usr/local/bin')"; \
    chmod 0755 /usr/local/bin/terraform; rm /tmp/terraform.zip; terraform version

USER airflow
# Dependencies first (a layer that changes with the lock file only); pyspark after the Spark provider's
# pyspark-client, which overwrites files of it (STACK-NOTES).
COPY requirements/lock.txt /tmp/lock.txt
RUN pip install --no-cache-dir -r /tmp/lock.txt \
    && pip install --no-cache-dir --force-reinstall --no-deps "$(grep -E '^pyspark==' /tmp/lock.txt)"
# The project, as a package: the build context (.dockerignore keeps out what is not the project's), installed
# editable so that its data (campaigns, catalogs, terraform, gx suites, dags, plugins) stays beside the code.
COPY --chown=airflow . /opt/rabbit-sizing
RUN pip install --no-cache-dir --no-deps -e /opt/rabbit-sizing
WORKDIR /opt/rabbit-sizing
