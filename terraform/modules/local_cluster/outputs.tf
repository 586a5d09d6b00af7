# `cluster` has exactly the shape of sizing.resources.cluster.ClusterInfo.from_dict.
output "cluster" {
  description = "The cluster in sizing.resources.cluster.ClusterInfo.from_dict's shape (target \"local\"; with each node's start, stop and rabbitmqctl commands)."
  depends_on  = [terraform_data.user]
  sensitive   = true
  value = {
    target       = "local"
    cluster_name = var.cluster_name
    username     = var.username
    password     = var.password
    vhost        = var.vhost
    cluster_dir  = local.cluster_dir
    envelope     = var.envelope == "" ? null : jsondecode(var.envelope)
    network      = local.namespaced ? { slot = var.network_slot, mbit = var.network_mbit } : null
    ctl_env = {
      HOME                       = local.home
      RABBITMQ_CTL_DIST_PORT_MIN = tostring(local.ctl_ports.min)
      RABBITMQ_CTL_DIST_PORT_MAX = tostring(local.ctl_ports.max)
    }
    nodes = [
      for node in local.nodes : {
        number          = node.number
        name            = node.name
        host            = node.host
        amqp_port       = node.amqp_port
        management_port = node.management_port
        prometheus_port = node.prometheus_port
        dist_port       = node.dist_port
        pid_file        = "${node.node_dir}/rabbit.pid"
        data_dir        = "${node.node_dir}/data"
        start_cmd       = ["/bin/sh", local.node_script, "start", node.node_dir]
        stop_cmd        = ["/bin/sh", local.node_script, "stop", node.node_dir]
        # Self-contained: runtime.sh runs rabbitmqctl in the node's runtime; node.env (read by rabbitmq-env) carries
        # HOME with the cookie and the CLI port range.
        ctl_cmd           = ["/bin/sh", local.runtime, node.node_dir, "rabbitmqctl", "-n", node.name]
        instance_id       = null
        management_scheme = "http"
      }
    ]
  }
}

output "amqp_uris" {
  description = "AMQP URI of each node, credentials included, in node order."
  sensitive   = true
  value       = [for node in local.nodes : "amqp://${urlencode(var.username)}:${urlencode(var.password)}@${node.host}:${node.amqp_port}/${urlencode(var.vhost)}"]
}

output "management_urls" {
  description = "Management API URL of each node, in node order."
  value       = [for node in local.nodes : "http://${node.host}:${node.management_port}"]
}

output "node_names" {
  description = "Erlang node name of each node (rabbit-{port_base}-{n}@localhost, or @rs-{slot}-{n} in a namespace), in node order."
  value       = [for node in local.nodes : node.name]
}
