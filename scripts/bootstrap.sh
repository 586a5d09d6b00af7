#!/usr/bin/env bash
# Installs everything rabbit-sizing needs on a fresh Debian 12 machine. Idempotent: a rerun only
# does what is missing. System packages via apt-get, Python packages via uv from requirements/lock.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

# Airflow runs on SQLite locally; postgresql (metadata DB) and docker-compose (validates docker-compose.yaml) are
# for the multi-worker tests (tests/test_celery_e2e.py, tests/test_compose_stack.py). debootstrap builds the RabbitMQ
# 4.0 runtime's root (scripts/rootfs.sh), on first use only: not here. nftables (the `nft` program; the kernel has
# the support) filters inside the nodes' network namespaces (adapters/netns.py).
APT_PACKAGES=(rabbitmq-server erlang-base chromium chromium-driver curl procps postgresql docker-compose debootstrap nftables)
VENV=${SIZING_VENV:-.venv}
log() { printf '[bootstrap] %s\n' "$*"; }

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  log "apt-get install ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's package would start a broker as a service where systemd runs; every node here is ours.
command -v terraform >/dev/null || { log "terraform is not on PATH (it ships with this machine kind)"; exit 1; }

command -v uv >/dev/null || { log "pip install uv"; python3 -m pip install -q uv; }
stamp="$VENV/.lock-$(sha256sum requirements/lock.txt | cut -c1-16)"
if [ ! -e "$stamp" ]; then
  log "creating $VENV from requirements/lock.txt"
  [ -x "$VENV/bin/python" ] || uv venv -q "$VENV" --python 3.11
  VIRTUAL_ENV="$VENV" uv pip install -q -r requirements/lock.txt
  # The Spark provider pulls pyspark-client, which overwrites files of pyspark: put pyspark's back. Uninstall, then
  # install, not --reinstall: --reinstall implies --refresh, which builds pyspark's sdist once more. uv's cache kept
  # every such build: 58 GB of them filled this machine's disk and failed CI.
  VIRTUAL_ENV="$VENV" uv pip uninstall -q pyspark
  VIRTUAL_ENV="$VENV" uv pip install -q --no-deps "$(grep -E '^pyspark==' requirements/lock.txt)"
  # The registry this machine kind reaches answers uv's revalidation of pyspark's sdist as modified: every new venv
  # downloads and builds it again (measured with `uv pip install -v`) and the cache keeps each copy, ~1.9 GB a venv.
  # Prune what no venv install can reach any more.
  uv cache prune -q || log "uv cache prune failed: uv's cache keeps old pyspark builds"
  rm -f "$VENV"/.lock-* "$VENV/spark-classes.jsa" "$VENV/.bytecode" && touch "$stamp"
fi
# uv installs no bytecode, and this machine kind sets PYTHONDONTWRITEBYTECODE=1: without this step every process
# (each Airflow task, Spark Python worker and GX gate) compiles again every module it imports.
if [ ! -e "$VENV/.bytecode" ]; then
  log "compiling the venv's modules to bytecode (once, about a minute)"
  "$VENV/bin/python" -m compileall -q -j 0 "$VENV/lib" >/dev/null 2>&1 || true  # a few test templates do not parse
  touch "$VENV/.bytecode"
fi
# The project itself, editable: `sizing` becomes a command ($VENV/bin/sizing); `python -m app.cli` keeps working.
venv_python="$(cd "$VENV" && pwd)/bin/python"  # from another directory: what a new shell's `sizing` imports
if [ ! -x "$VENV/bin/sizing" ] || ! (cd / && "$venv_python" -c "import app.cli") 2>/dev/null; then
  log "installing the project into $VENV (the sizing command)"
  VIRTUAL_ENV="$VENV" uv pip install -q --no-deps -e .
fi
# The Spark driver's class-data-sharing archive (spark_jobs/lib/settings.py): valid only for these jars.
if [ ! -e "$VENV/spark-classes.jsa" ]; then
  log "building the Spark class archive (one small analysis run, about a minute)"
  "$VENV/bin/python" -m spark_jobs.tools.classarchive || log "no class archive: Spark jobs start without it"
fi
log "ready: $("$VENV/bin/python" --version), $(terraform version | head -1), rabbitmq-server $(dpkg-query -W -f='${Version}' rabbitmq-server)"
