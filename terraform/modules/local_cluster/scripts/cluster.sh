#!/bin/sh
# A local RabbitMQ cluster as a whole: cluster.sh init|form|user|destroy CLUSTER_DIR
#   init     (env PORT_CHECKS, CLUSTER_NAME) fails with one line naming the port, its role, the cluster and
#            the holder when a port of the block is already listened on (before any node starts); then
#            CLUSTER_DIR/home/.erlang.cookie: every node and every rabbitmqctl of this cluster runs with
#            HOME=CLUSTER_DIR/home, so they share this cookie and nothing else does. With NETWORK_SLOT (1-254),
#            the nodes' namespaces (adapters/netns.py build-cluster; NETWORK_NODES, NETWORK_MBIT).
#   form     (env SEED_NODE_DIR, JOIN_NODE_DIRS, NODE_COUNT) makes sure every node is clustered with the
#            seed and waits (bounded) until NODE_COUNT nodes run.
#   user     (env SEED_NODE_DIR, RMQ_USER, RMQ_PASSWORD, RMQ_VHOST) creates the vhost and the user.
#   destroy  (env NODE_NAME_PREFIX, RMQ_ROOT, NETWORK_SLOT) kills any VM of this cluster still alive, removes its
#            namespaces (and every process left in them: epmd), CLUSTER_DIR (and its mount point in the chroot
#            runtime's root).
set -eu
action=$1
cluster_dir=$2
WAIT_S=${CLUSTER_WAIT_S:-90}

log() { echo "[cluster.sh $action $(basename "$cluster_dir")] $*" >&2; }

# rabbitmqctl against the node configured in NODE_DIR, in the node's runtime (runtime.sh; node.env carries HOME,
# node name, CLI ports).
ctl() (
  node_dir=$1
  shift
  sh "$(dirname "$0")/runtime.sh" "$node_dir" rabbitmqctl -q -n "$(node_name "$node_dir")" "$@"
)

node_name() (. "$1/node.env" && echo "$RABBITMQ_NODENAME")

