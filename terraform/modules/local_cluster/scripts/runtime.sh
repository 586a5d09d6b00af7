#!/bin/sh
# How one local node runs a RabbitMQ program: runtime.sh NODE_DIR PROGRAM [ARGS...]
#
# The one seam between the node lifecycle (node.sh, cluster.sh, the fault injector's start/stop/ctl commands) and
#   - the runtime the node runs on: RMQ_RUNTIME in NODE_DIR/node.env, `host` = the machine's own package
#     (Debian 12's rabbitmq-server, scripts in RMQ_BIN);
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

if [ "$program" = rabbitmq-server ] && [ -n "${ENVELOPE_PROCS:-}" ]; then
  # epmd is shared by every node of this runtime and outlives each: the first node to boot would start it inside
  # its own envelope (and keep that cgroup busy after the node is gone), so it is started outside first.
  case ${RMQ_RUNTIME:-host} in
  host) epmd -daemon ;;
  esac
  for procs in $ENVELOPE_PROCS; do
    echo $$ >"$procs" || { echo "runtime.sh: cannot enter $procs" >&2; exit 2; }
  done
fi

case ${RMQ_RUNTIME:-host} in
host) exec "${RMQ_BIN:-/usr/lib/rabbitmq/bin}/$program" "$@" ;;
*)
  echo "runtime.sh: unknown runtime '$RMQ_RUNTIME' in $node_dir/node.env" >&2
  exit 2
  ;;
esac
