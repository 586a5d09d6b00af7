# N RabbitMQ nodes, clustered, using only terraform_data + local-exec (no provider downloads): on 127.0.0.1, or with a
# network_slot each in its own network namespace at 198.18.<slot>.<n> (adapters/netns.py).
#
# Port block layout (node n = 1..10, b = port_base; sizing/resources/localports.py is its home, tests/test_terraform_hcl.py
# checks this copy):
#   b+0..b+9    AMQP          b+10..b+19  management   b+20..b+29  prometheus
#   b+30..b+39  Erlang distribution       b+40..b+49   rabbitmqctl/CLI distribution ports of this cluster

locals {
  cluster_dir = "${abspath(var.work_dir)}/${var.cluster_name}"
  home        = "${local.cluster_dir}/home" # holds .erlang.cookie, shared by the nodes and their CLI
  node_script = abspath("${path.module}/scripts/node.sh")
  cl_script   = abspath("${path.module}/scripts/cluster.sh")
  runtime     = abspath("${path.module}/scripts/runtime.sh") # how a node runs a RabbitMQ program (its runtime, its envelope)
  name_prefix = "rabbit-${var.port_base}-"
  ctl_ports   = { min = var.port_base + 40, max = var.port_base + 49 }
  # With a network slot, a node's host name is its namespace's (adapters/netns.py NodeNet), resolved by the hosts
  # file of every namespace of the cluster: short node names keep working, inside the cluster only.
  namespaced = var.network_slot > 0

  nodes = [
    for i in range(var.node_count) : {
      number          = i + 1
      name            = "${local.name_prefix}${i + 1}@${local.namespaced ? "rs-${var.network_slot}-${i + 1}" : "localhost"}"
      host            = local.namespaced ? "198.18.${var.network_slot}.${i + 1}" : "127.0.0.1"
      namespace       = local.namespaced ? "rs-${var.network_slot}-${i + 1}" : ""
      amqp_port       = var.port_base + i
      management_port = var.port_base + 10 + i
      prometheus_port = var.port_base + 20 + i
      dist_port       = var.port_base + 30 + i
      node_dir        = "${local.cluster_dir}/node-${i + 1}"
      volume_roles    = join(" ", var.volume_roles)
    }
  ]

  # Every listening port of the block, checked free before anything starts: "port=what" words (no spaces).
  port_checks = join(" ", flatten([
    for node in local.nodes : [
      "${node.amqp_port}=AMQP_of_node_${node.number}",
      "${node.management_port}=management_of_node_${node.number}",
      "${node.prometheus_port}=Prometheus_of_node_${node.number}",
      "${node.dist_port}=Erlang_distribution_of_node_${node.number}",
    ]
  ]))

  extra_conf = [for key in sort(keys(var.broker_config)) : "${key} = ${var.broker_config[key]}"]
  # Nodes 2..N boot after node 1 (the seed) runs, and join it during their first boot through classic_config
  # peer discovery; cluster.sh form falls back to stop_app/join_cluster/start_app for any that did not.
  seed_discovery = [
    "cluster_formation.peer_discovery_backend = classic_config",
    "cluster_formation.classic_config.nodes.1 = ${local.nodes[0].name}",
  ]
  # guest may log in only over the loopback, and a namespaced node's clients arrive from the bridge (198.18.0.1): the
  # bridge is attached to no interface and 198.18.0.0/15 is blackholed, so it is as private as the loopback.
  network_conf = local.namespaced ? ["loopback_users.guest = false"] : []
  node_conf = [
    for node in local.nodes : join("\n", concat(node.number == 1 ? [] : local.seed_discovery, local.network_conf, [
      "cluster_name = ${var.cluster_name}",
      "management.tcp.ip = ${node.host}",
      "management.tcp.port = ${node.management_port}",
      "prometheus.tcp.ip = ${node.host}",
      "prometheus.tcp.port = ${node.prometheus_port}",
      "log.console = false",
      "log.file.level = info",
    ], local.extra_conf))
  ]
}