# "pid N (command line)" of the process holding a listening socket on PORT, or "" if none listens.
# /proc/net/tcp{,6}: field 2 is local address:PORT in hex, field 4 the state (0A = LISTEN), field 10 the inode.
port_holder() (
  hex=$(printf '%04X' "$1")
  inode=$(awk -v suffix=":$hex" 'substr($2, length($2) - 4) == suffix && $4 == "0A" { print $10; exit }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null)
  [ -n "$inode" ] || exit 0
  for fd in /proc/[0-9]*/fd/*; do
    if [ "$(readlink "$fd" 2>/dev/null)" = "socket:[$inode]" ]; then
      pid=${fd#/proc/}
      pid=${pid%%/*}
      echo "pid $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-120 | sed 's/ *$//'))"
      exit 0
    fi
  done
  echo "a process this user cannot see"
)

case $action in
init)
  for check in ${PORT_CHECKS:-}; do
    port=${check%%=*}
    holder=$(port_holder "$port")
    if [ -n "$holder" ]; then
      echo "error: port $port ($(echo "${check#*=}" | tr _ ' ')) of cluster ${CLUSTER_NAME:-?} is in use by $holder; stop it or move this run's port block (SIZING_SLOT_OFFSET)" >&2
      exit 1
    fi
  done
  mkdir -p "$cluster_dir/home"
  cookie="$cluster_dir/home/.erlang.cookie"
  if [ ! -s "$cookie" ]; then
    (
      umask 077
      od -An -N20 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F >"$cookie"
    )
    chmod 400 "$cookie"
  fi
  # The private network: a namespace per node, before any node starts in it. Refused when the slot's namespaces
  # exist (another cluster's, or a crash's left for destroy or `python -m adapters.netns reclaim`).
  if [ "${NETWORK_SLOT:-0}" -gt 0 ]; then
    # recorded first: a crash mid-build leaves what `make stop` and the demo's start-up reclaim by it
    echo "$NETWORK_SLOT" >"$cluster_dir/network.slot"
    "$SIZING_PYTHON" -m adapters.netns build-cluster "$NETWORK_SLOT" "$NETWORK_NODES" ${NETWORK_MBIT:+--mbit "$NETWORK_MBIT"} >/dev/null
  fi
  # The scale model: the load generator's cgroup (its nodes' envelopes are made by node.sh configure).
  if [ -n "${NODE_ENVELOPE:-}" ]; then
    "$SIZING_PYTHON" -m adapters.envelope create-generator "$cluster_dir"
  fi
  ;;
form)
  seed=$(node_name "$SEED_NODE_DIR")
  # Joiners normally joined the seed during their first boot (peer discovery); a joiner that booted alone
  # anyway (e.g. discovery gave up) joins the classic way. One at a time: joins change the seed's schema.
  for node_dir in $JOIN_NODE_DIRS; do
    if ctl "$node_dir" cluster_status --formatter json | grep -q "\"$seed\""; then continue; fi
    log "$(node_name "$node_dir") is not clustered with $seed: stop_app / join_cluster / start_app"
    ctl "$node_dir" stop_app
    ctl "$node_dir" join_cluster "$seed"
    ctl "$node_dir" start_app
  done
  if ! ctl "$SEED_NODE_DIR" await_online_nodes "$NODE_COUNT" --timeout "$((WAIT_S * 1000))"; then
    log "fewer than $NODE_COUNT nodes running after ${WAIT_S}s:"
    ctl "$SEED_NODE_DIR" cluster_status >&2 || true
    exit 1
  fi
  log "$NODE_COUNT node(s) running"
  ;;
user)
  if [ "$RMQ_VHOST" != "/" ]; then
    ctl "$SEED_NODE_DIR" add_vhost "$RMQ_VHOST" 2>/dev/null || true
  fi
  if [ "$RMQ_USER" != "guest" ]; then
    ctl "$SEED_NODE_DIR" add_user "$RMQ_USER" "$RMQ_PASSWORD" >/dev/null 2>&1 ||
      ctl "$SEED_NODE_DIR" change_password "$RMQ_USER" "$RMQ_PASSWORD" >/dev/null
    ctl "$SEED_NODE_DIR" set_user_tags "$RMQ_USER" administrator >/dev/null
  fi
  ctl "$SEED_NODE_DIR" set_permissions -p "$RMQ_VHOST" "$RMQ_USER" '.*' '.*' '.*' >/dev/null
  ;;
destroy)
  # Leftovers: any Erlang VM whose environment names a node of this cluster (3.10 keeps the node name
  # out of the command line), e.g. a node restarted by the fault injector after Terraform's stop.
  for env_file in /proc/[0-9]*/environ; do
    pid=${env_file#/proc/}
    pid=${pid%/environ}
    [ "$pid" != "$$" ] || continue
    if { tr '\0' '\n' <"$env_file"; } 2>/dev/null | grep -q "^RABBITMQ_NODENAME=${NODE_NAME_PREFIX}[0-9]*@"; then
      case $(cat "/proc/$pid/comm" 2>/dev/null) in
      beam.smp)
        log "killing leftover VM pid $pid"
        kill -9 "$pid" 2>/dev/null || true
        ;;
      esac
    fi
  done
  if [ "${NETWORK_SLOT:-0}" -gt 0 ]; then
    "${SIZING_PYTHON:-python3}" -m adapters.netns teardown "$NETWORK_SLOT" >/dev/null
  fi
  # Whatever envelope is left (a node whose destroy failed, the load generator's cgroup): removed before the data.
  if [ -f "$cluster_dir/envelope.json" ] || ls "$cluster_dir"/node-*/envelope.json >/dev/null 2>&1; then
    "${SIZING_PYTHON:-python3}" -m adapters.envelope destroy-cluster "$cluster_dir"
  fi
  rm -rf --one-file-system "$cluster_dir"
  # The chroot runtime's mount point of this cluster in the shared root (runtime.sh; empty, its mounts gone with
  # the nodes' namespaces): removed with the empty parents runtime.sh made, never a directory the root was built
  # with (scripts/rootfs.sh lists them).
  if [ -n "${RMQ_ROOT:-}" ] && [ -f "$RMQ_ROOT/.rabbit-sizing-dirs" ]; then
    dir=$cluster_dir
    while [ "$dir" != / ] && ! grep -Fxq "$dir" "$RMQ_ROOT/.rabbit-sizing-dirs"; do
      rmdir "$RMQ_ROOT$dir" 2>/dev/null || break
      dir=$(dirname "$dir")
    done
  fi
  ;;
*)
  echo "usage: cluster.sh init|form|user|destroy CLUSTER_DIR" >&2
  exit 64
  ;;
esac
