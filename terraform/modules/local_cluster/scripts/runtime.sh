#!/bin/sh
# How one local node runs a RabbitMQ program: runtime.sh NODE_DIR PROGRAM [ARGS...]
#
# The one seam between the node lifecycle (node.sh, cluster.sh, the fault injector's start/stop/ctl commands) and
#   - the runtime the node runs on: RMQ_RUNTIME in NODE_DIR/node.env, `host` = the machine's own package
#     (Debian 12's rabbitmq-server, scripts in RMQ_BIN); `chroot` = Debian 13's rabbitmq-server (4.0) in the root
#     filesystem RMQ_ROOT (scripts/rootfs.sh builds it), scripts at RMQ_BIN inside it;
#   - the network the node is on: with NODE_NETNS in node.env, every program of the node (its server, its epmd, the
#     CLI against it) runs in the node's network namespace (adapters/netns.py), whose hosts file names its cluster;
#   - the resource envelope the node's server runs in (the scale model): ENVELOPE_PROCS in node.env lists the
#     cgroup.procs files the server enters before it execs, so the VM and every process it starts are charged to
#     the node's cgroups from their first instruction. CLI programs (rabbitmqctl, ...) run outside the envelope:
#     they are the operator's tools, not the node.
# PROGRAM is a RabbitMQ script name (rabbitmq-server, rabbitmqctl, rabbitmq-diagnostics, ...); the exec keeps the pid.
set -eu
node_dir=$1
program=$2
shift 2
[ -f "$node_dir/node.env" ] || { echo "runtime.sh: no $node_dir/node.env (node never configured?)" >&2; exit 2; }
set -a
. "$node_dir/node.env"
set +a

# epmd outlives every node, so it is started before the node, outside whatever the node runs in: outside its
# envelope (it would keep the node's cgroup busy after the node is gone) and outside any mount namespace (a copy of
# the mounts would hold the node's volumes: `ip netns exec` and the chroot make one). On the private network it runs
# in the node's network namespace only (nsenter --net: the host's mounts), one epmd per node; on the loopback one
# epmd serves every node of the machine. The host's own epmd when there is one, so that none runs from the cached
# 4.0 root (removing or rebuilding the root would take the registrations of every node with it).
start_epmd() {
  if command -v epmd >/dev/null; then set -- epmd -daemon; else set -- chroot "${RMQ_ROOT:-}" /usr/bin/epmd -daemon; fi
  if [ -n "${NODE_NETNS:-}" ]; then nsenter --net="/run/netns/$NODE_NETNS" "$@"; else "$@"; fi
}

# What is done once per program, before the node's namespace is entered (the re-exec below runs this script again
# inside it, marked by RUNTIME_NODE_PREPARED):
# - epmd, before any program of a namespaced node, the CLI too: a joiner's `rabbitmqctl wait` runs before its server,
#   and an Erlang CLI finding no epmd starts one itself, inside its own mount namespace;
# - the envelope: before the chroot and before the namespace, the cgroup files are the host's (the root has no /sys,
#   and `ip netns exec` mounts the namespace's own sysfs over /sys), and the pid is the same after both.
if [ -z "${RUNTIME_NODE_PREPARED:-}" ]; then
  export RUNTIME_NODE_PREPARED=1
  if [ -n "${NODE_NETNS:-}" ] || { [ "$program" = rabbitmq-server ] && { [ -n "${ENVELOPE_PROCS:-}" ] ||
    [ "${RMQ_RUNTIME:-host}" = chroot ]; }; }; then
    start_epmd
  fi
  if [ "$program" = rabbitmq-server ] && [ -n "${ENVELOPE_PROCS:-}" ]; then
    for procs in $ENVELOPE_PROCS; do
      echo $$ >"$procs" || { echo "runtime.sh: cannot enter $procs" >&2; exit 2; }
    done
  fi
  if [ -n "${NODE_NETNS:-}" ]; then
    exec ip netns exec "$NODE_NETNS" /bin/sh "$0" "$node_dir" "$program" "$@"
  fi
fi

case ${RMQ_RUNTIME:-host} in
host) exec "${RMQ_BIN:-/usr/lib/rabbitmq/bin}/$program" "$@" ;;
chroot)
  root=${RMQ_ROOT:-}
  [ -f "$root/.rabbit-sizing-rootfs" ] || { echo "runtime.sh: RMQ_ROOT '$root' is not a built root (scripts/rootfs.sh)" >&2; exit 2; }
  # The cluster directory (HOME's parent: cookie, node dirs with data, logs, pid files, envelope volumes) appears
  # inside the root at its own path, so every path in node.env means the same inside and out and the shared,
  # cached root holds no cluster's files. The mounts (proc, the cluster directory) are made in a mount namespace
  # of this program's own: they exist only while a process of it runs and vanish with the last one, on a clean
  # stop, a SIGKILL or a crash alike; nothing is left for destroy to unmount and no other cluster sees them.
  cluster_dir=$(dirname "$HOME")
  mkdir -p "$root$cluster_dir"
  # The new namespace starts with a copy of every mount of the host, other clusters' envelope volumes too; a copy
  # would keep such a volume's loop device open after its own cluster unmounted it (propagation is private), until
  # this node stops. So every loop-backed mount outside this cluster and the root is dropped from the copy first.
  exec unshare --mount --propagation private -- /bin/sh -c '
    set -e
    findmnt --raw --noheadings --output TARGET,SOURCE | while read -r target source; do
      case $source in /dev/loop*) case $target in "$1"|"$1"/*|"$2"|"$2"/*) ;; *) umount --lazy "$target" || true ;; esac ;; esac
    done
    mount -t proc proc "$1/proc"
    mount --rbind "$2" "$1$2"
    # In a namespace of the private network, its hosts file (ip netns exec put it on /etc/hosts) names the cluster.
    if [ -n "${NODE_NETNS:-}" ]; then mount --bind /etc/hosts "$1/etc/hosts"; fi
    root=$1
    shift 2
    exec chroot "$root" "$@"' runtime-chroot "$root" "$cluster_dir" "${RMQ_BIN:-/usr/lib/rabbitmq/bin}/$program" "$@"
  ;;
*)
  echo "runtime.sh: unknown runtime '$RMQ_RUNTIME' in $node_dir/node.env" >&2
  exit 2
  ;;
esac
