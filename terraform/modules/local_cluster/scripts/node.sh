#!/bin/sh
# One local RabbitMQ node: node.sh configure|await-seed|start|stop|kill|destroy NODE_DIR
# `configure` writes NODE_DIR from the variables Terraform passes (NODE_*, CLUSTER_HOME, ...); every other
# action reads NODE_DIR/node.env only, so the fault injector can run `node.sh start NODE_DIR` on its own.
# Every RabbitMQ program runs through runtime.sh (the node's runtime and envelope). On the host runtime it calls
# /usr/lib/rabbitmq/bin/* directly: Debian's /usr/sbin wrappers `su rabbitmq` when run as root, which drops our
# per-node environment (HOME with the cluster cookie, ports, data dirs).
set -eu
action=$1
node_dir=$2
RMQ_BIN=${RMQ_BIN:-/usr/lib/rabbitmq/bin}
WAIT_S=${NODE_WAIT_S:-90}
RUNTIME="$(cd "$(dirname "$0")" && pwd)/runtime.sh"  # absolute: a node starts in its own directory

# A RabbitMQ program for this node, in its runtime.
rmq() { sh "$RUNTIME" "$node_dir" "$@"; }

log() { echo "[node.sh $action $(basename "$node_dir")] $*" >&2; }

load_env() {
  [ -f "$node_dir/node.env" ] || { log "no $node_dir/node.env (node never configured?)"; exit 2; }
  set -a
  . "$node_dir/node.env"
  set +a
}

# The Erlang VM pid, if it is alive and really is this node (pid files outlive a SIGKILL).
live_pid() {
  [ -f "$RABBITMQ_PID_FILE" ] || return 1
  pid=$(cat "$RABBITMQ_PID_FILE" 2>/dev/null || true)
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  # 3.10 sets the node name at run time, so it is in the VM's environment, not on its command line.
  tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "RABBITMQ_NODENAME=$RABBITMQ_NODENAME" || return 1
  echo "$pid"
}

case $action in
configure)
  # Disk layout (sizing/resources/disks.py): every role with a volume of its own gets a directory of its own. On the scale
  # model (NODE_ENVELOPE, below) each is the mount point of the role's own loop-device volume, throttled to its
  # type's IOPS and MB/s, scaled (README "The local scale model"); with the scale model off they are directories
  # of the machine's one filesystem and disk types have no effect. data = RABBITMQ_MNESIA_BASE, logs = RABBITMQ_LOG_BASE
  # (node_dir/log either way); segments = RABBITMQ_QUORUM_DIR (ra's data_dir); wal = ra's wal_data_dir,
  # which 3.10 only takes from advanced.config (sizing/resources/disks.py says where each was found).
  mkdir -p "$node_dir/data" "$node_dir/log"
  quorum_env='' wal_term=''
  for role in ${VOLUME_ROLES:-data}; do
    case $role in
    data | logs) ;;
    segments) mkdir -p "$node_dir/segments"; quorum_env="RABBITMQ_QUORUM_DIR='$node_dir/segments'" ;;
    wal) mkdir -p "$node_dir/wal"; wal_term="{ra, [{wal_data_dir, \"$node_dir/wal\"}]}" ;;
    *) log "unknown volume role $role"; exit 2 ;;
    esac
  done
  printf '[%s].\n' "$wal_term" >"$node_dir/advanced.config"
  # The node listens on its own address only (127.0.0.1, or its namespace's: adapters/netns.py).
  node_host=${NODE_HOST:-127.0.0.1}
  erl_args="-kernel inet_dist_use_interface {$(echo "$node_host" | tr . ,)}"
  if [ -n "${NODE_ENVELOPE:-}" ]; then
    # The scale model (adapters/envelope.py): cgroups, and each role's volume mounted on its directory; it prints
    # the VM's flags in the envelope (sizing.resources.scalemodel.NodeEnvelope.erl_args).
    envelope_args=$("$SIZING_PYTHON" -m adapters.envelope create-node "$node_dir")
    erl_args="$erl_args $envelope_args"
  fi
  cat >"$node_dir/node.env" <<ENV