resource "terraform_data" "cluster_dir" {
  input = {
    cluster_dir = local.cluster_dir
    script      = local.cl_script
    name_prefix = local.name_prefix
    python      = var.python
    rootfs      = var.runtime == "chroot" ? var.rootfs : ""
    net_slot    = var.network_slot
  }
  triggers_replace = [var.envelope, var.runtime, var.rootfs, var.network_slot, var.network_mbit]

  # With an envelope, init also makes the load generator's cgroup (adapters/envelope.py create-generator).
  provisioner "local-exec" {
    command = "sh '${self.input.script}' init '${self.input.cluster_dir}'"
    environment = {
      PORT_CHECKS  = local.port_checks, CLUSTER_NAME = var.cluster_name, NODE_ENVELOPE = var.envelope, SIZING_PYTHON = var.python
      NETWORK_SLOT = var.network_slot, NETWORK_NODES = var.node_count, NETWORK_MBIT = var.network_mbit == null ? "" : var.network_mbit
    }
  }

  # Runs after every node's own destroy: kills whatever VM of this cluster is still alive, removes every envelope
  # left (cgroups, mounts, loop devices, images) and all data.
  provisioner "local-exec" {
    when        = destroy
    command     = "sh '${self.input.script}' destroy '${self.input.cluster_dir}'"
    environment = { NODE_NAME_PREFIX = self.input.name_prefix, SIZING_PYTHON = try(self.input.python, "python3"), RMQ_ROOT = try(self.input.rootfs, ""), NETWORK_SLOT = try(self.input.net_slot, 0) }
  }
}

resource "terraform_data" "node" {
  count      = var.node_count
  depends_on = [terraform_data.cluster_dir]

  input = {
    node_dir = local.nodes[count.index].node_dir
    script   = local.node_script
    rmq_bin  = var.rabbitmq_bin
    wait_s   = var.wait_seconds
    python   = var.python
  }
  triggers_replace = [local.nodes[count.index], local.node_conf[count.index], var.envelope, var.runtime, var.rootfs]

  provisioner "local-exec" {
    command = join(" && ", [for step in ["configure", "await-seed", "start"] : "sh '${self.input.script}' ${step} '${self.input.node_dir}'"])
    environment = {
      RMQ_BIN        = var.rabbitmq_bin
      RMQ_RUNTIME    = var.runtime
      RMQ_ROOT       = var.runtime == "chroot" ? var.rootfs : ""
      NODE_WAIT_S    = var.wait_seconds
      CLUSTER_HOME   = local.home
      NODE_NAME      = local.nodes[count.index].name
      NODE_HOST      = local.nodes[count.index].host
      NODE_NETNS     = local.nodes[count.index].namespace
      NODE_AMQP_PORT = local.nodes[count.index].amqp_port
      NODE_DIST_PORT = local.nodes[count.index].dist_port
      CTL_PORT_MIN   = local.ctl_ports.min
      CTL_PORT_MAX   = local.ctl_ports.max
      NODE_CONF      = local.node_conf[count.index]
      VOLUME_ROLES   = local.nodes[count.index].volume_roles
      SEED_NODE      = count.index == 0 ? "" : local.nodes[0].name
      SEED_PID_FILE  = count.index == 0 ? "" : "${local.nodes[0].node_dir}/rabbit.pid"
      NODE_ENVELOPE  = var.envelope
      SIZING_PYTHON  = var.python
    }
  }

  # Stops the node (SIGTERM, SIGKILL after wait_seconds), removes its envelope, its data and logs.
  provisioner "local-exec" {
    when        = destroy
    command     = "sh '${self.input.script}' destroy '${self.input.node_dir}'"
    environment = { RMQ_BIN = self.input.rmq_bin, NODE_WAIT_S = self.input.wait_s, SIZING_PYTHON = try(self.input.python, "python3") }
  }
}

resource "terraform_data" "cluster" {
  triggers_replace = [for node in terraform_data.node : node.id]

  provisioner "local-exec" {
    command = "sh '${local.cl_script}' form '${local.cluster_dir}'"
    environment = {
      CLUSTER_WAIT_S = var.wait_seconds
      SEED_NODE_DIR  = local.nodes[0].node_dir
      JOIN_NODE_DIRS = join(" ", [for node in slice(local.nodes, 1, var.node_count) : node.node_dir])
      NODE_COUNT     = var.node_count
    }
  }
}

# Separate from `cluster` because Terraform hides all output of a provisioner that sees a sensitive value.
resource "terraform_data" "user" {
  triggers_replace = [terraform_data.cluster.id, var.username, var.vhost, sha256(var.password)]

  provisioner "local-exec" {
    command = "sh '${local.cl_script}' user '${local.cluster_dir}'"
    environment = {
      SEED_NODE_DIR = local.nodes[0].node_dir
      RMQ_USER      = var.username
      RMQ_PASSWORD  = var.password
      RMQ_VHOST     = var.vhost
    }
  }
}