HOME='$CLUSTER_HOME'
RABBITMQ_CONF_ENV_FILE='$node_dir/node.env'
RABBITMQ_NODENAME='$NODE_NAME'
RABBITMQ_NODE_IP_ADDRESS=$node_host
RABBITMQ_NODE_PORT=$NODE_AMQP_PORT
RABBITMQ_DIST_PORT=$NODE_DIST_PORT
RABBITMQ_CTL_DIST_PORT_MIN=$CTL_PORT_MIN
RABBITMQ_CTL_DIST_PORT_MAX=$CTL_PORT_MAX
RABBITMQ_MNESIA_BASE='$node_dir/data'
RABBITMQ_LOG_BASE='$node_dir/log'
RABBITMQ_PID_FILE='$node_dir/rabbit.pid'
RABBITMQ_CONFIG_FILE='$node_dir/rabbitmq.conf'
RABBITMQ_ADVANCED_CONFIG_FILE='$node_dir/advanced.config'
$quorum_env
RABBITMQ_ENABLED_PLUGINS_FILE='$node_dir/enabled_plugins'
RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS='$erl_args'
SEED_NODE='${SEED_NODE:-}'
SEED_PID_FILE='${SEED_PID_FILE:-}'
RMQ_RUNTIME='${RMQ_RUNTIME:-host}'
RMQ_ROOT='${RMQ_ROOT:-}'
RMQ_BIN='$RMQ_BIN'
NODE_NETNS='${NODE_NETNS:-}'
ENV
  echo '[rabbitmq_management,rabbitmq_prometheus].' >"$node_dir/enabled_plugins"
  printf '%s\n' "$NODE_CONF" >"$node_dir/rabbitmq.conf"
  if [ -f "$node_dir/envelope.env" ]; then
    cat "$node_dir/envelope.env" >>"$node_dir/node.env"
    # The broker's total memory as the scale model computes it (sizing.resources.scalemodel.node_envelope), so that its high
    # watermark is the version's idle footprint plus its relative share of the scaled RAM.
    . "$node_dir/envelope.env"
    if [ -n "${ENVELOPE_BROKER_MEMORY_BYTES:-}" ]; then
      echo "total_memory_available_override_value = $ENVELOPE_BROKER_MEMORY_BYTES" >>"$node_dir/rabbitmq.conf"
    fi
  fi
  ;;
await-seed)
  # A joiner boots only once the seed runs: its peer discovery (classic_config, seed only) then joins the
  # seed during its first boot, with no stop_app/join_cluster/start_app cycle.
  load_env
  [ -n "${SEED_PID_FILE:-}" ] || exit 0
  if ! rmq rabbitmqctl -q -n "$SEED_NODE" wait --timeout "$WAIT_S" "$SEED_PID_FILE" >/dev/null; then
    log "seed $SEED_NODE not running after ${WAIT_S}s"
    exit 1
  fi
  ;;
start)
  load_env
  if pid=$(live_pid); then log "already running (pid $pid)"; exit 0; fi
  rm -f "$RABBITMQ_PID_FILE"
  # On the scale model a node boots outside its CPU quota, at the lowest CPU weight (envelope-boot.sh), and gets
  # its quota once it runs (envelope-run.sh): RabbitMQ's ~5 CPU-s boot would take 25 s at 0.2 cores, and a boot time
  # scaled like the steady state says nothing about a cloud VM's. Memory and disk envelopes hold throughout.
  [ ! -f "$node_dir/envelope-boot.sh" ] || . "$node_dir/envelope-boot.sh"
  # setsid + closed stdio: the node must outlive this script and must not hold Terraform's output pipes. Its
  # working directory is its own: Mnesia's and the VM's crash dumps land there (and go with destroy), not in the
  # directory Terraform runs in (a 9-node crash once left MnesiaCore files in the stack's source tree).
  (cd "$node_dir" && setsid sh "$RUNTIME" "$node_dir" rabbitmq-server >>"$RABBITMQ_LOG_BASE/stdout.log" 2>&1 </dev/null &)
  # `wait PIDFILE` returns once the pid file exists and the rabbit app has booted.
  booted=yes
  rmq rabbitmqctl -q -n "$RABBITMQ_NODENAME" wait --timeout "$WAIT_S" "$RABBITMQ_PID_FILE" >/dev/null || booted=no
  [ ! -f "$node_dir/envelope-run.sh" ] || . "$node_dir/envelope-run.sh"
  if [ "$booted" = no ]; then
    log "did not boot within ${WAIT_S}s; last log lines:"
    tail -n 20 "$RABBITMQ_LOG_BASE/stdout.log" "$RABBITMQ_LOG_BASE"/*.log >&2 2>/dev/null || true
    exit 1
  fi
  log "running (pid $(cat "$RABBITMQ_PID_FILE"))"
  ;;
stop)
  load_env
  pid=$(live_pid) || { log "not running"; exit 0; }
  # SIGTERM is RabbitMQ's graceful shutdown (same path as `rabbitmqctl stop`, without a CLI VM start-up).
  kill -TERM "$pid" 2>/dev/null || true
  waited=0
  while [ -e "/proc/$pid" ] && [ "$waited" -lt "$((WAIT_S * 10))" ]; do sleep 0.1; waited=$((waited + 1)); done
  if [ -e "/proc/$pid" ]; then
    log "no clean exit within ${WAIT_S}s; killing pid $pid"
    kill -9 "$pid" 2>/dev/null || true
  fi
  log "stopped"
  ;;
kill)
  load_env
  pid=$(live_pid) || { log "not running"; exit 0; }
  kill -9 "$pid"
  log "killed pid $pid"
  ;;
destroy)
  [ ! -f "$node_dir/node.env" ] || sh "$0" stop "$node_dir"
  # The envelope's volumes are unmounted (and their loop devices detached) before the directory goes; rm never
  # crosses into a filesystem still mounted below it.
  if [ -f "$node_dir/envelope.json" ]; then
    "${SIZING_PYTHON:-python3}" -m adapters.envelope destroy-node "$node_dir"
  fi
  rm -rf --one-file-system "$node_dir"
  ;;
*)
  echo "usage: node.sh configure|await-seed|start|stop|kill|destroy NODE_DIR" >&2
  exit 64
  ;;
esac
